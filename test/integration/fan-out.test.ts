import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3Client, createSqsClient } from '#aws/clients';
import { awsServices } from '#aws/services';
import { ENV, MEDIA_PREFIXES } from '#commons/contract';
import { toStatusRecord } from '#core/job';
import { parseJobOptions } from '#core/options';
import type { Transcription } from '#core/ports';
import type { Word } from '#core/result';
import { wordErrorRate } from '#local/evaluation/metrics';
import { QueuePoller } from '#local/poller';
import { cutAround, LocalTranscriber } from '#speech/local-transcriber';
import { runProcess } from '#speech/process';
import { SphinxRecognizer } from '#speech/sphinx';
import { eventually } from '#test/helpers/eventually';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { diarizationSamples, samplePath } from '#test/helpers/samples';
import { submitForm } from '#test/helpers/submissions';
import { handler as worker } from '#worker/handler';

/**
 * Long audio fanned out across workers, against the emulators: a two-speaker conversation played twice
 * (so that the same voices recur in chunks far apart), cut into chunks of 5 to 20 s, each transcribed
 * by whichever worker is free, and assembled by the worker of the last chunk.
 */

const CHUNK_SECONDS = 10;
/** Long enough for a loaded machine to transcribe the file. */
const LONG_WAIT_MS = 180_000;
const GAP_SECONDS = 1;
const children: ChildProcess[] = [];
let workDir: string;
let longFile: string;
/** Where the second playing of the conversation starts, in milliseconds. */
let secondStartMs: number;
/** The same steps in one process, with the same cut: what the fanned-out service must give. */
let reference: Transcription;
/** The whole file as one chunk: where words at the cuts must neither go missing nor be doubled. */
let uncut: Transcription;

const twoSpeakers = diarizationSamples.find(
  (sample) =>
    sample.speakers.every((turn) => turn.channel === undefined) &&
    new Set(sample.speakers.map((turn) => turn.speaker)).size === 2,
);
const OPTIONS = { speaker_diarization: 'true', punctuate: 'false' };

beforeAll(async () => {
  process.env[ENV.heartbeatVisibilitySeconds] = '3';
  process.env[ENV.retryBaseSeconds] = '0';
  process.env[ENV.chunkSeconds] = String(CHUNK_SECONDS);
  await useFreshResources({ visibilityTimeoutSeconds: 30 });
  if (!twoSpeakers) throw new Error('The samples have no two-speaker conversation.');
  workDir = await mkdtemp(join(tmpdir(), 'fan-out-'));
  longFile = join(workDir, 'twice.wav');
  const sample = samplePath(twoSpeakers);
  const { code, stderr } = await runProcess(
    'ffmpeg',
    [
      '-v',
      'error',
      '-i',
      sample,
      '-i',
      sample,
      '-filter_complex',
      `[0:a]aformat=sample_rates=16000:channel_layouts=mono,apad=pad_dur=${GAP_SECONDS}[a];` +
        '[1:a]aformat=sample_rates=16000:channel_layouts=mono[b];[a][b]concat=n=2:v=0:a=1[out]',
      '-map',
      '[out]',
      longFile,
    ],
    60_000,
  );
  if (code !== 0) throw new Error(`ffmpeg: ${stderr}`);
  secondStartMs = Math.round((twoSpeakers.duration_s ?? 0) * 1000) + GAP_SECONDS * 1000;
  const options = parseJobOptions(OPTIONS);
  const transcribe = (seconds: number) =>
    new LocalTranscriber(new SphinxRecognizer(), { cut: cutAround(seconds) }).transcribe({
      audioFile: longFile,
      workDir,
      options,
    });
  reference = await transcribe(CHUNK_SECONDS);
  uncut = await transcribe(600);
}, 600_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await rm(workDir, { recursive: true, force: true });
});

async function submitLong(tenantId: string): Promise<string> {
  const form = new FormData();
  form.append('audio', new Blob([await readFile(longFile)]), 'twice.wav');
  for (const [name, value] of Object.entries(OPTIONS)) form.append(name, value);
  const { status, body } = await submitForm(form, tenantId);
  expect(status).toBe(200);
  return body.id ?? '';
}

const job = (id: string) => awsServices().jobs.get(id);

/** Polls the jobs queue with `workers` workers until the job ends, recording the progress seen on the way. */
async function runToEnd(id: string, workers: number) {
  const poller = new QueuePoller({
    sqs: createSqsClient(awsServices().config),
    queueUrl: awsServices().config.jobsQueueUrl,
    handler: worker,
    batchSize: 1,
    concurrency: workers,
    region: 'us-east-1',
  });
  const progress: string[] = [];
  await poller.start();
  try {
    const ended = await eventually(
      () => job(id),
      (value) => {
        const seen = value && toStatusRecord(value).progress;
        if (seen) progress.push(`${seen.chunks_done}/${seen.chunks_total}`);
        return value?.status === 'completed' || value?.status === 'error';
      },
      LONG_WAIT_MS,
    );
    return { ended, progress: [...new Set(progress)] };
  } finally {
    await poller.stop();
  }
}

const plain = (words: Word[]) => words.map((word) => word.word).join(' ');

async function workObjects(): Promise<string[]> {
  const { Contents = [] } = await createS3Client(awsServices().config).send(
    new ListObjectsV2Command({ Bucket: awsServices().config.mediaBucket, Prefix: MEDIA_PREFIXES.work }),
  );
  return Contents.map((object) => object.Key ?? '');
}

describe('long audio fanned out across workers', () => {
  it('is cut into chunks, shows progress, and is assembled into what one process gives', async () => {
    const id = await submitLong('tenant-fan-out');
    const { ended, progress } = await runToEnd(id, 2);
    expect(ended?.status).toBe('completed');
    const total = Number(progress[0]?.split('/')[1]);
    expect(total).toBeGreaterThanOrEqual(3);
    expect(progress.length).toBeGreaterThan(1);
    const result = await awsServices().media.getResult(ended?.resultKey ?? '');
    expect(result.words).toEqual(reference.words);
    expect(result.utterances).toEqual(reference.utterances);
    expect(await workObjects()).toEqual([]);
  });

  it('loses and doubles no word at the cuts: as accurate as the file transcribed as one chunk', () => {
    const truth = `${twoSpeakers?.reference_text} ${twoSpeakers?.reference_text}`;
    const chunkedError = wordErrorRate(truth, plain(reference.words));
    const uncutError = wordErrorRate(truth, plain(uncut.words));
    // PocketSphinx's own variation between cuts is a few points either way; a lost or doubled stretch is more.
    expect(chunkedError).toBeLessThanOrEqual(uncutError + 0.05);
    expect(Math.abs(reference.words.length - uncut.words.length)).toBeLessThanOrEqual(
      uncut.words.length * 0.1,
    );
    // A word heard by two chunks (in one's edge) would appear twice, overlapping itself.
    reference.words.forEach((word, index) => {
      const next = reference.words[index + 1];
      if (next && next.word === word.word) expect(next.startTime).toBeGreaterThanOrEqual(word.endTime - 50);
    });
  });

  it('numbers speakers consistently across chunks far apart: the same voice is the same speaker', () => {
    const speakers = new Set(reference.words.map((word) => word.speaker));
    expect(speakers.size).toBe(2);
    // Each word of the second playing and the same word of the first, said by the same voice.
    const first = reference.words.filter((word) => word.startTime < secondStartMs);
    let matched = 0;
    let same = 0;
    for (const word of reference.words.filter((w) => w.startTime >= secondStartMs)) {
      const twin = first.find(
        (candidate) =>
          candidate.word === word.word &&
          Math.abs(candidate.startTime + secondStartMs - word.startTime) < 300,
      );
      if (!twin) continue;
      matched += 1;
      if (twin.speaker === word.speaker) same += 1;
    }
    expect(matched).toBeGreaterThan(first.length / 2);
    expect(same / matched).toBeGreaterThanOrEqual(0.9);
  });

  it('completes once when a chunk worker is killed mid-chunk: only its chunk is done again', async () => {
    const id = await submitLong('tenant-fan-out-killed');
    // node itself, not the tsx launcher: the signal must reach the process that does the work.
    const child = spawn(process.execPath, ['--import', 'tsx', 'local/worker-process.ts'], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    // Killed once it cut the file and finished a chunk: it is in the middle of the next one.
    const midway = await eventually(
      () => job(id),
      (value) => (value?.chunksDone?.length ?? 0) >= 1,
      LONG_WAIT_MS,
    );
    expect(midway?.chunksTotal).toBeGreaterThan(1);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect((await job(id))?.status).toBe('processing');

    const { ended } = await runToEnd(id, 2);
    expect(ended?.status).toBe('completed');
    const result = await awsServices().media.getResult(ended?.resultKey ?? '');
    expect(result.words).toEqual(reference.words);
    expect(await workObjects()).toEqual([]);
  });
});
