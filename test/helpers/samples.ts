import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DIARIZATION_SET_FILE,
  type DiarizationSplit,
  diarizationSplit,
} from '#local/evaluation/diarization-set';
import type { ChannelTurn } from '#local/evaluation/metrics';

/** The shared recordings, read in place beside the repository (never copied into it). */
export const SAMPLES_DIR = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  'shared',
  'samples',
);

export interface Sample {
  id: string;
  file: string;
  kind: 'utterance' | 'conversation' | 'stereo' | 'format' | 'bad';
  channels?: number | null;
  sample_rate?: number | null;
  duration_s?: number | null;
  size_bytes?: number | null;
  reference_text?: string | null;
  expect?: 'error' | 'error_or_partial' | 'empty_transcript' | 'transcribe';
  /** Where the recording comes from; for `formats/`, the utterance it was made from. */
  source?: string;
}

export const samples: Sample[] = JSON.parse(readFileSync(join(SAMPLES_DIR, 'manifest.json'), 'utf8'));

export interface SpeakerTurnEntry {
  speaker: string;
  /** 0-based channel of stereo files. */
  channel?: number;
  start: number;
  end: number;
}

/** An entry of `diarization.json`: who spoke when, and which side of the fixed split it is on. */
export interface DiarizationSample extends Sample {
  speakers: SpeakerTurnEntry[];
  split: DiarizationSplit;
}

export const diarizationSamples: DiarizationSample[] = (
  JSON.parse(readFileSync(join(SAMPLES_DIR, DIARIZATION_SET_FILE), 'utf8')) as Omit<
    DiarizationSample,
    'split'
  >[]
).map((sample) => ({ ...sample, split: diarizationSplit(sample.id) }));

/** Who spoke when, in the metrics' terms (milliseconds). */
export function speakerTurnsOf(sample: { speakers: SpeakerTurnEntry[] }): ChannelTurn[] {
  return sample.speakers.map((turn) => ({
    speaker: turn.speaker,
    startMs: turn.start * 1000,
    endMs: turn.end * 1000,
    ...(turn.channel !== undefined ? { channel: turn.channel } : {}),
  }));
}

export function samplePath(sample: Sample): string {
  return join(SAMPLES_DIR, sample.file);
}

export function samplesOfKind(kind: Sample['kind']): Sample[] {
  return samples.filter((sample) => sample.kind === kind);
}

/** The first sample matching a predicate; tests pick by property, not by name. */
export function findSample(predicate: (sample: Sample) => boolean): Sample {
  const sample = samples.find(predicate);
  if (!sample) throw new Error('No sample matches.');
  return sample;
}
