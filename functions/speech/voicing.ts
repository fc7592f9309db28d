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

/** Computes the voicing of a mono 16-bit PCM WAV file, streaming it in chunks. */
export async function detectVoicing(wavFile: string): Promise<VoicingTrack> {
  const layout = await readWavLayout(wavFile);
  if (layout.channels !== 1 || layout.bitsPerSample !== 16) throw new Error('Voicing needs mono 16-bit PCM.');
  if (layout.dataBytes < 2) return { hopMs: HOP_MS, voiced: new Uint8Array(0), pitchHz: new Float32Array(0) };
  const hop = Math.round((layout.sampleRate * HOP_MS) / 1000);
  const minLag = Math.floor(layout.sampleRate / MAX_PITCH_HZ);
  const maxLag = Math.ceil(layout.sampleRate / MIN_PITCH_HZ);
  const span = maxLag; // samples correlated per lag
  const window = span + maxLag;

  const pitch: number[] = [];
  let pending = new Float64Array(0);
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
    const samples = new Float64Array(pending.length + usable / 2);
    samples.set(pending);
    for (let i = 0; i < usable / 2; i++) samples[pending.length + i] = chunk.readInt16LE(i * 2);

    let start = 0;
    for (; start + window <= samples.length; start += hop) {
      pitch.push(pitchOf(samples, start, span, minLag, maxLag, layout.sampleRate));
    }
    pending = samples.slice(start);
  }
  // The tail shorter than one analysis window is judged on what there is.
  for (let start = 0; start + hop <= pending.length; start += hop) {
    const lagLimit = Math.min(maxLag, Math.floor((pending.length - start) / 2));
    pitch.push(
      lagLimit > minLag ? pitchOf(pending, start, lagLimit, minLag, lagLimit, layout.sampleRate) : 0,
    );
  }
  return {
    hopMs: HOP_MS,
    voiced: Uint8Array.from(pitch, (hz) => (hz > 0 ? 1 : 0)),
    pitchHz: Float32Array.from(pitch),
  };
}

/** Correlation within this share of the best still counts: the shortest such period avoids octave errors. */
const OCTAVE_TOLERANCE = 0.9;

/** The frame's fundamental frequency in Hz, or 0 when it is silent or not periodic. */
function pitchOf(
  samples: Float64Array,
  start: number,
  span: number,
  minLag: number,
  maxLag: number,
  sampleRate: number,
): number {
  let energy = 0;
  for (let n = start; n < start + span; n++) energy += (samples[n] ?? 0) ** 2;
  if (Math.sqrt(energy / span) < MIN_RMS) return 0;

  const correlation = new Float64Array(maxLag + 1);
  let best = 0;
  // Energy of the lagged span, slid along by one sample per lag.
  let laggedEnergy = 0;
  for (let n = start + minLag; n < start + minLag + span; n++) laggedEnergy += (samples[n] ?? 0) ** 2;
  for (let lag = minLag; lag <= maxLag; lag++) {
    let product = 0;
    for (let n = start; n < start + span; n++) product += (samples[n] ?? 0) * (samples[n + lag] ?? 0);
    const value = product > 0 ? product / Math.sqrt(energy * laggedEnergy) : 0;
    correlation[lag] = value;
    if (value > best) best = value;
    laggedEnergy += (samples[start + lag + span] ?? 0) ** 2 - (samples[start + lag] ?? 0) ** 2;
  }
  if (best < VOICED_CORRELATION) return 0;
  for (let lag = minLag + 1; lag < maxLag; lag++) {
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
