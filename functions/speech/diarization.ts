import { z } from 'zod';
import { MAX_AUDIO_DURATION_MS } from '#commons/contract';
import { CEPSTRA, cepstraOfRegions, FRAME_HOP_MS, type RegionFrames } from './cepstra.ts';
import { deltaBic, GaussianStats, triangleSize } from './gaussian.ts';
import type { SpeechRegion } from './vad.ts';
import type { VoicingTrack } from './voicing.ts';

export interface SpeakerSegment {
  startMs: number;
  endMs: number;
  /** Speaker number, 0-based, in order of first appearance. */
  speaker: number;
}

export interface DiarizationInput {
  /** 16 kHz mono 16-bit PCM WAV: one channel of the job's audio. */
  wavFile: string;
  /** Where someone speaks (voice activity detection). */
  regions: SpeechRegion[];
  /** The pitch track of the same audio, when known: a second description of each voice. */
  voicing?: VoicingTrack;
  /** The number of speakers the client expects (`speakers_expected`): a hint, not a guarantee. */
  speakersExpected?: number;
}

/**
 * Who spoke when in one channel, in the two steps long audio needs, which may run in different workers:
 * `gather` describes the voices of one chunk's speech as plain JSON (stored between workers), and
 * `cluster` numbers the speakers once, from every chunk's record (in any order, checked: another worker
 * or version wrote them), answering segments in file time. The local transcriber labels words by time
 * overlap with the segments. Any implementation (this classical one, or one built on a neural
 * speaker-embedding model) plugs in through `LocalTranscriberSettings.diarizer`.
 */
export interface Diarizer {
  gather(input: ChunkVoicesInput): Promise<unknown>;
  cluster(records: readonly unknown[], options: { speakersExpected?: number | undefined }): SpeakerSegment[];
}

/** A whole file as one chunk: both steps in one call. */
export async function diarize(
  diarizer: Diarizer,
  { speakersExpected, ...input }: DiarizationInput,
): Promise<SpeakerSegment[]> {
  return diarizer.cluster([await diarizer.gather({ ...input, offsetMs: 0 })], { speakersExpected });
}

/*
 * Settings, chosen on the tuning part of the samples only (`npm run eval` prints the held-out part
 * apart). The cluster penalty sat in the middle of the range (1.75 to 2.5) where the tuning set's
 * speaker counts were best and no single-speaker recording was split.
 */
/** Frames on each side of a candidate speaker change (1.5 s), and the shortest segment a change leaves (1 s). */
const CHANGE_WINDOW_FRAMES = 150;
const MIN_SEGMENT_FRAMES = 100;
/** Candidate changes every 100 ms. */
const CHANGE_STEP_FRAMES = 10;
/** Weight of the BIC penalty when looking for changes inside a region (the textbook 1). */
const CHANGE_PENALTY = 1;
/** Weight of the BIC penalty when merging clusters: merging stops when every pair's ΔBIC is positive. */
const CLUSTER_PENALTY = 2.25;
/** Frames quieter than the region's loud frames by more than this many nepers (about 30 dB) describe no voice. */
const QUIET_NEPERS = 7;
/** Added to the diagonal of standardised covariances. */
const RIDGE = 0.01;
/** Weight of the pitch ΔBIC added to the cepstral one, its variance floor (semitones²), and the least voiced frames it needs. */
const PITCH_WEIGHT = 1;
const PITCH_RIDGE = 1;
const MIN_PITCH_FRAMES = 10;
/** Fewer loud frames than this say nothing of a voice. */
const MIN_VOICE_FRAMES = 2;
/**
 * Beyond this many segments (over half an hour of speech), blocks of this many consecutive segments are
 * clustered on their own first: a bound on the quadratic cost of clustering, not a tuned figure.
 */
const MAX_CLUSTERED_SEGMENTS = 1000;
const BLOCK_SEGMENTS = 250;

interface Segment {
  region: number;
  /** Frames [from, to) of the region. */
  from: number;
  to: number;
}

interface Cluster {
  segments: number[];
  cepstra: GaussianStats;
  pitch: GaussianStats;
}

/** What a chunk worker knows: its chunk's audio and speech in chunk time, and where the chunk starts in the file. */
export interface ChunkVoicesInput {
  /** 16 kHz mono 16-bit PCM WAV of the chunk (one channel). */
  wavFile: string;
  /** Where someone speaks in the chunk, in chunk time. */
  regions: SpeechRegion[];
  /** The pitch track of the chunk, in chunk time, when known. */
  voicing?: VoicingTrack;
  /** Where the chunk starts in the file: the times of `ChunkVoices` are file times. */
  offsetMs: number;
}

/** Changes whenever the features or this record's layout change: chunks gathered by another version are refused. */
export const CHUNK_VOICES_VERSION = 1;

/**
 * What clustering needs to know of one chunk, as plain JSON (stored between workers): statistics, not
 * frames, under 0.9 KB per segment. Everything is of the raw cepstra: the per-file standardisation is one
 * affine change, applied to the statistics once all chunks are in.
 */
export interface ChunkVoices {
  version: typeof CHUNK_VOICES_VERSION;
  /** Where the chunk starts in the file, in milliseconds. */
  offsetMs: number;
  /** The chunk's loud frames, coefficient by coefficient: what the per-file mean and variance are made of. */
  standardisation: { count: number; sum: number[]; sumOfSquares: number[] };
  /** The stretches of one voice each that the change-point pass found, in time order. */
  segments: VoiceSegment[];
}

export interface VoiceSegment {
  /** File time (the chunk's offset added). */
  startMs: number;
  endMs: number;
  /**
   * The loud frames' cepstra: their `count`, and in `moments` (base64, little-endian) their mean and the
   * diagonal of their centred sums of products (19 + 19 float32), then the other entries of the upper
   * triangle as correlations (171 int16, 1 = 32767). The sufficient statistics of a full-covariance
   * Gaussian, centred so that few bits keep their precision (raw sums of products nearly cancel when the
   * covariance is taken). Absent when fewer than two frames are loud: such a segment says nothing of a voice.
   */
  cepstra?: { count: number; moments: string };
  /** Log pitch (semitones) of the voiced frames: count, sum and sum of squares. */
  pitch: { count: number; sum: number; sumOfSquares: number };
}

const MOMENT_BYTES = 4 * 2 * CEPSTRA + 2 * (triangleSize(CEPSTRA) - CEPSTRA);
const MOMENTS_BASE64_LENGTH = 4 * Math.ceil(MOMENT_BYTES / 3);

/**
 * The most 10 ms frames (cepstra, and pitch, tracked at the same hop) a stretch of file time can hold,
 * with a frame's worth of slack on each side for the rounding of its ends to whole milliseconds.
 */
function framesIn(startMs: number, endMs: number): number {
  return Math.ceil((endMs - startMs) / FRAME_HOP_MS) + 2;
}

const frameCount = z.number().int().nonnegative();
const fileTime = z.number().int().nonnegative().max(MAX_AUDIO_DURATION_MS);
const voiceSegmentSchema = z
  .object({
    startMs: fileTime,
    endMs: fileTime,
    cepstra: z
      .object({
        count: frameCount.min(MIN_VOICE_FRAMES),
        moments: z.base64().length(MOMENTS_BASE64_LENGTH),
      })
      .optional(),
    pitch: z.object({ count: frameCount, sum: z.number(), sumOfSquares: z.number().nonnegative() }),
  })
  .superRefine((segment, context) => {
    // Every segment holds at least one frame of its own.
    if (segment.endMs - segment.startMs < FRAME_HOP_MS - 1) {
      context.addIssue({ code: 'custom', message: 'a segment shorter than a frame' });
    }
    const frames = framesIn(segment.startMs, segment.endMs);
    if ((segment.cepstra?.count ?? 0) > frames || segment.pitch.count > frames) {
      context.addIssue({ code: 'custom', message: 'more frames than the segment lasts' });
    }
    if (segment.cepstra && !decodeCepstra(segment.cepstra)) {
      context.addIssue({
        code: 'custom',
        path: ['cepstra', 'moments'],
        message: 'moments that are not statistics (not finite, or a negative spread)',
      });
    }
  });

const chunkVoicesSchema = z
  .object({
    version: z.literal(CHUNK_VOICES_VERSION),
    offsetMs: z.number().nonnegative().max(MAX_AUDIO_DURATION_MS),
    standardisation: z.object({
      count: frameCount,
      sum: z.array(z.number()).length(CEPSTRA),
      sumOfSquares: z.array(z.number().nonnegative()).length(CEPSTRA),
    }),
    // No more segments than 10 ms frames in the longest audio: refused before each is looked at.
    segments: z.array(voiceSegmentSchema).max(MAX_AUDIO_DURATION_MS / FRAME_HOP_MS),
  })
  .superRefine((chunk, context) => {
    let previousEndMs = Math.floor(chunk.offsetMs);
    for (const [index, segment] of chunk.segments.entries()) {
      if (segment.startMs < previousEndMs) {
        context.addIssue({
          code: 'custom',
          path: ['segments', index],
          message: 'segments out of time order, overlapping, or before the chunk',
        });
        return;
      }
      previousEndMs = segment.endMs;
    }
    // The standardisation counts the loud frames of all segments: those of segments too quiet to keep
    // statistics of (fewer than MIN_VOICE_FRAMES each) and the rest.
    const kept = chunk.segments.reduce((sum, segment) => sum + (segment.cepstra?.count ?? 0), 0);
    const quiet = chunk.segments.filter((segment) => !segment.cepstra).length;
    const { count } = chunk.standardisation;
    if (count < kept || count > kept + quiet * (MIN_VOICE_FRAMES - 1)) {
      context.addIssue({
        code: 'custom',
        path: ['standardisation', 'count'],
        message: "a frame count that does not add up to the segments'",
      });
    }
  });

/**
 * Checks what another worker stored (JSON parsed from S3, say) before it is clustered: the shape, the
 * version, and that the figures can be statistics of the times they claim.
 */
export function parseChunkVoices(value: unknown): ChunkVoices {
  const parsed = chunkVoicesSchema.safeParse(value);
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    throw new Error(`Malformed chunk voices at ${issue?.path.join('.') || 'the top'}: ${issue?.message}.`);
  }
  return parsed.data;
}

/**
 * Classical speaker diarization. Cepstra c1..c19 of the speech (c0, the loudness, left out), standardised
 * over the whole file (cepstral mean and variance normalisation per file, not per speaker: a channel's
 * colouring and level are the same for everyone on it, and the Gaussian criterion below does not change
 * under one affine change of the features). Each speech region is split where a full-covariance Gaussian
 * test (ΔBIC over 1.5 s windows) finds a change of voice; the segments are then merged bottom-up, the
 * most alike pair first, for as long as ΔBIC (cepstra plus log pitch) says one model explains a pair
 * better than two. The number of speakers is where merging stops.
 *
 * A whole file is one chunk: the same two steps serve long audio cut into chunks across workers.
 */
export class BicDiarizer implements Diarizer {
  gather(input: ChunkVoicesInput): Promise<ChunkVoices> {
    return gatherVoices(input);
  }

  cluster(records: readonly unknown[], options: { speakersExpected?: number | undefined } = {}) {
    return clusterVoices(records, options);
  }

  /** A whole file as one chunk. */
  diarize(input: DiarizationInput): Promise<SpeakerSegment[]> {
    return diarize(this, input);
  }
}

/**
 * A chunk worker's part: cepstra of the chunk's speech, the change-point pass inside its regions
 * (features standardised over the chunk, the nearest it has to the file's), and the statistics of every
 * segment found, in file time.
 */
export async function gatherVoices(input: ChunkVoicesInput): Promise<ChunkVoices> {
  const frames = await cepstraOfRegions(input.wavFile, input.regions);
  const loud = frames.map(loudFrames);
  const chunkFrames = new GaussianStats(CEPSTRA);
  frames.forEach((region, r) => {
    for (let f = 0; f < region.count; f++) if (loud[r]?.[f]) chunkFrames.add(region.values, f * CEPSTRA);
  });
  const standardisation = {
    count: chunkFrames.count,
    sum: Array.from(chunkFrames.sum),
    sumOfSquares: Array.from({ length: CEPSTRA }, (_, k) => chunkFrames.products[k * CEPSTRA + k] ?? 0),
  };
  const scaling = scalingOf(standardisation);
  const segments = frames.flatMap((region, index) =>
    splitAtChanges(region, loud[index] as Uint8Array, index, scaling),
  );
  return {
    version: CHUNK_VOICES_VERSION,
    offsetMs: input.offsetMs,
    standardisation,
    segments: segments.map((segment): VoiceSegment => {
      const region = frames[segment.region] as RegionFrames;
      const bounds = input.regions[segment.region] as SpeechRegion;
      const startMs = segment.from === 0 ? bounds.startMs : region.startMs + segment.from * FRAME_HOP_MS;
      const endMs = segment.to === region.count ? bounds.endMs : region.startMs + segment.to * FRAME_HOP_MS;
      const cepstra = statsOf(region, loud[segment.region] as Uint8Array, segment.from, segment.to);
      const pitch = pitchStats(input.voicing, startMs, endMs);
      return {
        startMs: Math.round(startMs + input.offsetMs),
        endMs: Math.round(endMs + input.offsetMs),
        ...(cepstra.count >= MIN_VOICE_FRAMES ? { cepstra: encodeCepstra(cepstra) } : {}),
        pitch: { count: pitch.count, sum: pitch.sum[0] ?? 0, sumOfSquares: pitch.products[0] ?? 0 },
      };
    }),
  };
}

/**
 * Once over the whole file (one channel), from every chunk's record in any order: the chunks' statistics
 * standardised by the file's mean and variance (summed over the chunks), then agglomerative ΔBIC
 * clustering with its stopping rule (or `speakersExpected`). Answers the segments in time order, speakers
 * numbered by first appearance. Throws on a record that parseChunkVoices refuses, or on chunks that overlap.
 */
export function clusterVoices(
  chunks: readonly unknown[],
  options: { speakersExpected?: number | undefined } = {},
): SpeakerSegment[] {
  const ordered = chunks.map(parseChunkVoices).sort((a, b) => a.offsetMs - b.offsetMs);
  const file = { count: 0, sum: new Array(CEPSTRA).fill(0), sumOfSquares: new Array(CEPSTRA).fill(0) };
  for (const { standardisation } of ordered) {
    file.count += standardisation.count;
    for (let k = 0; k < CEPSTRA; k++) {
      file.sum[k] += standardisation.sum[k] ?? 0;
      file.sumOfSquares[k] += standardisation.sumOfSquares[k] ?? 0;
    }
  }
  const { shift, scale } = scalingOf(file);
  const segments = ordered.flatMap((chunk) => chunk.segments).sort((a, b) => a.startMs - b.startMs);
  if (segments.length === 0) return [];
  // Chunks cover parts of the file that do not overlap: overlapping segments are a chunk given twice.
  if (segments.some((segment, index) => index > 0 && segment.startMs < (segments[index - 1]?.endMs ?? 0))) {
    throw new Error('Malformed chunk voices: chunks that overlap in time (the same chunk twice?).');
  }
  const clusters = segments.map(
    (segment, index): Cluster => ({
      segments: [index],
      // parseChunkVoices has checked that the moments decode.
      cepstra:
        (segment.cepstra && decodeCepstra(segment.cepstra)?.standardised(shift, scale)) ??
        new GaussianStats(CEPSTRA),
      pitch: pitchOf(segment.pitch),
    }),
  );
  const speakerOf = new Map<number, number>();
  clusterSegments(clusters, options.speakersExpected)
    .sort((a, b) => Math.min(...a.segments) - Math.min(...b.segments))
    .forEach((cluster, speaker) => {
      for (const segment of cluster.segments) speakerOf.set(segment, speaker);
    });
  return segments.map((segment, index) => ({
    startMs: segment.startMs,
    endMs: segment.endMs,
    speaker: speakerOf.get(index) ?? 0,
  }));
}

function pitchOf(pitch: VoiceSegment['pitch']): GaussianStats {
  const stats = new GaussianStats(1);
  stats.count = pitch.count;
  stats.sum[0] = pitch.sum;
  stats.products[0] = pitch.sumOfSquares;
  return stats;
}

/** Correlations are stored as 16-bit integers: this many steps from 0 to 1. */
const CORRELATION_STEPS = 32767;

function encodeCepstra(stats: GaussianStats): NonNullable<VoiceSegment['cepstra']> {
  const { mean, scatter } = stats.moments();
  const d = CEPSTRA;
  const bytes = Buffer.alloc(MOMENT_BYTES);
  // Centred squares cannot be negative; rounding can make a constant coefficient's a hair below 0.
  const diagonal = Float64Array.from({ length: d }, (_, i) => Math.max(0, scatter[diagonalIndex(i)] ?? 0));
  let offset = 0;
  for (const value of [...mean, ...diagonal]) offset = bytes.writeFloatLE(value, offset);
  for (let i = 0; i < d; i++) {
    for (let j = i + 1; j < d; j++) {
      const spread = Math.sqrt((diagonal[i] ?? 0) * (diagonal[j] ?? 0));
      const correlation = spread > 0 ? (scatter[diagonalIndex(i) + j - i] ?? 0) / spread : 0;
      offset = bytes.writeInt16LE(
        Math.round(Math.max(-1, Math.min(1, correlation)) * CORRELATION_STEPS),
        offset,
      );
    }
  }
  return { count: stats.count, moments: bytes.toString('base64') };
}

/** Where row i's diagonal entry sits in the packed upper triangle. */
function diagonalIndex(i: number): number {
  return i * CEPSTRA - (i * (i - 1)) / 2;
}

/** The statistics a segment's `moments` hold, or undefined when they cannot be (not finite, a negative spread). */
function decodeCepstra(cepstra: NonNullable<VoiceSegment['cepstra']>): GaussianStats | undefined {
  const d = CEPSTRA;
  const bytes = Buffer.from(cepstra.moments, 'base64');
  if (bytes.length !== MOMENT_BYTES) return undefined;
  const floats = Float64Array.from({ length: 2 * d }, (_, i) => bytes.readFloatLE(4 * i));
  if (!floats.every(Number.isFinite) || floats.subarray(d).some((value) => value < 0)) return undefined;
  const scatter = new Float64Array(triangleSize(d));
  let offset = 8 * d;
  for (let i = 0; i < d; i++) {
    scatter[diagonalIndex(i)] = floats[d + i] ?? 0;
    for (let j = i + 1; j < d; j++) {
      const spread = Math.sqrt((floats[d + i] ?? 0) * (floats[d + j] ?? 0));
      scatter[diagonalIndex(i) + j - i] = (bytes.readInt16LE(offset) / CORRELATION_STEPS) * spread;
      offset += 2;
    }
  }
  return GaussianStats.fromMoments(cepstra.count, floats.subarray(0, d), scatter);
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

/** 1 for each frame loud enough to describe the voice: pauses and breaths inside a region are left out. */
function loudFrames(region: RegionFrames): Uint8Array {
  const sorted = Array.from(region.logEnergy).sort((a, b) => a - b);
  const loud = sorted[Math.floor(sorted.length * 0.95)] ?? 0;
  return Uint8Array.from(region.logEnergy, (energy) => (energy >= loud - QUIET_NEPERS ? 1 : 0));
}

interface Scaling {
  shift: Float64Array;
  scale: Float64Array;
}

/** Zero mean and unit variance per coefficient over the loud frames counted. */
function scalingOf(frames: ChunkVoices['standardisation']): Scaling {
  const n = Math.max(1, frames.count);
  const shift = Float64Array.from({ length: CEPSTRA }, (_, k) => (frames.sum[k] ?? 0) / n);
  const scale = shift.map((m, k) => Math.sqrt(1 / Math.max(1e-9, (frames.sumOfSquares[k] ?? 0) / n - m * m)));
  return { shift, scale };
}

function statsOf(region: RegionFrames, loud: Uint8Array, from: number, to: number): GaussianStats {
  const stats = new GaussianStats(CEPSTRA);
  for (let f = from; f < to; f++) if (loud[f]) stats.add(region.values, f * CEPSTRA);
  return stats;
}

/**
 * Splits a region where the voice changes: at each candidate point, ΔBIC of the windows before and
 * after; the highest positive peaks become boundaries, no two closer than the shortest segment.
 */
function splitAtChanges(region: RegionFrames, loud: Uint8Array, index: number, scaling: Scaling): Segment[] {
  if (region.count === 0) return [];
  const candidates: { frame: number; score: number }[] = [];
  for (let t = MIN_SEGMENT_FRAMES; t + MIN_SEGMENT_FRAMES <= region.count; t += CHANGE_STEP_FRAMES) {
    const before = statsOf(region, loud, Math.max(0, t - CHANGE_WINDOW_FRAMES), t);
    const after = statsOf(region, loud, t, Math.min(region.count, t + CHANGE_WINDOW_FRAMES));
    if (before.count < MIN_SEGMENT_FRAMES / 2 || after.count < MIN_SEGMENT_FRAMES / 2) continue;
    const { shift, scale } = scaling;
    const score = deltaBic(
      before.standardised(shift, scale),
      after.standardised(shift, scale),
      CHANGE_PENALTY,
      RIDGE,
    );
    if (score > 0) candidates.push({ frame: t, score });
  }
  candidates.sort((a, b) => b.score - a.score);
  const boundaries: number[] = [];
  for (const { frame } of candidates) {
    if (boundaries.every((boundary) => Math.abs(boundary - frame) >= MIN_SEGMENT_FRAMES))
      boundaries.push(frame);
  }
  const edges = [0, ...boundaries.sort((a, b) => a - b), region.count];
  return edges.slice(1).map((to, i) => ({ region: index, from: edges[i] ?? 0, to }));
}

/** Statistics of the log pitch (semitones) of the voiced frames between two times. */
function pitchStats(voicing: VoicingTrack | undefined, startMs: number, endMs: number): GaussianStats {
  const stats = new GaussianStats(1);
  if (!voicing) return stats;
  const first = Math.max(0, Math.floor(startMs / voicing.hopMs));
  const last = Math.min(voicing.pitchHz.length, Math.ceil(endMs / voicing.hopMs));
  const semitones = [0];
  for (let i = first; i < last; i++) {
    const hz = voicing.pitchHz[i] ?? 0;
    if (hz <= 0) continue;
    semitones[0] = 12 * Math.log2(hz);
    stats.add(semitones, 0);
  }
  return stats;
}

/** ΔBIC of two clusters: cepstra, plus pitch when both have enough voiced frames (independent streams add). */
function distance(a: Cluster, b: Cluster): number {
  const cepstral = deltaBic(a.cepstra, b.cepstra, CLUSTER_PENALTY, RIDGE);
  if (a.pitch.count < MIN_PITCH_FRAMES || b.pitch.count < MIN_PITCH_FRAMES) return cepstral;
  return cepstral + PITCH_WEIGHT * deltaBic(a.pitch, b.pitch, 1, PITCH_RIDGE);
}

function merge(a: Cluster, b: Cluster): Cluster {
  return {
    segments: [...a.segments, ...b.segments],
    cepstra: a.cepstra.plus(b.cepstra),
    pitch: a.pitch.plus(b.pitch),
  };
}

/**
 * Agglomerative clustering with a ΔBIC stopping rule. With an expected count, merging goes on past the
 * rule down to that count, and stops there even where ΔBIC would merge further. Segments with no loud
 * frame say nothing of a voice and go with the segment before them (the first voice heard, when none is).
 */
function clusterSegments(all: Cluster[], expected?: number): Cluster[] {
  const voiceless = all.filter((cluster) => cluster.cepstra.count < MIN_VOICE_FRAMES);
  const voiced = all.filter((cluster) => cluster.cepstra.count >= MIN_VOICE_FRAMES);
  if (voiced.length === 0) return [{ ...(all[0] as Cluster), segments: all.flatMap((c) => c.segments) }];
  const result = agglomerate(
    clusterInBlocks(voiced),
    expected === undefined
      ? { fewest: 1, most: Number.POSITIVE_INFINITY }
      : { fewest: expected, most: expected },
  );
  const firstHeard = result.reduce((first, cluster) =>
    Math.min(...cluster.segments) < Math.min(...first.segments) ? cluster : first,
  );
  for (const lone of voiceless) {
    const [index = 0] = lone.segments;
    const home = result.find((cluster) => cluster.segments.includes(index - 1)) ?? firstHeard;
    home.segments.push(index);
  }
  return result;
}

/**
 * Keeps the quadratic clustering affordable on long recordings: past MAX_CLUSTERED_SEGMENTS, runs of
 * BLOCK_SEGMENTS consecutive segments (minutes of speech each) are clustered on their own first, by the
 * same rule but to at most half their number, and their clusters take the segments' place.
 */
function clusterInBlocks(clusters: Cluster[]): Cluster[] {
  let current = clusters;
  while (current.length > MAX_CLUSTERED_SEGMENTS) {
    const next: Cluster[] = [];
    for (let start = 0; start < current.length; start += BLOCK_SEGMENTS) {
      const block = current.slice(start, start + BLOCK_SEGMENTS);
      next.push(...agglomerate(block, { fewest: 1, most: Math.ceil(block.length / 2) }));
    }
    current = next;
  }
  return current;
}

/**
 * Merges the most alike pair of clusters (lowest ΔBIC) first, never below `fewest` clusters, and stops
 * once every pair's ΔBIC is positive if no more than `most` are left. Clusters come back in the order
 * of the first of each that was given.
 */
function agglomerate(given: Cluster[], limits: { fewest: number; most: number }): Cluster[] {
  const clusters: (Cluster | undefined)[] = [...given];
  // ΔBIC of every pair, computed once: a merge changes only the merged cluster's row (the joined
  // cluster takes the first one's slot), so each merge costs one row of ΔBIC, not a rescan of all pairs.
  const n = clusters.length;
  const between = new Float64Array(n * n);
  const best = new Int32Array(n).fill(-1);
  const bestScore = new Float64Array(n).fill(Number.POSITIVE_INFINITY);
  const live = new Set(clusters.keys());
  const setBetween = (i: number, j: number, score: number) => {
    between[i * n + j] = score;
    between[j * n + i] = score;
  };
  const offer = (node: number, other: number, score: number) => {
    if (score < (bestScore[node] ?? Number.POSITIVE_INFINITY)) {
      best[node] = other;
      bestScore[node] = score;
    }
  };
  const rescan = (node: number) => {
    best[node] = -1;
    bestScore[node] = Number.POSITIVE_INFINITY;
    for (const other of live) if (other !== node) offer(node, other, between[node * n + other] ?? 0);
  };
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++)
      setBetween(i, j, distance(clusters[i] as Cluster, clusters[j] as Cluster));
  }
  for (const node of live) rescan(node);
  while (live.size > Math.max(1, limits.fewest)) {
    let a = -1;
    for (const node of live) if (a < 0 || (bestScore[node] ?? 0) < (bestScore[a] ?? 0)) a = node;
    const b = best[a] ?? -1;
    if (b < 0 || ((bestScore[a] ?? 0) > 0 && live.size <= limits.most)) break;
    const joined = merge(clusters[a] as Cluster, clusters[b] as Cluster);
    clusters[a] = joined;
    clusters[b] = undefined;
    live.delete(b);
    for (const node of live) if (node !== a) setBetween(a, node, distance(joined, clusters[node] as Cluster));
    for (const node of live) {
      if (node === a || best[node] === a || best[node] === b) rescan(node);
      else offer(node, a, between[node * n + a] ?? 0);
    }
  }
  return clusters.filter((cluster): cluster is Cluster => cluster !== undefined);
}
