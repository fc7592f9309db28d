import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { readSampleRange, readWavLayout } from './wav.ts';

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
  checkLayout(layout);
  if (layout.dataBytes < 2) return { hopMs: HOP_MS, voiced: new Uint8Array(0), pitchHz: new Float32Array(0) };
  const frames = frameShape(layout.sampleRate);
  const { hop, window } = frames;

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
      if (isSilent(squares, start, frames)) {
        pitch.push(0);
        kept = undefined;
        continue;
      }
      const first = kept ?? hopProducts(samples, start, frames);
      const second = hopProducts(samples, start + hop, frames);
      kept = second;
      pitch.push(fullFramePitch(squares, start, first, second, frames));
    }
    samples = samples.slice(start);
  }
  // The tail shorter than one analysis window is judged on what there is, each frame on its own.
  squares = runningSquares(samples);
  for (let start = 0; start + hop <= samples.length; start += hop)
    pitch.push(tailFramePitch(samples, squares, start, frames));
  return {
    hopMs: HOP_MS,
    voiced: Uint8Array.from(pitch, (hz) => (hz > 0 ? 1 : 0)),
    pitchHz: Float32Array.from(pitch),
  };
}

/**
 * The speech gate alone, as `keepVoicedWords(words, await detectVoicing(wavFile))` decides it, looking only
 * at the audio around each word and only until enough of it is voiced (for a real word, within its
 * first hops): what a worker runs when nothing else needs the whole track. A frame depends on its own
 * window of samples only, so each is judged exactly as in the track, and judged once.
 */
export async function keepVoicedWordsIn<T extends { startMs: number; endMs: number }>(
  wavFile: string,
  words: T[],
): Promise<T[]> {
  const layout = await readWavLayout(wavFile);
  checkLayout(layout);
  const frames = frameShape(layout.sampleRate);
  const { hop, window } = frames;
  const sampleCount = Math.floor(layout.dataBytes / 2);
  // As the track counts them: full frames while a whole window fits, then the tail's frames.
  const fullFrames = sampleCount >= window ? Math.floor((sampleCount - window) / hop) + 1 : 0;
  const frameCount = fullFrames + Math.floor((sampleCount - fullFrames * hop) / hop);
  const judged = new Map<number, boolean>();
  const file = await open(wavFile);
  try {
    const kept: T[] = [];
    for (const word of words) {
      const { first, last } = gateFrames(word, frameCount);
      if (last <= first) continue;
      // Every frame of the word's window starts in this stretch; the tail's frames reach the file's end.
      const from = first * hop;
      const to = last > fullFrames ? sampleCount : Math.min(sampleCount, (last - 1) * hop + window);
      let samples: Float64Array | undefined;
      let squares: Float64Array = new Float64Array(1);
      // A hop's products serve the two frames that share it, as in the track.
      const products = new Map<number, Float64Array>();
      const productsOf = (start: number) => {
        const found = products.get(start) ?? hopProducts(samples as Float64Array, start, frames);
        products.set(start, found);
        return found;
      };
      const judge = async (frame: number) => {
        if (!samples) {
          samples = Float64Array.from(await readSampleRange(file, layout, from, to));
          squares = runningSquares(samples);
        }
        const start = frame * hop - from;
        if (frame >= fullFrames) return tailFramePitch(samples, squares, start, frames) > 0;
        if (isSilent(squares, start, frames)) return false;
        return fullFramePitch(squares, start, productsOf(start), productsOf(start + hop), frames) > 0;
      };
      // The word's own frames first (speech is most likely voiced there), then its context: only the
      // count matters, and the scan stops once it is enough.
      const own = Math.min(Math.max(first, Math.floor(word.startMs / HOP_MS)), last);
      let voiced = 0;
      for (let index = 0; index < last - first && voiced < VOICED_FRAMES_NEEDED; index++) {
        const frame = own + index < last ? own + index : first + (own + index - last);
        const isVoiced = judged.get(frame) ?? (await judge(frame));
        judged.set(frame, isVoiced);
        if (isVoiced) voiced += 1;
      }
      if (voiced >= VOICED_FRAMES_NEEDED) kept.push(word);
    }
    return kept;
  } finally {
    await file.close();
  }
}

/** How a file is cut into frames: a hop, the 20 ms correlated, the lags of the pitch range. */
interface FrameShape {
  sampleRate: number;
  hop: number;
  /** Samples correlated in a frame: two hops, the longest period looked for. */
  span: number;
  /** Samples a full frame reads: its span and the longest lag after it. */
  window: number;
  lags: { min: number; max: number };
}

function frameShape(sampleRate: number): FrameShape {
  const hop = Math.round((sampleRate * HOP_MS) / 1000);
  const lags = { min: Math.floor(sampleRate / MAX_PITCH_HZ), max: Math.ceil(sampleRate / MIN_PITCH_HZ) };
  return { sampleRate, hop, span: 2 * hop, window: 2 * hop + lags.max, lags };
}

function checkLayout(layout: { channels: number; bitsPerSample: number }): void {
  if (layout.channels !== 1 || layout.bitsPerSample !== 16) throw new Error('Voicing needs mono 16-bit PCM.');
}

function isSilent(squares: Float64Array, start: number, frames: FrameShape): boolean {
  return Math.sqrt(sumBetween(squares, start, start + frames.span) / frames.span) < MIN_RMS;
}

/** The pitch of a full frame, from the products of its two hops. */
function fullFramePitch(
  squares: Float64Array,
  start: number,
  first: Float64Array,
  second: Float64Array,
  frames: FrameShape,
): number {
  const { span, lags } = frames;
  const energy = sumBetween(squares, start, start + span);
  const correlation = new Float64Array(lags.max + 1);
  for (let lag = lags.min; lag <= lags.max; lag++) {
    const product = (first[lag] ?? 0) + (second[lag] ?? 0);
    const lagged = sumBetween(squares, start + lag, start + lag + span);
    correlation[lag] = product > 0 ? product / Math.sqrt(energy * lagged) : 0;
  }
  return pitchOf(correlation, lags, frames.sampleRate);
}

/** The pitch of a frame too near the end for a full window, judged on the samples left after its start. */
function tailFramePitch(
  samples: Float64Array,
  squares: Float64Array,
  start: number,
  frames: FrameShape,
): number {
  const { lags } = frames;
  const lagLimit = Math.min(lags.max, Math.floor((samples.length - start) / 2));
  if (lagLimit <= lags.min) return 0;
  const energy = sumBetween(squares, start, start + lagLimit);
  if (Math.sqrt(energy / lagLimit) < MIN_RMS) return 0;
  const correlation = new Float64Array(lagLimit + 1);
  for (let lag = lags.min; lag <= lagLimit; lag++) {
    let product = 0;
    for (let n = start; n < start + lagLimit; n++) product += (samples[n] ?? 0) * (samples[n + lag] ?? 0);
    const lagged = sumBetween(squares, start + lag, start + lag + lagLimit);
    correlation[lag] = product > 0 ? product / Math.sqrt(energy * lagged) : 0;
  }
  return pitchOf(correlation, { min: lags.min, max: lagLimit }, frames.sampleRate);
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
function hopProducts(samples: Float64Array, start: number, frames: FrameShape): Float64Array {
  const { hop, lags } = frames;
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

/** Voiced audio looked for around a word: short function words often sit between voiced neighbours. */
const WORD_CONTEXT_MS = 300;
const MIN_VOICED_MS = 30;
const VOICED_FRAMES_NEEDED = MIN_VOICED_MS / HOP_MS;

/** The frames the gate looks at for a word, of the `frameCount` a file has: the word's and its context's. */
function gateFrames(word: { startMs: number; endMs: number }, frameCount: number) {
  return {
    first: Math.max(0, Math.floor((word.startMs - WORD_CONTEXT_MS) / HOP_MS)),
    last: Math.min(frameCount, Math.ceil((word.endMs + WORD_CONTEXT_MS) / HOP_MS)),
  };
}

/** Drops words that have no voiced audio under or around them (noise heard as words). */
export function keepVoicedWords<T extends { startMs: number; endMs: number }>(
  words: T[],
  track: VoicingTrack,
): T[] {
  return words.filter((word) => {
    const { first, last } = gateFrames(word, track.voiced.length);
    let voiced = 0;
    for (let frame = first; frame < last; frame++) voiced += track.voiced[frame] ?? 0;
    return voiced >= VOICED_FRAMES_NEEDED;
  });
}
