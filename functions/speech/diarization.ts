import { open } from 'node:fs/promises';
import Meyda from 'meyda';
import type { SpeechRegion } from './vad.ts';
import type { VoicingTrack } from './voicing.ts';
import { readWavLayout } from './wav.ts';

/** Audio analysed per MFCC frame, and the step between frames (32 ms and 20 ms at 16 kHz). */
const FRAME = 512;
const HOP = 320;
/** MFCCs 1..12 describe the spectral envelope; c0 (loudness) says nothing of the speaker. */
const COEFFICIENTS = 13;
/** Speech is cut into pieces no longer than this, so that a change of speaker inside a region is seen. */
const MAX_PIECE_MS = 2000;
/**
 * How far apart two voices must be to count as two speakers. One speaker's median pitch moves a few
 * semitones with intonation; different speakers, and above all men and women, differ by far more.
 * The MFCC scale is the spread of one speaker's mean spectral envelope from one piece to the next.
 */
const PITCH_SCALE_SEMITONES = 6;
const MFCC_SCALE = 10;
/** Less speech than this is too little to tell a voice apart: such a cluster joins its nearest one. */
const MIN_SPEAKER_MS = 2000;

export interface SpeakerSegment {
  startMs: number;
  endMs: number;
  /** Speaker number, 0-based, in order of first appearance. */
  speaker: number;
}

/** What a stretch of speech sounds like: its median pitch and mean spectral envelope. */
interface Voice {
  /** Median pitch in semitones above 1 Hz, or NaN when nothing in it was voiced. */
  pitch: number;
  mfcc: number[];
  /** Milliseconds of speech it stands for, to weigh cluster averages. */
  weight: number;
}

interface Cluster {
  voice: Voice;
  pieces: number[];
}

/**
 * Who spoke when. Speech regions (from voice activity detection) are cut into pieces, each described
 * by its voice; pieces are merged bottom-up, closest first, while the closest two clusters are within
 * one scale of each other. The number of speakers is where merging stops, never a given.
 */
export async function diarize(
  wavFile: string,
  regions: SpeechRegion[],
  voicing: VoicingTrack,
): Promise<SpeakerSegment[]> {
  const pieces = cutPieces(regions);
  if (pieces.length === 0) return [];
  const mfccs = await meanMfccs(wavFile, pieces);
  let clusters: Cluster[] = pieces.map((piece, index) => ({
    voice: {
      pitch: medianPitch(voicing, piece),
      mfcc: mfccs[index] ?? [],
      weight: piece.endMs - piece.startMs,
    },
    pieces: [index],
  }));

  for (;;) {
    let best: { i: number; j: number; distance: number } | undefined;
    for (let i = 0; i < clusters.length; i++) {
      for (let j = i + 1; j < clusters.length; j++) {
        const d = distance(clusters[i]?.voice as Voice, clusters[j]?.voice as Voice);
        if (!best || d < best.distance) best = { i, j, distance: d };
      }
    }
    const small = best && best.distance > 1 ? smallestCluster(clusters) : undefined;
    if (best && best.distance > 1 && small !== undefined) best = nearestTo(clusters, small);
    if (!best || (best.distance > 1 && small === undefined)) break;
    const a = clusters[best.i] as Cluster;
    const b = clusters[best.j] as Cluster;
    clusters = clusters.filter((_, index) => index !== best.i && index !== best.j);
    clusters.push({ voice: combine(a.voice, b.voice), pieces: [...a.pieces, ...b.pieces] });
  }

  const speakerOf = new Map<number, number>();
  clusters
    .sort((a, b) => Math.min(...a.pieces) - Math.min(...b.pieces))
    .forEach((cluster, speaker) => {
      for (const piece of cluster.pieces) speakerOf.set(piece, speaker);
    });
  return pieces.map((piece, index) => ({ ...piece, speaker: speakerOf.get(index) ?? 0 }));
}

/** The speaker of a stretch of time: the one whose segments overlap it most, else the nearest. */
export function speakerAt(segments: SpeakerSegment[], startMs: number, endMs: number): number | undefined {
  let best: { speaker: number; score: number } | undefined;
  for (const segment of segments) {
    const overlap = Math.min(endMs, segment.endMs) - Math.max(startMs, segment.startMs);
    // Overlaps count positive; gaps count negative, so that the nearest segment wins when none overlaps.
    const score =
      overlap > 0 ? overlap : -Math.min(Math.abs(segment.startMs - endMs), Math.abs(startMs - segment.endMs));
    if (!best || score > best.score) best = { speaker: segment.speaker, score };
  }
  return best?.speaker;
}

/** The index of a cluster with too little speech to stand as a speaker, if any (the smallest). */
function smallestCluster(clusters: Cluster[]): number | undefined {
  let smallest: number | undefined;
  clusters.forEach((cluster, index) => {
    const weight = cluster.voice.weight;
    if (
      weight < MIN_SPEAKER_MS &&
      (smallest === undefined || weight < (clusters[smallest]?.voice.weight ?? 0))
    ) {
      smallest = index;
    }
  });
  return clusters.length > 1 ? smallest : undefined;
}

function nearestTo(clusters: Cluster[], index: number): { i: number; j: number; distance: number } {
  let best = { i: index, j: index === 0 ? 1 : 0, distance: Number.POSITIVE_INFINITY };
  clusters.forEach((cluster, other) => {
    if (other === index) return;
    const d = distance(clusters[index]?.voice as Voice, cluster.voice);
    if (d < best.distance) best = { i: Math.min(index, other), j: Math.max(index, other), distance: d };
  });
  return best;
}

function distance(a: Voice, b: Voice): number {
  const mfcc = Math.sqrt(
    a.mfcc.reduce((sum, value, i) => sum + (value - (b.mfcc[i] ?? 0)) ** 2, 0) / a.mfcc.length,
  );
  const pitchKnown = Number.isFinite(a.pitch) && Number.isFinite(b.pitch);
  const pitch = pitchKnown ? (a.pitch - b.pitch) / PITCH_SCALE_SEMITONES : 0;
  return Math.sqrt(pitch ** 2 + (mfcc / MFCC_SCALE) ** 2);
}

function combine(a: Voice, b: Voice): Voice {
  const weight = a.weight + b.weight;
  const mix = (x: number, y: number) => (x * a.weight + y * b.weight) / weight;
  let pitch = Number.NaN;
  if (Number.isFinite(a.pitch) && Number.isFinite(b.pitch)) pitch = mix(a.pitch, b.pitch);
  else if (Number.isFinite(a.pitch)) pitch = a.pitch;
  else if (Number.isFinite(b.pitch)) pitch = b.pitch;
  return { pitch, mfcc: a.mfcc.map((value, i) => mix(value, b.mfcc[i] ?? 0)), weight };
}

function cutPieces(regions: SpeechRegion[]): SpeechRegion[] {
  const pieces: SpeechRegion[] = [];
  for (const region of regions) {
    const count = Math.max(1, Math.round((region.endMs - region.startMs) / MAX_PIECE_MS));
    const size = (region.endMs - region.startMs) / count;
    for (let i = 0; i < count; i++) {
      pieces.push({
        startMs: Math.round(region.startMs + i * size),
        endMs: Math.round(region.startMs + (i + 1) * size),
      });
    }
  }
  return pieces;
}

function medianPitch(voicing: VoicingTrack, piece: SpeechRegion): number {
  const first = Math.floor(piece.startMs / voicing.hopMs);
  const last = Math.min(voicing.pitchHz.length, Math.ceil(piece.endMs / voicing.hopMs));
  const voiced = Array.from(voicing.pitchHz.subarray(first, last)).filter((hz) => hz > 0);
  if (voiced.length === 0) return Number.NaN;
  voiced.sort((a, b) => a - b);
  return 12 * Math.log2(voiced[Math.floor(voiced.length / 2)] ?? 1);
}

/** Mean MFCC vector (c1..c12) of each piece, reading only the pieces' samples. */
async function meanMfccs(wavFile: string, pieces: SpeechRegion[]): Promise<number[][]> {
  const layout = await readWavLayout(wavFile);
  const handle = await open(wavFile, 'r');
  Meyda.bufferSize = FRAME;
  Meyda.sampleRate = layout.sampleRate;
  Meyda.numberOfMFCCCoefficients = COEFFICIENTS;
  try {
    const means: number[][] = [];
    for (const piece of pieces) {
      const first = Math.floor((piece.startMs / 1000) * layout.sampleRate);
      const last = Math.min(Math.floor((piece.endMs / 1000) * layout.sampleRate), layout.dataBytes / 2);
      const bytes = Buffer.alloc(Math.max(0, last - first) * 2);
      await handle.read(bytes, 0, bytes.length, layout.dataOffset + first * 2);
      const samples = new Float32Array(bytes.length / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2) / 32768;
      const sum = new Array<number>(COEFFICIENTS - 1).fill(0);
      let frames = 0;
      for (let start = 0; start + FRAME <= samples.length; start += HOP) {
        const mfcc = Meyda.extract('mfcc', samples.subarray(start, start + FRAME)) as number[] | null;
        if (!mfcc?.every(Number.isFinite)) continue;
        for (let i = 1; i < COEFFICIENTS; i++) sum[i - 1] = (sum[i - 1] ?? 0) + (mfcc[i] ?? 0);
        frames += 1;
      }
      means.push(sum.map((value) => value / Math.max(1, frames)));
    }
    return means;
  } finally {
    await handle.close();
  }
}
