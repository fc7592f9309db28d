import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ASYNC_CHECK_INTERVAL_SECONDS,
  ASYNC_DEADLINE_MS,
  audioKey,
  resultKey,
  workKey,
} from '#commons/contract';
import { deleteJob } from '#core/delete-job';
import { JobFailure } from '#core/errors';
import { type Job, newJob, newJobId, toStatusRecord } from '#core/job';
import type { WorkerMessage } from '#core/messages';
import { parseJobOptions } from '#core/options';
import type {
  AsyncTranscriber,
  AsyncTranscriptionState,
  ChunkedTranscriber,
  SyncTranscriber,
  Transcription,
} from '#core/ports';
import {
  CHECK_DUE_MS,
  DEFAULT_TIMINGS,
  failAbandonedJob,
  handleWorkerMessage,
  type ProcessDeps,
  RetryLater,
  retryDelaySeconds,
} from '#core/process-job';
import {
  InMemoryJobQueue,
  InMemoryJobStore,
  InMemoryMediaStore,
  manualClock,
  testLease,
} from '#test/helpers/memory-ports';

const AUDIO = Buffer.from('pretend audio');
const VISIBILITY_MS = DEFAULT_TIMINGS.heartbeatVisibilitySeconds * 1000;
/** The lease a worker takes: five sixths of the heartbeat's visibility. */
const LEASE_MS = (VISIBILITY_MS * 5) / 6;

const transcription = (text = 'hello there'): Transcription => ({
  transcript: text,
  words: text.split(' ').map((word, index) => ({
    startTime: index * 100,
    endTime: index * 100 + 90,
    word,
    confidence: 0.9,
  })),
  audio_duration_ms: 1000,
  engine: 'sphinx',
});

/** A sync transcriber that does what each test tells it, and records what it was given. */
function scriptedTranscriber(...steps: (() => Transcription)[]): SyncTranscriber & { audio: Buffer[] } {
  const audio: Buffer[] = [];
  return {
    mode: 'sync',
    audio,
    async transcribe({ audioFile }) {
      audio.push(await readFile(audioFile));
      const step = steps.shift();
      if (!step) throw new Error('transcribed more often than expected');
      return step();
    },
  };
}

function asyncTranscriber(states: AsyncTranscriptionState[]): AsyncTranscriber & { starts: number } {
  const transcriber = {
    mode: 'async' as const,
    starts: 0,
    async start() {
      transcriber.starts += 1;
      return { audio_duration_ms: 4200 };
    },
    async poll() {
      return states.shift() ?? { state: 'running' };
    },
  };
  return transcriber;
}

let jobs: InMemoryJobStore;
let media: InMemoryMediaStore;
let queue: InMemoryJobQueue;
let clock: ReturnType<typeof manualClock>;
let summaries: number;
let fetched: string[];

function deps(transcriber: ProcessDeps['transcriber']): ProcessDeps {
  return {
    jobs,
    media,
    queue,
    transcriber,
    summarizer: {
      async summarize(_transcription, request) {
        summaries += 1;
        return {
          ...(request.tldr ? { tldr: 'short' } : {}),
          ...(request.short_hand_notes ? { short_hand_notes: '- note' } : {}),
        };
      },
    },
    fetcher: {
      async fetchInto(url, store) {
        fetched.push(url);
        return store(Readable.from([AUDIO]));
      },
    },
    clock,
    timings: DEFAULT_TIMINGS,
  };
}

/** A delivery of a message that records how long the worker hid it, each time. */
function delivery(receiveCount = 1): {
  receiveCount: number;
  hides: number[];
  hide(s: number): Promise<void>;
} {
  const hides: number[] = [];
  return {
    receiveCount,
    hides,
    async hide(seconds) {
      hides.push(seconds);
    },
  };
}

/** Handles a message as the worker does, and answers its outcome. */
async function handle(transcriber: ProcessDeps['transcriber'], message: WorkerMessage, receiveCount = 1) {
  return (await handleWorkerMessage(deps(transcriber), message, delivery(receiveCount))).outcome;
}

/** A queued job submitted by address: its audio is not in the store yet. */
async function jobByAddress(audioUrl: string): Promise<string> {
  const id = newJobId();
  await jobs.create(newJob({ id, tenantId: 'acme', options: parseJobOptions({}), now: clock(), audioUrl }));
  return id;
}

async function queuedJob(fields: Record<string, string> = {}): Promise<Job> {
  const id = newJobId();
  const job = newJob({ id, tenantId: 'acme', options: parseJobOptions(fields), now: clock() });
  media.objects.set(audioKey('acme', id), AUDIO);
  await jobs.create(job);
  return job;
}

beforeEach(() => {
  jobs = new InMemoryJobStore();
  media = new InMemoryMediaStore();
  queue = new InMemoryJobQueue();
  clock = manualClock();
  summaries = 0;
  fetched = [];
});

afterEach(() => {
  vi.useRealTimers();
});

const process = (jobId: string) => ({ kind: 'process' as const, jobId });

describe('a sync transcriber', () => {
  it('claims the job, transcribes its audio, stores the result and completes the job', async () => {
    const job = await queuedJob();
    const transcriber = scriptedTranscriber(() => transcription());
    expect(await handle(transcriber, process(job.id))).toBe('completed');
    expect(transcriber.audio).toEqual([AUDIO]);
    const done = await jobs.get(job.id);
    expect(done).toMatchObject({
      status: 'completed',
      resultKey: resultKey('acme', job.id),
      audio_duration_ms: 1000,
    });
    for (const gone of ['leaseExpiresAt', 'leaseOwner', 'dueAt']) expect(done).not.toHaveProperty(gone);
    expect(await media.getResult(resultKey('acme', job.id))).toEqual(transcription());
    expect(summaries).toBe(0);
  });

  it('adds only the summaries the job asked for', async () => {
    const job = await queuedJob({ tldr: 'true' });
    await handle(
      scriptedTranscriber(() => transcription()),
      process(job.id),
    );
    const result = await media.getResult(resultKey('acme', job.id));
    expect(result.tldr).toBe('short');
    expect(result).not.toHaveProperty('short_hand_notes');
    expect(summaries).toBe(1);
  });

  it('fetches the audio of a job submitted by address into the store once, before transcribing it', async () => {
    const id = await jobByAddress('https://x.test/a.mp3');
    const transcriber = scriptedTranscriber(
      () => {
        throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
      },
      () => transcription(),
    );
    await handleWorkerMessage(deps(transcriber), process(id), delivery()).catch(() => undefined);
    expect(await handle(transcriber, process(id), 2)).toBe('completed');
    expect(fetched).toEqual(['https://x.test/a.mp3']);
    expect(transcriber.audio).toEqual([AUDIO, AUDIO]);
    expect(media.objects.get(audioKey('acme', id))).toEqual(AUDIO);
  });

  it('hides the message before any work, and keeps it hidden and the lease held while the work goes on', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const job = await queuedJob();
    let finishWork = () => {};
    const working = new Promise<void>((resolve) => {
      finishWork = resolve;
    });
    const transcriber: ProcessDeps['transcriber'] = {
      mode: 'sync',
      async transcribe() {
        await working;
        return transcription();
      },
    };
    const received = delivery();
    const handled = handleWorkerMessage(deps(transcriber), process(job.id), received);
    await vi.waitFor(async () => expect((await jobs.get(job.id))?.leaseOwner).toBeDefined());
    expect(received.hides).toEqual([DEFAULT_TIMINGS.heartbeatVisibilitySeconds]);
    const leased = (await jobs.get(job.id))?.leaseExpiresAt ?? 0;
    expect(leased).toBe(clock().getTime() + LEASE_MS);

    clock.advance(VISIBILITY_MS / 3);
    await vi.advanceTimersByTimeAsync(VISIBILITY_MS / 3);
    expect(received.hides).toHaveLength(2);
    expect((await jobs.get(job.id))?.leaseExpiresAt).toBe(leased + VISIBILITY_MS / 3);

    finishWork();
    expect((await handled).outcome).toBe('completed');
    await vi.advanceTimersByTimeAsync(VISIBILITY_MS);
    expect(received.hides).toHaveLength(2);
  });

  it('ends the job in error at once for input that can never succeed', async () => {
    const job = await queuedJob();
    const transcriber = scriptedTranscriber(() => {
      throw new JobFailure('unsupported_media', 'not audio');
    });
    expect(await handle(transcriber, process(job.id))).toBe('failed');
    expect(await jobs.get(job.id)).toMatchObject({
      status: 'error',
      error: { code: 'unsupported_media', message: 'not audio' },
    });
  });

  it('ends the job in error with internal for a bug, which no retry would fix, and hands the bug to the log', async () => {
    const job = await queuedJob();
    const bug = new RangeError('index out of range');
    const transcriber = scriptedTranscriber(() => {
      throw bug;
    });
    const result = await handleWorkerMessage(deps(transcriber), process(job.id), delivery());
    expect(result).toEqual({ outcome: 'failed', bug });
    const failed = await jobs.get(job.id);
    expect(failed).toMatchObject({ status: 'error', error: { code: 'internal' } });
    expect(failed?.error?.message).not.toContain('index out of range');
  });

  it('backs a transient failure off, releases the lease at once, and lets the retry complete the job', async () => {
    const job = await queuedJob();
    const transcriber = scriptedTranscriber(
      () => {
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      },
      () => transcription('second try'),
    );
    const first = delivery(1);
    const failure = await handleWorkerMessage(deps(transcriber), process(job.id), first).catch(
      (error) => error,
    );
    expect(failure).toBeInstanceOf(RetryLater);
    expect(failure.delaySeconds).toBe(DEFAULT_TIMINGS.retryBaseSeconds);
    expect(first.hides.at(-1)).toBe(DEFAULT_TIMINGS.retryBaseSeconds);
    expect(await jobs.get(job.id)).toMatchObject({ status: 'processing', leaseExpiresAt: 0 });

    expect(await handle(transcriber, process(job.id), 2)).toBe('completed');
    expect((await media.getResult(resultKey('acme', job.id))).transcript).toBe('second try');
  });

  it('waits four times longer after each failed attempt, never more than 15 minutes', () => {
    const delays = [1, 2, 3, 4, 5, 6].map((count) => retryDelaySeconds(DEFAULT_TIMINGS, count));
    expect(delays).toEqual([15, 60, 240, 900, 900, 900]);
  });

  it("drops a message for a job another worker holds, and takes over once that worker's lease ran out", async () => {
    const job = await queuedJob();
    await jobs.claim(job.id, {
      owner: 'dead-worker',
      now: clock(),
      until: new Date(clock().getTime() + LEASE_MS),
      dueAt: new Date(clock().getTime() + LEASE_MS),
    });
    const transcriber = scriptedTranscriber(() => transcription());
    expect(await handle(transcriber, process(job.id))).toBe('busy');
    expect(transcriber.audio).toHaveLength(0);
    clock.advance(LEASE_MS + 1);
    expect(await handle(transcriber, process(job.id))).toBe('completed');
  });

  it('never runs a finished job again, and skips a job that does not exist', async () => {
    const job = await queuedJob();
    const transcriber = scriptedTranscriber(() => transcription());
    await handle(transcriber, process(job.id));
    const finished = await jobs.get(job.id);
    expect(await handle(transcriber, process(job.id))).toBe('skipped');
    expect(await handle(transcriber, process(newJobId()))).toBe('skipped');
    expect(await jobs.get(job.id)).toEqual(finished);
    expect(transcriber.audio).toHaveLength(1);
  });
});

describe('an async transcriber', () => {
  it('hands the job off, holds it until the deadline, makes it due after a missed check, and schedules one', async () => {
    const job = await queuedJob();
    const transcriber = asyncTranscriber([]);
    expect(await handle(transcriber, process(job.id))).toBe('started');
    expect(await jobs.get(job.id)).toMatchObject({
      status: 'processing',
      handedOffAt: clock().toISOString(),
      audio_duration_ms: 4200,
      leaseExpiresAt: clock().getTime() + ASYNC_DEADLINE_MS,
      dueAt: new Date(clock().getTime() + CHECK_DUE_MS).toISOString(),
    });
    expect(queue.sent).toEqual([{ jobId: job.id, check: 1, delaySeconds: ASYNC_CHECK_INTERVAL_SECONDS }]);

    // The start message delivered again finds the job held, and is dropped.
    clock.advance(LEASE_MS * 2);
    expect(await handle(transcriber, process(job.id))).toBe('busy');
    expect(transcriber.starts).toBe(1);
  });

  it('schedules the next check while the transcriber runs and moves the due time; an event alone schedules nothing', async () => {
    const job = await queuedJob();
    const transcriber = asyncTranscriber([]);
    await handle(transcriber, process(job.id));
    queue.sent.length = 0;
    clock.advance(ASYNC_CHECK_INTERVAL_SECONDS * 1000);
    expect(await handle(transcriber, { kind: 'check', jobId: job.id, attempt: 1 })).toBe('waiting');
    expect(queue.sent).toEqual([{ jobId: job.id, check: 2, delaySeconds: ASYNC_CHECK_INTERVAL_SECONDS }]);
    expect((await jobs.get(job.id))?.dueAt).toBe(new Date(clock().getTime() + CHECK_DUE_MS).toISOString());
    expect(await handle(transcriber, { kind: 'transcribe-event', jobId: job.id, status: 'COMPLETED' })).toBe(
      'waiting',
    );
    expect(queue.sent).toHaveLength(1);
  });

  it('gives the job up when the transcriber is still busy at the deadline', async () => {
    const job = await queuedJob();
    const transcriber = asyncTranscriber([]);
    await handle(transcriber, process(job.id));
    clock.advance(ASYNC_DEADLINE_MS);
    expect(await handle(transcriber, { kind: 'check', jobId: job.id, attempt: 36 })).toBe('failed');
    expect(await jobs.get(job.id)).toMatchObject({
      status: 'error',
      error: { code: 'transcription_failed' },
    });
  });

  it("completes with the transcriber's result, or fails with its error", async () => {
    const completed = await queuedJob();
    const failed = await queuedJob();
    const transcriber = asyncTranscriber([
      { state: 'completed', transcription: transcription('from the service') },
      { state: 'failed', error: { code: 'unsupported_media', message: 'codec' } },
    ]);
    await handle(transcriber, process(completed.id));
    await handle(transcriber, process(failed.id));
    const event = (jobId: string) => ({ kind: 'transcribe-event' as const, jobId, status: 'COMPLETED' });
    expect(await handle(transcriber, event(completed.id))).toBe('completed');
    expect(await handle(transcriber, event(failed.id))).toBe('failed');
    expect((await media.getResult(resultKey('acme', completed.id))).transcript).toBe('from the service');
    expect(await jobs.get(failed.id)).toMatchObject({
      status: 'error',
      error: { code: 'unsupported_media' },
    });
    // A late duplicate event finds the job finished.
    expect(await handle(transcriber, event(completed.id))).toBe('skipped');
  });

  it('ignores checks and events for a job that was never handed off', async () => {
    const job = await queuedJob();
    const transcriber = asyncTranscriber([{ state: 'completed', transcription: transcription() }]);
    expect(await handle(transcriber, { kind: 'check', jobId: job.id, attempt: 1 })).toBe('skipped');
    expect((await jobs.get(job.id))?.status).toBe('queued');
  });
});

describe('a dead-lettered job', () => {
  it('ends in error unless it had already finished', async () => {
    const stuck = await queuedJob();
    const finished = await queuedJob();
    await handle(
      scriptedTranscriber(() => transcription()),
      process(finished.id),
    );
    expect(await failAbandonedJob(jobs, { kind: 'process', jobId: stuck.id })).toBe(true);
    expect(await failAbandonedJob(jobs, { kind: 'process', jobId: finished.id })).toBe(false);
    expect(await jobs.get(stuck.id)).toMatchObject({
      status: 'error',
      error: { code: 'transcription_failed' },
    });
    expect((await jobs.get(finished.id))?.status).toBe('completed');
  });
});

/**
 * A chunked transcriber whose "audio" is a text: `plan` cuts its words into chunks of `perChunk` (one
 * file each, its first word's position as its details), `transcribeChunk` reads a chunk's file back,
 * `assemble` joins the chunks in order. It counts what it did, throws what a test puts in `failures` for
 * a chunk, runs `afterStore` once each chunk is stored (the cut goes on when it returns) and fails the
 * cut with `cutFailure` past the chunks it stored.
 */
function chunkedTranscriber(perChunk: number) {
  const transcriber = {
    mode: 'chunked' as const,
    plans: 0,
    transcribed: [] as number[],
    failures: new Map<number, Error>(),
    afterStore: async (_index: number) => {},
    cutFailure: undefined as Error | undefined,
    async plan({ audio, workDir, storeChunk }: Parameters<ChunkedTranscriber['plan']>[0]) {
      transcriber.plans += 1;
      const words = (media.objects.get(audio.replace('memory://', '')) ?? Buffer.alloc(0))
        .toString()
        .split(' ');
      const chunks = Math.ceil(words.length / perChunk);
      for (let index = 0; index < chunks; index++) {
        const file = join(workDir, `chunk-${index}.txt`);
        await writeFile(file, words.slice(index * perChunk, (index + 1) * perChunk).join(' '));
        const details = { firstWord: index * perChunk };
        await storeChunk({ index, files: [file], last: index === chunks - 1, details });
        await transcriber.afterStore(index);
      }
      if (transcriber.cutFailure) throw transcriber.cutFailure;
      return { chunks, audio_duration_ms: words.length * 100, details: { perChunk } };
    },
    async transcribeChunk({ index, files, details }: Parameters<ChunkedTranscriber['transcribeChunk']>[0]) {
      const failure = transcriber.failures.get(index);
      if (failure) throw failure;
      expect(details).toEqual({ firstWord: index * perChunk });
      transcriber.transcribed.push(index);
      return { index, text: await readFile(files[0] ?? '', 'utf8') };
    },
    async assemble({ results, plan }: Parameters<ChunkedTranscriber['assemble']>[0]) {
      expect(plan.details).toEqual({ perChunk });
      const texts = (results as { index: number; text: string }[]).map((result, index) => {
        expect(result.index).toBe(index);
        return result.text;
      });
      return { ...transcription(texts.join(' ')), audio_duration_ms: plan.audio_duration_ms };
    },
  };
  return transcriber;
}

const chunk = (jobId: string, index: number) => ({ kind: 'chunk' as const, jobId, index });
const SPOKEN = 'one two three four five six seven eight nine ten';

async function spokenJob(): Promise<Job> {
  const job = await queuedJob();
  media.objects.set(audioKey('acme', job.id), Buffer.from(SPOKEN));
  return job;
}

const workFiles = (jobId: string) =>
  [...media.objects.keys()].filter((key) => key === workKey('acme', jobId, key.split('/').at(-1) ?? ''));

describe('a chunked transcriber', () => {
  it('transcribes a file of one chunk in the worker that cut it, storing nothing between workers', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(100);
    expect(await handle(transcriber, process(job.id))).toBe('completed');
    expect(queue.sent).toEqual([]);
    expect(workFiles(job.id)).toEqual([]);
    expect(await media.getResult(resultKey('acme', job.id))).toMatchObject({ transcript: SPOKEN });
  });

  it('queues each chunk as soon as it is cut, so that workers start on it while the rest is cut', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(3);
    const outcomes: string[] = [];
    transcriber.afterStore = async (index) => {
      expect(queue.sent.map((message) => message.chunk)).toEqual(
        Array.from({ length: index + 1 }, (_, n) => n),
      );
      // Another worker takes the chunk at once: done, but the total is not known yet.
      if (index < 2) outcomes.push(await handle(transcriber, chunk(job.id, index)));
    };
    expect(await handle(transcriber, process(job.id))).toBe('fanned-out');
    expect(outcomes).toEqual(['chunk-done', 'chunk-done']);
    expect(await jobs.get(job.id)).toMatchObject({ chunksTotal: 4, chunksDone: [0, 1] });
    expect(await handle(transcriber, chunk(job.id, 2))).toBe('chunk-done');
    expect(await handle(transcriber, chunk(job.id, 3))).toBe('completed');
    expect(await media.getResult(resultKey('acme', job.id))).toMatchObject({ transcript: SPOKEN });
    expect(transcriber.transcribed).toEqual([0, 1, 2, 3]);
  });

  it('assembles through a start message when every chunk was done before the cut ended', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(3);
    transcriber.afterStore = async (index) => {
      expect(await handle(transcriber, chunk(job.id, index))).toBe('chunk-done');
    };
    expect(await handle(transcriber, process(job.id))).toBe('fanned-out');
    // The last chunk's worker could not know it was the last; the worker that cut the file did.
    expect(queue.sent.at(-1)).toEqual({ jobId: job.id, delaySeconds: 0 });
    expect(await handle(transcriber, process(job.id))).toBe('completed');
    expect(await media.getResult(resultKey('acme', job.id))).toMatchObject({ transcript: SPOKEN });
    expect(workFiles(job.id)).toEqual([]);
    expect(transcriber.transcribed).toEqual([0, 1, 2, 3]);
  });

  it("ends the job with the cut's code when the cut fails past queued chunks, and leaves nothing behind", async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(3);
    transcriber.cutFailure = new JobFailure('audio_too_long', 'The audio is longer than 4 hours.');
    transcriber.afterStore = async (index) => {
      if (index === 0) expect(await handle(transcriber, chunk(job.id, 0))).toBe('chunk-done');
    };
    expect(await handle(transcriber, process(job.id))).toBe('failed');
    expect(await jobs.get(job.id)).toMatchObject({ status: 'error', error: { code: 'audio_too_long' } });
    expect(workFiles(job.id)).toEqual([]);
    // The chunks queued before the cut failed find the job ended.
    expect(queue.sent.map((message) => message.chunk)).toEqual([0, 1, 2, 3]);
    for (const index of [1, 2, 3]) expect(await handle(transcriber, chunk(job.id, index))).toBe('skipped');
    expect(transcriber.transcribed).toEqual([0]);
  });

  it('a chunk whose files vanished with its ended job is skipped, not failed as a bug', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(5);
    transcriber.afterStore = async (index) => {
      if (index > 0) return;
      // Another worker takes chunk 0 as the cut fails: the cut removes its files before ending the job.
      const download = media.downloadToFile.bind(media);
      media.downloadToFile = async (key, file) => {
        media.downloadToFile = download;
        await jobs.fail(job.id, { code: 'audio_too_long', message: 'Too long.' });
        for (const name of workFiles(job.id)) media.objects.delete(name);
        return download(key, file);
      };
      expect(await handle(transcriber, chunk(job.id, 0))).toBe('skipped');
    };
    expect(await handle(transcriber, process(job.id))).toBe('skipped');
    expect(await jobs.get(job.id)).toMatchObject({ status: 'error', error: { code: 'audio_too_long' } });
    expect(workFiles(job.id)).toEqual([]);
  });

  it('fans a long file out, a message per chunk, shows progress, and the last chunk done assembles it once', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(3);
    expect(await handle(transcriber, process(job.id))).toBe('fanned-out');
    expect(queue.sent.map((message) => message.chunk)).toEqual([0, 1, 2, 3]);
    const planned = await jobs.get(job.id);
    expect(planned).toMatchObject({ status: 'processing', chunksTotal: 4, audio_duration_ms: 1000 });
    expect(planned).not.toHaveProperty('leaseOwner');
    expect(toStatusRecord(planned as Job).progress).toEqual({ chunks_done: 0, chunks_total: 4 });

    // In any order, each by any worker; a duplicate delivery of a done chunk is not transcribed again.
    const outcomes = [];
    for (const index of [2, 0, 2, 3]) outcomes.push(await handle(transcriber, chunk(job.id, index)));
    expect(outcomes).toEqual(['chunk-done', 'chunk-done', 'chunk-done', 'chunk-done']);
    expect(toStatusRecord((await jobs.get(job.id)) as Job).progress).toEqual({
      chunks_done: 3,
      chunks_total: 4,
    });
    // The last chunk's worker assembles, and reports its chunk's and that step's times apart (the benchmark reads them).
    const last = await handleWorkerMessage(deps(transcriber), chunk(job.id, 1), delivery());
    expect(last).toEqual({
      outcome: 'completed',
      assemblyMs: expect.any(Number),
      transcriptionMs: expect.any(Number),
    });
    expect(transcriber.transcribed.sort()).toEqual([0, 1, 2, 3]);

    expect(await media.getResult(resultKey('acme', job.id))).toMatchObject({
      transcript: SPOKEN,
      audio_duration_ms: 1000,
    });
    const done = await jobs.get(job.id);
    expect(done).toMatchObject({ status: 'completed' });
    expect(done).not.toHaveProperty('chunksDone');
    expect(toStatusRecord(done as Job)).not.toHaveProperty('progress');
    expect(workFiles(job.id)).toEqual([]);
    // Late duplicates find the job finished.
    expect(await handle(transcriber, chunk(job.id, 0))).toBe('skipped');
    expect(transcriber.transcribed).toHaveLength(4);
  });

  it('retries a chunk that failed for a passing reason on its own, and the job completes once', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(5);
    await handle(transcriber, process(job.id));
    transcriber.failures.set(1, new Error('connection reset'));
    await expect(handleWorkerMessage(deps(transcriber), chunk(job.id, 1), delivery())).rejects.toBeInstanceOf(
      RetryLater,
    );
    expect(await handle(transcriber, chunk(job.id, 0))).toBe('chunk-done');
    expect(await jobs.get(job.id)).toMatchObject({ status: 'processing', chunksDone: [0] });
    transcriber.failures.clear();
    expect(await handle(transcriber, chunk(job.id, 1), 2)).toBe('completed');
    expect(transcriber.transcribed).toEqual([0, 1]);
  });

  it('leaves nothing of a job deleted while one of its chunks was being transcribed', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(3);
    await handle(transcriber, process(job.id));
    expect(workFiles(job.id).length).toBeGreaterThan(0);
    const transcribe = transcriber.transcribeChunk;
    transcriber.transcribeChunk = async (input) => {
      const result = await transcribe(input);
      await deleteJob({ jobs, media, clock }, 'acme', job.id);
      return result;
    };
    // The deletion removed the plan and the chunks' audio; the worker removes the result it wrote after.
    expect(await handle(transcriber, chunk(job.id, 0))).toBe('skipped');
    expect(workFiles(job.id)).toEqual([]);
    expect([...media.objects.keys()].filter((key) => key.includes(job.id))).toEqual([]);
  });

  it('ends the job with the code of a chunk that can never succeed', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(5);
    await handle(transcriber, process(job.id));
    transcriber.failures.set(0, new JobFailure('unsupported_media', 'The file cannot be decoded.'));
    expect(await handle(transcriber, chunk(job.id, 0))).toBe('failed');
    expect(await jobs.get(job.id)).toMatchObject({ status: 'error', error: { code: 'unsupported_media' } });
    expect(await handle(transcriber, chunk(job.id, 1))).toBe('skipped');
  });

  it('refuses a tampered chunk record as a bug rather than transcribing from it', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(5);
    await handle(transcriber, process(job.id));
    await media.putJson(workKey('acme', job.id, 'chunk-0.json'), { files: 'two' });
    expect(await handle(transcriber, chunk(job.id, 0))).toBe('failed');
    expect(await jobs.get(job.id)).toMatchObject({ status: 'error', error: { code: 'internal' } });
  });

  it('a start message for a job already cut does not cut it again: it waits for the chunks, or assembles', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(5);
    await handle(transcriber, process(job.id));
    expect(await handle(transcriber, process(job.id))).toBe('skipped');
    expect(transcriber.plans).toBe(1);
    // Both chunks done, but the worker of the last died before assembling: a start message assembles.
    await handle(transcriber, chunk(job.id, 0));
    const unfinished = await jobs.markChunkDone(job.id, 1, clock());
    expect(unfinished).toEqual({ done: 2, total: 2 });
    await media.putJson(workKey('acme', job.id, 'result-1.json'), {
      index: 1,
      text: 'six seven eight nine ten',
    });
    expect(await handle(transcriber, process(job.id))).toBe('completed');
    expect(await media.getResult(resultKey('acme', job.id))).toMatchObject({ transcript: SPOKEN });
  });

  it('throws the last chunk back while another worker holds the job, to assemble once that lease ends', async () => {
    const job = await spokenJob();
    const transcriber = chunkedTranscriber(5);
    await handle(transcriber, process(job.id));
    await handle(transcriber, chunk(job.id, 0));
    await jobs.claim(job.id, testLease(LEASE_MS, clock(), 'another-worker'));
    await expect(handleWorkerMessage(deps(transcriber), chunk(job.id, 1), delivery())).rejects.toBeInstanceOf(
      RetryLater,
    );
    // The chunk itself was done and recorded: the retry only assembles.
    expect(await jobs.get(job.id)).toMatchObject({ chunksDone: [0, 1] });
    clock.advance(LEASE_MS + 1);
    expect(await handle(transcriber, chunk(job.id, 1), 2)).toBe('completed');
    expect(transcriber.transcribed).toEqual([0, 1]);
  });
});

describe('a job deleted while it is transcribed', () => {
  it('is never completed, and no result is stored for it', async () => {
    const job = await queuedJob({ tldr: 'true' });
    const transcriber = scriptedTranscriber(() => {
      // The client deletes the job while the worker is on it: the tombstone comes first.
      void jobs.markDeleted(job.id, 'acme', clock());
      return transcription();
    });
    expect(await handle(transcriber, process(job.id))).toBe('skipped');
    expect(await jobs.get(job.id)).toBeUndefined();
    expect(media.objects.has(resultKey('acme', job.id))).toBe(false);
    // Not even summarized: the worker stopped as soon as it saw the job was gone.
    expect(summaries).toBe(0);
  });

  it('has a result stored during the deletion removed again', async () => {
    const job = await queuedJob();
    const storeResult = media.putResult.bind(media);
    media.putResult = async (key, result) => {
      await storeResult(key, result);
      // The deletion replaces the job after the result was stored, before the job is completed.
      await jobs.markDeleted(job.id, 'acme', clock());
    };
    expect(
      await handle(
        scriptedTranscriber(() => transcription()),
        process(job.id),
      ),
    ).toBe('skipped');
    expect(media.objects.has(resultKey('acme', job.id))).toBe(false);
    expect(await jobs.markDeleted(job.id, 'acme', clock())).toMatchObject({ id: job.id });
  });

  it('removes the audio it fetched for a job deleted during the fetch, and transcribes nothing', async () => {
    const id = await jobByAddress('https://x.test/a.mp3');
    const d = deps(scriptedTranscriber(() => transcription()));
    d.fetcher = {
      async fetchInto(url, store) {
        fetched.push(url);
        // The deletion runs while the audio streams in: it finds no audio to remove yet.
        await jobs.markDeleted(id, 'acme', clock());
        return store(Readable.from([AUDIO]));
      },
    };
    expect((await handleWorkerMessage(d, process(id), delivery())).outcome).toBe('skipped');
    expect(fetched).toEqual(['https://x.test/a.mp3']);
    expect(media.objects.has(audioKey('acme', id))).toBe(false);
    expect(media.objects.has(resultKey('acme', id))).toBe(false);
  });

  it('keeps the result of a job another worker completed meanwhile', async () => {
    const job = await queuedJob();
    const storeResult = media.putResult.bind(media);
    media.putResult = async (key, result) => {
      await storeResult(key, result);
      await jobs.complete(job.id, { resultKey: key, audio_duration_ms: 1000 });
    };
    expect(
      await handle(
        scriptedTranscriber(() => transcription()),
        process(job.id),
      ),
    ).toBe('skipped');
    expect(media.objects.has(resultKey('acme', job.id))).toBe(true);
    expect((await jobs.get(job.id))?.status).toBe('completed');
  });
});
