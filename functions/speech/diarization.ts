import { CEPSTRA, cepstraOfRegions, FRAME_HOP_MS, type RegionFrames } from './cepstra.ts';
import { deltaBic, GaussianStats } from './gaussian.ts';
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
 * Who spoke when in one channel. The local transcriber calls this once per channel and labels words
 * by time overlap with the segments; any implementation (this classical one, or one built on a neural
 * speaker-embedding model) plugs in through `LocalTranscriberSettings.diarizer`.
 */
export interface Diarizer {
  diarize(input: DiarizationInput): Promise<SpeakerSegment[]>;
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
/** Beyond this many segments (long recordings), neighbours in time that sound alike are joined first. */
const MAX_CLUSTERED_SEGMENTS = 1000;

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

/**
 * Classical speaker diarization. Cepstra c1..c19 of the speech (c0, the loudness, left out), standardised
 * over the whole file (cepstral mean and variance normalisation per file, not per speaker: a channel's
 * colouring and level are the same for everyone on it, and the Gaussian criterion below does not change
 * under one affine change of the features). Each speech region is split where a full-covariance Gaussian
 * test (ΔBIC over 1.5 s windows) finds a change of voice; the segments are then merged bottom-up, the
 * most alike pair first, for as long as ΔBIC (cepstra plus log pitch) says one model explains a pair
 * better than two. The number of speakers is where merging stops.
 */
export class BicDiarizer implements Diarizer {
  async diarize(input: DiarizationInput): Promise<SpeakerSegment[]> {
    const frames = await cepstraOfRegions(input.wavFile, input.regions);
    const loud = frames.map(loudFrames);
    standardise(frames, loud);
    const segments = frames.flatMap((region, index) =>
      splitAtChanges(region, loud[index] as Uint8Array, index),
    );
    if (segments.length === 0) return [];
    const timeOf = (segment: Segment) => {
      const region = frames[segment.region] as RegionFrames;
      const bounds = input.regions[segment.region] as SpeechRegion;
      return {
        startMs: segment.from === 0 ? bounds.startMs : region.startMs + segment.from * FRAME_HOP_MS,
        endMs: segment.to === region.count ? bounds.endMs : region.startMs + segment.to * FRAME_HOP_MS,
      };
    };
    const clusters = segments.map((segment, index) => {
      const region = frames[segment.region] as RegionFrames;
      const time = timeOf(segment);
      return {
        segments: [index],
        cepstra: statsOf(region, loud[segment.region] as Uint8Array, segment.from, segment.to),
        pitch: pitchStats(input.voicing, time.startMs, time.endMs),
      };
    });
    const speakerOf = new Map<number, number>();
    clusterSegments(clusters, input.speakersExpected)
      .sort((a, b) => Math.min(...a.segments) - Math.min(...b.segments))
      .forEach((cluster, speaker) => {
        for (const segment of cluster.segments) speakerOf.set(segment, speaker);
      });
    return segments.map((segment, index) => {
      const { startMs, endMs } = timeOf(segment);
      return { startMs: Math.round(startMs), endMs: Math.round(endMs), speaker: speakerOf.get(index) ?? 0 };
    });
  }
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

/** Zero mean and unit variance per coefficient over the loud frames of the whole file. */
function standardise(frames: RegionFrames[], loud: Uint8Array[]): void {
  const stats = new GaussianStats(CEPSTRA);
  frames.forEach((region, r) => {
    for (let f = 0; f < region.count; f++) if (loud[r]?.[f]) stats.add(region.values, f * CEPSTRA);
  });
  if (stats.count === 0) return;
  const mean = stats.sum.map((sum) => sum / stats.count);
  const scale = mean.map((m, k) =>
    Math.sqrt(1 / Math.max(1e-9, (stats.products[k * CEPSTRA + k] ?? 0) / stats.count - m * m)),
  );
  for (const region of frames) {
    for (let i = 0; i < region.values.length; i++) {
      const k = i % CEPSTRA;
      region.values[i] = ((region.values[i] ?? 0) - (mean[k] ?? 0)) * (scale[k] ?? 1);
    }
  }
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
function splitAtChanges(region: RegionFrames, loud: Uint8Array, index: number): Segment[] {
  if (region.count === 0) return [];
  const candidates: { frame: number; score: number }[] = [];
  for (let t = MIN_SEGMENT_FRAMES; t + MIN_SEGMENT_FRAMES <= region.count; t += CHANGE_STEP_FRAMES) {
    const before = statsOf(region, loud, Math.max(0, t - CHANGE_WINDOW_FRAMES), t);
    const after = statsOf(region, loud, t, Math.min(region.count, t + CHANGE_WINDOW_FRAMES));
    if (before.count < MIN_SEGMENT_FRAMES / 2 || after.count < MIN_SEGMENT_FRAMES / 2) continue;
    const score = deltaBic(before, after, CHANGE_PENALTY, RIDGE);
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
 * frame say nothing of a voice and go with the segment before them.
 */
function clusterSegments(all: Cluster[], expected?: number): Cluster[] {
  const voiceless = all.filter((cluster) => cluster.cepstra.count < 2);
  let clusters = joinNeighbours(all.filter((cluster) => cluster.cepstra.count >= 2));
  if (clusters.length === 0) return [{ ...(all[0] as Cluster), segments: all.flatMap((c) => c.segments) }];

  interface Node {
    cluster: Cluster;
    best?: Node;
    bestScore: number;
  }
  const nodes: Node[] = clusters.map((cluster) => ({ cluster, bestScore: Number.POSITIVE_INFINITY }));
  const offer = (node: Node, other: Node, score: number) => {
    if (score < node.bestScore) {
      node.best = other;
      node.bestScore = score;
    }
  };
  const rescan = (node: Node) => {
    node.best = undefined;
    node.bestScore = Number.POSITIVE_INFINITY;
    for (const other of nodes) if (other !== node) offer(node, other, distance(node.cluster, other.cluster));
  };
  for (let i = 0; i < nodes.length; i++) {
    for (let j = i + 1; j < nodes.length; j++) {
      const a = nodes[i] as Node;
      const b = nodes[j] as Node;
      const score = distance(a.cluster, b.cluster);
      offer(a, b, score);
      offer(b, a, score);
    }
  }
  while (nodes.length > Math.max(1, expected ?? 1)) {
    const a = nodes.reduce((best, node) => (node.bestScore < best.bestScore ? node : best));
    const b = a.best;
    if (!b || (expected === undefined && a.bestScore > 0)) break;
    const joined: Node = { cluster: merge(a.cluster, b.cluster), bestScore: Number.POSITIVE_INFINITY };
    nodes.splice(nodes.indexOf(a), 1);
    nodes.splice(nodes.indexOf(b), 1);
    const stale = nodes.filter((node) => node.best === a || node.best === b);
    for (const node of nodes) {
      const score = distance(joined.cluster, node.cluster);
      offer(joined, node, score);
      offer(node, joined, score);
    }
    nodes.push(joined);
    for (const node of stale) rescan(node);
  }
  clusters = nodes.map((node) => node.cluster);
  for (const lone of voiceless) {
    const [index = 0] = lone.segments;
    const home = clusters.find((cluster) => cluster.segments.includes(index - 1)) ?? clusters[0];
    home?.segments.push(index);
  }
  return clusters;
}

/**
 * Keeps the quadratic clustering affordable on long recordings: while there are too many segments,
 * each is joined to the one before it when ΔBIC says they are one voice; if a pass joins nothing,
 * neighbours are paired regardless (a speaker's turn outlasts a segment far more often than not).
 */
function joinNeighbours(clusters: Cluster[]): Cluster[] {
  let current = clusters;
  while (current.length > MAX_CLUSTERED_SEGMENTS) {
    const alike = joinPass(current, (a, b) => distance(a, b) < 0);
    current = alike.length < current.length ? alike : joinPass(current, () => true);
  }
  return current;
}

function joinPass(clusters: Cluster[], join: (a: Cluster, b: Cluster) => boolean): Cluster[] {
  const joined: Cluster[] = [];
  let justJoined = false;
  for (const cluster of clusters) {
    const last = joined.at(-1);
    if (last && !justJoined && join(last, cluster)) {
      joined[joined.length - 1] = merge(last, cluster);
      justJoined = true;
    } else {
      joined.push(cluster);
      justJoined = false;
    }
  }
  return joined;
}
