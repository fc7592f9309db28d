import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ENV } from '#commons/contract';
import type { StatusRecord } from '#core/job';
import { joinWords, type TranscriptResult, type Word } from '#core/result';
import { decodeToWav } from '#speech/media';
import { RawSphinxRecognizer } from '#speech/sphinx';
import { readLocalSettings } from '../settings.ts';
import { DIARIZATION_SET_FILE, type DiarizationSplit, diarizationSplit } from './diarization-set.ts';
import { type ChannelTurn, diarizationScores, wordErrors } from './metrics.ts';

const usage = `Usage: npm run eval -- --samples DIR [--json FILE] [--url URL --key KEY] [--baseline]

Submits every file of DIR/manifest.json and DIR/diarization.json (if present) through the service's HTTP
API with the options that fit its kind, and prints per file and per kind: word error rate (case-insensitive
and case-sensitive), diarization error rate, word-level diarization error and speaker count, channel
attribution, turn timestamp error, the outcome of bad files against their expectation, and the real-time
factor; diarization figures also for the tuning and the held-out part of the diarization set.
  --url, --key   a running service (npm start prints both); without them a local runtime is started
  --baseline     also run pocketsphinx_continuous directly, with its default settings, over the same
                 decoded audio (each scored channel, or the mono mix) of every file with a reference
  --json FILE    write every measurement as JSON`;

const turn = z.object({
  speaker: z.string().optional(),
  channel: z.number().optional(),
  start: z.number(),
  end: z.number(),
  text: z.string().optional(),
});
const sample = z.object({
  id: z.string(),
  file: z.string(),
  kind: z.string(),
  duration_s: z.number().nullish(),
  reference_text: z.string().nullish(),
  expect: z.string().nullish(),
  speakers: z.array(turn).nullish(),
  segments: z.array(turn).nullish(),
  channel_references: z
    .array(
      z.object({
        channel: z.number(),
        reference_text: z.string().optional(),
        segments: z.array(turn).default([]),
      }),
    )
    .nullish(),
});
type Sample = z.infer<typeof sample>;

interface Measurement {
  id: string;
  /** Milliseconds from submission to a finished job, and of audio, for the real-time factor. */
  elapsedMs?: number;
  audioMs?: number;
  kind: string;
  /** Where a diarized file belongs: the tuning set or the held-out set. */
  split?: DiarizationSplit;
  /** Listed in diarization.json rather than manifest.json. */
  diarizationSet?: boolean;
  outcome: string;
  expected?: string;
  matchesExpectation?: boolean;
  wordErrors?: number;
  casedWordErrors?: number;
  referenceWords?: number;
  baselineWordErrors?: number;
  der?: number;
  /** Words given the wrong speaker, of the words judged (see wordDiarizationErrors). */
  wordsWrongSpeaker?: number;
  wordsJudged?: number;
  speakers?: number;
  referenceSpeakers?: number;
  channelAccuracy?: number;
  timestampErrorMs?: number;
  rtf?: number;
}

/** A file to submit: a manifest entry, or one of the diarization set with its split. */
interface Submission {
  entry: Sample;
  split?: DiarizationSplit;
  diarizationSet?: boolean;
}

/**
 * The options a file is submitted with. Conversations are diarized; stereo files are transcribed per
 * channel, and those of the diarization set are diarized too (one voice per channel is the right answer).
 */
function optionsFor(submission: Submission): Record<string, string> {
  const { kind } = submission.entry;
  if (kind === 'conversation') return { speaker_diarization: 'true' };
  if (kind === 'stereo')
    return submission.diarizationSet
      ? { dual_channel: 'true', speaker_diarization: 'true' }
      : { dual_channel: 'true' };
  return {};
}

async function readSamples(directory: string): Promise<Submission[]> {
  const read = async (file: string) =>
    z.array(sample).parse(JSON.parse(await readFile(join(directory, file), 'utf8')));
  const manifest: Submission[] = (await read('manifest.json')).map((entry) => ({
    entry,
    // The manifest's conversations are what the first diarizer was tuned on.
    ...(entry.kind === 'conversation' ? { split: 'tuning' as const } : {}),
  }));
  const diarizationSet = existsSync(join(directory, DIARIZATION_SET_FILE))
    ? (await read(DIARIZATION_SET_FILE)).map((entry) => ({
        entry,
        split: diarizationSplit(entry.id),
        diarizationSet: true,
      }))
    : [];
  return [...manifest, ...diarizationSet];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      samples: { type: 'string' },
      json: { type: 'string' },
      url: { type: 'string' },
      key: { type: 'string' },
      baseline: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help || !values.samples) {
    console.log(usage);
    process.exitCode = values.help ? 0 : 1;
    return;
  }
  const directory = resolve(values.samples);
  const submissions = await readSamples(directory);

  let service =
    values.url && values.key ? { url: values.url, apiKey: values.key, stop: async () => {} } : undefined;
  if (!service) {
    console.log('Starting a local runtime for the evaluation…');
    // The worker's per-job logs would drown the table; the level is read when the logger is loaded.
    process.env[ENV.logLevel] ??= 'WARN';
    const { startLocalRuntime } = await import('../runtime.ts');
    service = await startLocalRuntime({ ...readLocalSettings(), port: 0, workerConcurrency: 1 }, () => {});
  }
  const measurements: Measurement[] = [];
  try {
    for (const submission of submissions) {
      const { entry } = submission;
      const measurement = await evaluate(service, directory, submission);
      if (values.baseline && measurement.referenceWords) {
        measurement.baselineWordErrors = await rawPocketSphinxErrors(join(directory, entry.file), entry);
      }
      measurements.push(measurement);
      console.log(formatRow(measurement));
    }
  } finally {
    await service.stop();
  }
  console.log('');
  for (const line of summarize(measurements, values.baseline ?? false)) console.log(line);
  if (values.json) {
    await writeFile(
      values.json,
      JSON.stringify({ measurements, summary: summarize(measurements, false) }, null, 2),
    );
    console.log(`\nWrote ${values.json}`);
  }
}

async function evaluate(
  service: { url: string; apiKey: string },
  directory: string,
  submission: Submission,
): Promise<Measurement> {
  const { entry, split, diarizationSet } = submission;
  const measurement: Measurement = {
    id: entry.id,
    kind: entry.kind,
    outcome: '',
    ...(split ? { split } : {}),
    ...(diarizationSet ? { diarizationSet } : {}),
  };
  if (entry.expect) measurement.expected = entry.expect;
  const audio = await readFile(join(directory, entry.file));
  const form = new FormData();
  form.append('audio', new Blob([new Uint8Array(audio)]), entry.file.split('/').at(-1) ?? 'audio');
  for (const [name, value] of Object.entries(optionsFor(submission))) form.append(name, value);
  const started = Date.now();
  const api = (path: string, query: Record<string, string> = {}) =>
    `${service.url}${path}?${new URLSearchParams({ ...query, 'x-api-key': service.apiKey })}`;
  const submitted = await fetch(api('/v1-beta/transcript'), { method: 'POST', body: form });
  const body = await submitted.json();
  if (!submitted.ok) {
    measurement.outcome = `refused ${submitted.status} ${body.error?.code}`;
  } else {
    let record: StatusRecord;
    for (;;) {
      record = (await (
        await fetch(api('/v1-beta/transcript/status', { id: body.id }))
      ).json()) as StatusRecord;
      if (record.status === 'completed' || record.status === 'error') break;
      await new Promise((done) => setTimeout(done, 100));
    }
    const result = record.results?.results;
    measurement.outcome = record.status === 'error' ? `error ${record.error?.code}` : 'completed';
    if (result) {
      if (result.audio_duration_ms > 0) {
        measurement.elapsedMs = Date.now() - started;
        measurement.audioMs = result.audio_duration_ms;
        measurement.rtf = measurement.elapsedMs / measurement.audioMs;
      }
      score(measurement, entry, result);
    }
  }
  if (entry.expect) measurement.matchesExpectation = meetsExpectation(entry.expect, measurement);
  return measurement;
}

function meetsExpectation(expect: string, measurement: Measurement): boolean {
  const completed = measurement.outcome === 'completed';
  const failed = measurement.outcome.startsWith('error') || measurement.outcome.startsWith('refused 400');
  switch (expect) {
    case 'error':
      return failed;
    case 'error_or_partial':
      return completed || failed;
    case 'empty_transcript':
      return completed && measurement.referenceWords === undefined && measurement.wordErrors === 0;
    case 'transcribe':
      return completed;
    default:
      return false;
  }
}

function score(measurement: Measurement, entry: Sample, result: TranscriptResult): void {
  if (entry.expect === 'empty_transcript') {
    measurement.wordErrors = result.words.length;
    return;
  }
  const pairs = scoredChannels(entry).map(({ channel, reference }) => ({
    reference,
    hypothesis:
      channel === undefined
        ? result.transcript
        : joinWords(result.words.filter((word) => word.channel === channel + 1)),
  }));
  if (pairs.length) {
    measurement.wordErrors = 0;
    measurement.casedWordErrors = 0;
    measurement.referenceWords = 0;
    for (const { reference, hypothesis } of pairs) {
      const plain = wordErrors(reference, hypothesis);
      measurement.wordErrors += plain.errors;
      measurement.referenceWords += plain.referenceWords;
      measurement.casedWordErrors += wordErrors(reference, hypothesis, { keepCase: true }).errors;
    }
  }
  if (measurement.split && entry.speakers?.length) {
    const reference: ChannelTurn[] = entry.speakers.map((t) => ({
      speaker: t.speaker ?? '',
      startMs: t.start * 1000,
      endMs: t.end * 1000,
      ...(t.channel !== undefined ? { channel: t.channel } : {}),
    }));
    const scores = diarizationScores(result, reference);
    measurement.der = scores.der;
    measurement.wordsWrongSpeaker = scores.wrong;
    measurement.wordsJudged = scores.judged;
    measurement.speakers = new Set(result.words.map((word) => word.speaker)).size;
    measurement.referenceSpeakers = new Set(reference.map((t) => t.speaker)).size;
  }
  const channelTurns = (entry.channel_references ?? []).flatMap((reference) =>
    reference.segments.map((segment) => ({ ...segment, channel: reference.channel + 1 })),
  );
  if (channelTurns.length) measurement.channelAccuracy = channelAccuracy(result.words, channelTurns);
  const turns = channelTurns.length ? channelTurns : (entry.segments ?? []);
  if (turns.length) measurement.timestampErrorMs = turnBoundaryError(result.words, turns);
}

/** Share of words, spoken while one channel alone talks, that are attributed to that channel. */
function channelAccuracy(
  words: Word[],
  turns: { channel: number; start: number; end: number }[],
): number | undefined {
  let judged = 0;
  let correct = 0;
  for (const word of words) {
    const middle = (word.startTime + word.endTime) / 2000;
    const active = new Set(turns.filter((t) => middle >= t.start && middle <= t.end).map((t) => t.channel));
    if (active.size !== 1) continue;
    judged += 1;
    if (active.has(word.channel ?? 0)) correct += 1;
  }
  return judged ? correct / judged : undefined;
}

/** Mean distance (ms) between each reference turn's start and end and its first and last word. */
function turnBoundaryError(
  words: Word[],
  turns: { start: number; end: number; channel?: number }[],
): number | undefined {
  const errors: number[] = [];
  for (const turn of turns) {
    const inside = words.filter((word) => {
      const middle = (word.startTime + word.endTime) / 2000;
      return (
        middle >= turn.start &&
        middle <= turn.end &&
        (turn.channel === undefined || word.channel === turn.channel)
      );
    });
    const first = inside[0];
    const last = inside.at(-1);
    if (!first || !last) continue;
    errors.push(Math.abs(first.startTime - turn.start * 1000), Math.abs(last.endTime - turn.end * 1000));
  }
  return errors.length ? errors.reduce((a, b) => a + b, 0) / errors.length : undefined;
}

/** What is scored of a file: each channel against its own reference when it has them, else the whole text. */
function scoredChannels(entry: Sample): { channel?: number; reference: string }[] {
  const perChannel = (entry.channel_references ?? []).filter((reference) => reference.reference_text);
  if (perChannel.length)
    return perChannel.map((reference) => ({
      channel: reference.channel,
      reference: reference.reference_text ?? '',
    }));
  return entry.reference_text ? [{ reference: entry.reference_text }] : [];
}

/**
 * Raw PocketSphinx on the same audio: the file decoded as the service decodes it (16 kHz, each scored
 * channel or the mono mix), then `pocketsphinx_continuous` over each whole file with its default settings,
 * in one process: no pieces, no speech gates, no tuning. The service must be no worse than this.
 */
async function rawPocketSphinxErrors(file: string, entry: Sample): Promise<number> {
  const workDir = await mkdtemp(join(tmpdir(), 'eval-raw-'));
  try {
    const scored = scoredChannels(entry);
    const channels = scored.flatMap(({ channel }) => (channel === undefined ? [] : [channel]));
    const wavFiles = await decodeToWav(file, workDir, channels.length ? channels : undefined);
    const raw = new RawSphinxRecognizer();
    let errors = 0;
    for (const [index, { reference }] of scored.entries()) {
      const wavFile = wavFiles[index];
      const words = wavFile ? await raw.recognize(wavFile) : [];
      errors += wordErrors(reference, words.map((word) => word.text).join(' ')).errors;
    }
    return errors;
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

const percent = (value: number | undefined) => (value === undefined ? '—' : `${(value * 100).toFixed(1)}%`);

function formatRow(m: Measurement): string {
  const wer = m.referenceWords ? percent((m.wordErrors ?? 0) / m.referenceWords) : '—';
  const cased = m.referenceWords ? percent((m.casedWordErrors ?? 0) / m.referenceWords) : '—';
  const parts = [
    m.id.padEnd(44),
    m.kind.padEnd(12),
    m.outcome.padEnd(28),
    `WER ${wer.padStart(6)}`,
    `cased ${cased.padStart(6)}`,
  ];
  if (m.baselineWordErrors !== undefined && m.referenceWords)
    parts.push(`raw ${percent(m.baselineWordErrors / m.referenceWords)}`);
  if (m.der !== undefined)
    parts.push(`DER ${percent(m.der)}`, `speakers ${m.speakers}/${m.referenceSpeakers}`);
  if (m.wordsJudged) parts.push(`word speaker error ${percent((m.wordsWrongSpeaker ?? 0) / m.wordsJudged)}`);
  if (m.split) parts.push(m.split);
  if (m.channelAccuracy !== undefined) parts.push(`channels ${percent(m.channelAccuracy)}`);
  if (m.timestampErrorMs !== undefined) parts.push(`turn time error ${Math.round(m.timestampErrorMs)} ms`);
  if (m.expected) parts.push(`expect ${m.expected}: ${m.matchesExpectation ? 'ok' : 'MISMATCH'}`);
  if (m.rtf !== undefined) parts.push(`RTF ${m.rtf.toFixed(2)}`);
  return parts.join('  ');
}

/**
 * Per kind of the manifest, then per part of the diarization split: word error rates over all words,
 * mean DER, word-level diarization error over all judged words, shares of right answers, RTF.
 */
export function summarize(measurements: Measurement[], withBaseline: boolean): string[] {
  const manifest = measurements.filter((m) => !m.diarizationSet);
  const kinds = [...new Set(manifest.map((m) => m.kind))];
  const groups = [
    ...kinds.map((kind) => ({ name: kind, of: manifest.filter((m) => m.kind === kind) })),
    ...(['tuning', 'held-out'] as const).map((split) => ({
      name: `diarization ${split}`,
      of: measurements.filter((m) => m.split === split),
    })),
  ].filter((group) => group.of.length > 0);
  return groups.map(({ name, of }) => {
    const sum = (pick: (m: Measurement) => number | undefined) =>
      of.reduce((total, m) => total + (pick(m) ?? 0), 0);
    const mean = (values: (number | undefined)[]) => {
      const known = values.filter((value): value is number => value !== undefined);
      return known.length ? known.reduce((a, b) => a + b, 0) / known.length : undefined;
    };
    const words = sum((m) => m.referenceWords);
    const parts = [`${name.padEnd(22)} files ${String(of.length).padStart(3)}`];
    if (words) {
      parts.push(
        `WER ${percent(sum((m) => m.wordErrors) / words)}`,
        `cased WER ${percent(sum((m) => m.casedWordErrors) / words)}`,
      );
      if (withBaseline && of.some((m) => m.baselineWordErrors !== undefined)) {
        parts.push(`raw PocketSphinx WER ${percent(sum((m) => m.baselineWordErrors) / words)}`);
      }
    }
    const ders = of.map((m) => m.der);
    if (ders.some((der) => der !== undefined)) {
      const counted = of.filter((m) => m.speakers !== undefined);
      parts.push(
        `DER ${percent(mean(ders))}`,
        `speaker count right ${counted.filter((m) => m.speakers === m.referenceSpeakers).length}/${counted.length}`,
      );
      const judged = sum((m) => m.wordsJudged);
      if (judged) parts.push(`word speaker error ${percent(sum((m) => m.wordsWrongSpeaker) / judged)}`);
    }
    const channels = mean(of.map((m) => m.channelAccuracy));
    if (channels !== undefined) parts.push(`channel attribution ${percent(channels)}`);
    const timestamps = mean(of.map((m) => m.timestampErrorMs));
    if (timestamps !== undefined) parts.push(`turn time error ${Math.round(timestamps)} ms`);
    const expected = of.filter((m) => m.expected);
    if (expected.length)
      parts.push(
        `expectations met ${expected.filter((m) => m.matchesExpectation).length}/${expected.length}`,
      );
    // Processing time over audio time, summed: short files do not outweigh long ones.
    const audio = sum((m) => m.audioMs);
    if (audio > 0) parts.push(`RTF ${(sum((m) => m.elapsedMs) / audio).toFixed(2)}`);
    return parts.join('  ');
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
});
