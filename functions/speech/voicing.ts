import { createReadStream } from 'node:fs';
import { readWavLayout } from './wav.ts';

/**
 * A speech gate: speech has voiced (periodic) stretches, noise and silence do not. A recogniser
 * that hears only noise still emits words, so words with no voiced audio under them are dropped.
 * Voicing is the peak of the normalised autocorrelation over the pitch range of human voices.
 */

const HOP_MS = 10;
const MIN_PITCH_HZ = 50;
const MAX_PITCH_HZ = 500;
/** Peak correlation above which a frame is periodic; white noise stays near 0.2, voiced speech above 0.7. */
const VOICED_CORRELATION = 0.6;
/** Frames quieter than this (about -66 dBFS) are silence, whatever their shape. */
const MIN_RMS = 16;

export interface VoicingTrack {
  hopMs: number;
  /** 1 for each voiced hop. */
  voiced: Uint8Array;
  /** Fundamental frequency of each voiced hop in Hz, 0 where unvoiced. */
  pitchHz: Float32Array;
}

/**
 * Computes the voicing of a mono 16-bit PCM WAV file, streaming it in chunks.
 *
 * A frame correlates 20 ms (two hops, the longest period looked for) with itself shifted by every lag
 * of the pitch range. Each hop's products are computed once and serve the two frames that cover it,
 * and energies come from running sums of squares: half the work of correlating each frame on its own,
 * with the same result (16-bit samples make every sum an exact integer).
 */
export async function detectVoicing(wavFile: string): Promise<VoicingTrack> {
  const layout = await readWavLayout(wavFile);
  if (layout.channels !== 1 || layout.bitsPerSample !== 16) throw new Error('Voicing needs mono 16-bit PCM.');
  if (layout.dataBytes < 2) return { hopMs: HOP_MS, voiced: new Uint8Array(0), pitchHz: new Float32Array(0) };
  const hop = Math.round((layout.sampleRate * HOP_MS) / 1000);
  const lags = {
    min: Math.floor(layout.sampleRate / MAX_PITCH_HZ),
    max: Math.ceil(layout.sampleRate / MIN_PITCH_HZ),
  };
  const span = 2 * hop;
  const window = span + lags.max;

  const pitch: number[] = [];
  // `samples[0]` is the first sample of frame `pitch.length`; `squares[i]` sums the squares before i.
  let samples: Float64Array = new Float64Array(0);
  let squares: Float64Array = new Float64Array(1);
  // The products of the hop after the last frame's first, kept for the next frame.
  let kept: Float64Array | undefined;
  let leftoverByte: Buffer | undefined;
  const stream = createReadStream(wavFile, {
    start: layout.dataOffset,
    end: layout.dataOffset + layout.dataBytes - 1,
    highWaterMark: 1 << 16,
  });
  for await (const raw of stream as AsyncIterable<Buffer>) {
    const chunk = leftoverByte ? Buffer.concat([leftoverByte, raw]) : raw;
    const usable = chunk.length - (chunk.length % 2);
    leftoverByte = usable < chunk.length ? chunk.subarray(usable) : undefined;
    const grown = new Float64Array(samples.length + usable / 2);
    grown.set(samples);
    for (let i = 0; i < usable / 2; i++) grown[samples.length + i] = chunk.readInt16LE(i * 2);
    samples = grown;
    squares = runningSquares(samples);

    let start = 0;
    for (; start + window <= samples.length; start += hop) {
      const energy = sumBetween(squares, start, start + span);
      if (Math.sqrt(energy / span) < MIN_RMS) {
        pitch.push(0);
        kept = undefined;
        continue;
      }
      const first = kept ?? hopProducts(samples, start, hop, lags);
      const second = hopProducts(samples, start + hop, hop, lags);
      kept = second;
      const correlation = new Float64Array(lags.max + 1);
      for (let lag = lags.min; lag <= lags.max; lag++) {
        const product = (first[lag] ?? 0) + (second[lag] ?? 0);
        const lagged = sumBetween(squares, start + lag, start + lag + span);
        correlation[lag] = product > 0 ? product / Math.sqrt(energy * lagged) : 0;
      }
      pitch.push(pitchOf(correlation, lags, layout.sampleRate));
    }
    samples = samples.slice(start);
  }
  // The tail shorter than one analysis window is judged on what there is, each frame on its own.
  squares = runningSquares(samples);
  for (let start = 0; start + hop <= samples.length; start += hop) {
    const lagLimit = Math.min(lags.max, Math.floor((samples.length - start) / 2));
    if (lagLimit <= lags.min) {
      pitch.push(0);
      continue;
    }
    const energy = sumBetween(squares, start, start + lagLimit);
    if (Math.sqrt(energy / lagLimit) < MIN_RMS) {
      pitch.push(0);
      continue;
    }
    const correlation = new Float64Array(lagLimit + 1);
    for (let lag = lags.min; lag <= lagLimit; lag++) {
      let product = 0;
      for (let n = start; n < start + lagLimit; n++) product += (samples[n] ?? 0) * (samples[n + lag] ?? 0);
      const lagged = sumBetween(squares, start + lag, start + lag + lagLimit);
      correlation[lag] = product > 0 ? product / Math.sqrt(energy * lagged) : 0;
    }
    pitch.push(pitchOf(correlation, { min: lags.min, max: lagLimit }, layout.sampleRate));
  }
  return {
    hopMs: HOP_MS,
    voiced: Uint8Array.from(pitch, (hz) => (hz > 0 ? 1 : 0)),
    pitchHz: Float32Array.from(pitch),
  };
}

function runningSquares(samples: Float64Array): Float64Array {
  const sums = new Float64Array(samples.length + 1);
  for (let i = 0; i < samples.length; i++) sums[i + 1] = (sums[i] ?? 0) + (samples[i] ?? 0) ** 2;
  return sums;
}

function sumBetween(sums: Float64Array, from: number, to: number): number {
  return (sums[to] ?? 0) - (sums[from] ?? 0);
}

/** For each lag, the sum over one hop from `start` of each sample times the sample `lag` later. */
function hopProducts(
  samples: Float64Array,
  start: number,
  hop: number,
  lags: { min: number; max: number },
): Float64Array {
  const products = new Float64Array(lags.max + 1);
  for (let lag = lags.min; lag <= lags.max; lag++) {
    let product = 0;
    for (let n = start; n < start + hop; n++) product += (samples[n] ?? 0) * (samples[n + lag] ?? 0);
    products[lag] = product;
  }
  return products;
}

/** Correlation within this share of the best still counts: the shortest such period avoids octave errors. */
const OCTAVE_TOLERANCE = 0.9;

/** The fundamental frequency in Hz of a frame's normalised correlation by lag, or 0 when it is not periodic. */
function pitchOf(correlation: Float64Array, lags: { min: number; max: number }, sampleRate: number): number {
  let best = 0;
  for (let lag = lags.min; lag <= lags.max; lag++) best = Math.max(best, correlation[lag] ?? 0);
  if (best < VOICED_CORRELATION) return 0;
  for (let lag = lags.min + 1; lag < lags.max; lag++) {
    const value = correlation[lag] ?? 0;
    const isPeak = value >= (correlation[lag - 1] ?? 0) && value >= (correlation[lag + 1] ?? 0);
    if (isPeak && value >= OCTAVE_TOLERANCE * best) return sampleRate / lag;
  }
  return 0;
}

/** Milliseconds of voiced audio between two times. */
export function voicedMs(track: VoicingTrack, startMs: number, endMs: number): number {
  const first = Math.max(0, Math.floor(startMs / track.hopMs));
  const last = Math.min(track.voiced.length, Math.ceil(endMs / track.hopMs));
  let count = 0;
  for (let i = first; i < last; i++) count += track.voiced[i] ?? 0;
  return count * track.hopMs;
}

/** Voiced audio looked for around a word: short function words often sit between voiced neighbours. */
const WORD_CONTEXT_MS = 300;
const MIN_VOICED_MS = 30;

/** Drops words that have no voiced audio under or around them (noise heard as words). */
export function keepVoicedWords<T extends { startMs: number; endMs: number }>(
  words: T[],
  track: VoicingTrack,
): T[] {
  return words.filter(
    (word) => voicedMs(track, word.startMs - WORD_CONTEXT_MS, word.endMs + WORD_CONTEXT_MS) >= MIN_VOICED_MS,
  );
}
