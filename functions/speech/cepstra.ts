import { open } from 'node:fs/promises';
import FFT from 'fft.js';
import type { SpeechRegion } from './vad.ts';
import { readSampleRange, readWavLayout } from './wav.ts';

/**
 * Mel-frequency cepstral coefficients of speech, frame by frame: what a voice's spectral envelope looks
 * like, for telling speakers apart. c0 (loudness) is left out, so a speaker's level does not matter.
 */

/** One frame every 10 ms, each 25 ms long (the usual analysis of speech). */
export const FRAME_HOP_MS = 10;
const FRAME_MS = 25;
const FFT_SIZE = 512;
const PRE_EMPHASIS = 0.97;
/**
 * Filters from 0 Hz to half the sample rate on the mel scale, and the cepstra kept after c0: c1..c19,
 * the envelope and its finer detail (with c1..c12 alone, fewer speakers were told apart when tuning).
 */
const MEL_BANDS = 24;
export const CEPSTRA = 19;
/** Added to band energies (in 16-bit sample units squared) so that digital silence has a finite log. */
const ENERGY_FLOOR = 1;

/** The frames of one speech region: `count` vectors of `dimension` numbers, frame k at startMs + 10 k. */
export interface RegionFrames {
  startMs: number;
  count: number;
  dimension: number;
  values: Float32Array;
  /** Natural log of each frame's energy, to leave the quietest frames of a region out. */
  logEnergy: Float32Array;
}

interface Analysis {
  frameLength: number;
  hop: number;
  window: Float64Array;
  fft: FFT;
  /** Per band: first FFT bin and the triangle's weights from there. */
  bands: { first: number; weights: Float64Array }[];
  /** cosine[k][m] of the DCT-II, k = 1..CEPSTRA. */
  cosine: Float64Array[];
}

function analysisFor(sampleRate: number): Analysis {
  const frameLength = Math.round((sampleRate * FRAME_MS) / 1000);
  const hop = Math.round((sampleRate * FRAME_HOP_MS) / 1000);
  const size = Math.max(FFT_SIZE, 2 ** Math.ceil(Math.log2(frameLength)));
  const window = Float64Array.from(
    { length: frameLength },
    (_, n) => 0.54 - 0.46 * Math.cos((2 * Math.PI * n) / (frameLength - 1)),
  );
  const mel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
  const hz = (m: number) => 700 * (10 ** (m / 2595) - 1);
  const top = mel(sampleRate / 2);
  const edges = Array.from(
    { length: MEL_BANDS + 2 },
    (_, i) => (hz((top * i) / (MEL_BANDS + 1)) * size) / sampleRate,
  );
  const bands = Array.from({ length: MEL_BANDS }, (_, b) => {
    const [low = 0, centre = 0, high = 0] = edges.slice(b, b + 3);
    const first = Math.ceil(low);
    const last = Math.min(size / 2, Math.floor(high));
    const weights = Float64Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => {
      const bin = first + i;
      return bin <= centre ? (bin - low) / (centre - low) : (high - bin) / (high - centre);
    });
    return { first, weights };
  });
  const cosine = Array.from({ length: CEPSTRA }, (_, k) =>
    Float64Array.from({ length: MEL_BANDS }, (_, m) => Math.cos((Math.PI * (k + 1) * (m + 0.5)) / MEL_BANDS)),
  );
  return { frameLength, hop, window, fft: new FFT(size), bands, cosine };
}

/** Cepstra of every 10 ms frame of each region, reading only the regions' samples. */
export async function cepstraOfRegions(wavFile: string, regions: SpeechRegion[]): Promise<RegionFrames[]> {
  const layout = await readWavLayout(wavFile);
  if (layout.channels !== 1 || layout.bitsPerSample !== 16) throw new Error('Cepstra need mono 16-bit PCM.');
  const analysis = analysisFor(layout.sampleRate);
  const totalSamples = Math.floor(layout.dataBytes / 2);
  const handle = await open(wavFile, 'r');
  try {
    const result: RegionFrames[] = [];
    for (const region of regions) {
      const first = Math.max(0, Math.floor((region.startMs / 1000) * layout.sampleRate));
      const last = Math.min(totalSamples, Math.ceil((region.endMs / 1000) * layout.sampleRate));
      const samples = await readSampleRange(handle, layout, first, last);
      result.push(frameRegion(samples, (first / layout.sampleRate) * 1000, analysis));
    }
    return result;
  } finally {
    await handle.close();
  }
}

function frameRegion(samples: Int16Array, startMs: number, analysis: Analysis): RegionFrames {
  const { frameLength, hop, window, fft, bands, cosine } = analysis;
  const count = samples.length >= frameLength ? 1 + Math.floor((samples.length - frameLength) / hop) : 0;
  const values = new Float32Array(count * CEPSTRA);
  const logEnergy = new Float32Array(count);
  const input = new Float64Array(fft.size);
  const spectrum = fft.createComplexArray() as number[];
  const logBands = new Float64Array(MEL_BANDS);
  for (let frame = 0; frame < count; frame++) {
    const offset = frame * hop;
    let energy = 0;
    for (let n = 0; n < frameLength; n++) {
      const previous = offset + n > 0 ? (samples[offset + n - 1] ?? 0) : 0;
      const value = ((samples[offset + n] ?? 0) - PRE_EMPHASIS * previous) * (window[n] ?? 0);
      input[n] = value;
      energy += value * value;
    }
    fft.realTransform(spectrum, input);
    for (let b = 0; b < MEL_BANDS; b++) {
      const { first, weights } = bands[b] as Analysis['bands'][number];
      let sum = 0;
      for (let i = 0; i < weights.length; i++) {
        const re = spectrum[2 * (first + i)] ?? 0;
        const im = spectrum[2 * (first + i) + 1] ?? 0;
        sum += (weights[i] ?? 0) * (re * re + im * im);
      }
      logBands[b] = Math.log(sum + ENERGY_FLOOR);
    }
    for (let k = 0; k < CEPSTRA; k++) {
      const row = cosine[k] as Float64Array;
      let sum = 0;
      for (let m = 0; m < MEL_BANDS; m++) sum += (logBands[m] ?? 0) * (row[m] ?? 0);
      values[frame * CEPSTRA + k] = sum;
    }
    logEnergy[frame] = Math.log(energy + ENERGY_FLOOR);
  }
  return { startMs, count, dimension: CEPSTRA, values, logEnergy };
}
