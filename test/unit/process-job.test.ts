import { readFile } from 'node:fs/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { ASYNC_CHECK_INTERVAL_SECONDS, ASYNC_DEADLINE_MS, audioKey, resultKey } from '#commons/contract';
import { JobFailure } from '#core/errors';
import { type Job, newJob, newJobId } from '#core/job';
import { parseJobOptions } from '#core/options';
import type { AsyncTranscriber, AsyncTranscriptionState, SyncTranscriber, Transcription } from '#core/ports';
import {
  failAbandonedJob,
  handleWorkerMessage,
  JobBusy,
  type ProcessDeps,
  type ProcessOutcome,
} from '#core/process-job';
import {
  InMemoryJobQueue,
  InMemoryJobStore,
  InMemoryMediaStore,
  manualClock,
} from '#test/helpers/memory-ports';

const LEASE_MS = 900_000;
const AUDIO = Buffer.from('pretend audio');

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
    leaseMs: LEASE_MS,
    clock,
  };
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
});

describe('a sync transcriber', () => {
  it('claims the job, transcribes its audio, stores the result and completes the job', async () => {
    const job = await queuedJob();
    const transcriber = scriptedTranscriber(() => transcription());
    expect(await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id })).toBe(
      'completed',
    );
    expect(transcriber.audio).toEqual([AUDIO]);
    const done = await jobs.get(job.id);
    expect(done).toMatchObject({
      status: 'completed',
      resultKey: resultKey('acme', job.id),
      audio_duration_ms: 1000,
    });
    expect(done).not.toHaveProperty('leaseExpiresAt');
    expect(await media.getResult(resultKey('acme', job.id))).toEqual(transcription());
    expect(summaries).toBe(0);
  });

  it('adds only the summaries the job asked for', async () => {
    const job = await queuedJob({ tldr: 'true' });
    await handleWorkerMessage(deps(scriptedTranscriber(() => transcription())), {
      kind: 'process',
      jobId: job.id,
    });
    const result = await media.getResult(resultKey('acme', job.id));
    expect(result.tldr).toBe('short');
    expect(result).not.toHaveProperty('short_hand_notes');
    expect(summaries).toBe(1);
  });

  it('ends the job in error at once for input that can never succeed', async () => {
    const job = await queuedJob();
    const transcriber = scriptedTranscriber(() => {
      throw new JobFailure('unsupported_media', 'not audio');
    });
    expect(await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id })).toBe('failed');
    expect(await jobs.get(job.id)).toMatchObject({
      status: 'error',
      error: { code: 'unsupported_media', message: 'not audio' },
    });
  });

  it('leaves a transient failure to the queue, holds the job for its lease, then lets a retry take it over', async () => {
    const job = await queuedJob();
    const transcriber = scriptedTranscriber(
      () => {
        throw new Error('connection reset');
      },
      () => transcription('second try'),
    );
    const process = () => handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id });
    await expect(process()).rejects.toThrow('connection reset');
    expect(await jobs.get(job.id)).toMatchObject({
      status: 'processing',
      leaseExpiresAt: clock().getTime() + LEASE_MS,
    });

    clock.advance(LEASE_MS - 1);
    await expect(process()).rejects.toBeInstanceOf(JobBusy);
    clock.advance(2);
    expect(await process()).toBe('completed');
    expect((await media.getResult(resultKey('acme', job.id))).transcript).toBe('second try');
  });

  it('never runs a finished job again, and skips a job that does not exist', async () => {
    const job = await queuedJob();
    const transcriber = scriptedTranscriber(() => transcription());
    await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id });
    const finished = await jobs.get(job.id);
    const outcomes: ProcessOutcome[] = [
      await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id }),
      await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: newJobId() }),
    ];
    expect(outcomes).toEqual(['skipped', 'skipped']);
    expect(await jobs.get(job.id)).toEqual(finished);
    expect(transcriber.audio).toHaveLength(1);
  });
});

describe('an async transcriber', () => {
  it('hands the job off, holds it until the deadline and schedules the first check', async () => {
    const job = await queuedJob();
    const transcriber = asyncTranscriber([]);
    expect(await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id })).toBe('started');
    expect(await jobs.get(job.id)).toMatchObject({
      status: 'processing',
      handedOffAt: clock().toISOString(),
      audio_duration_ms: 4200,
      leaseExpiresAt: clock().getTime() + ASYNC_DEADLINE_MS,
    });
    expect(queue.sent).toEqual([{ jobId: job.id, check: 1, delaySeconds: ASYNC_CHECK_INTERVAL_SECONDS }]);

    // The start message delivered again leaves the job to the transcriber.
    clock.advance(LEASE_MS * 2);
    expect(await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id })).toBe('skipped');
    expect(transcriber.starts).toBe(1);
  });

  it('schedules the next check while the transcriber runs; an event alone schedules nothing', async () => {
    const job = await queuedJob();
    const transcriber = asyncTranscriber([]);
    await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id });
    queue.sent.length = 0;
    expect(await handleWorkerMessage(deps(transcriber), { kind: 'check', jobId: job.id, attempt: 1 })).toBe(
      'waiting',
    );
    expect(queue.sent).toEqual([{ jobId: job.id, check: 2, delaySeconds: ASYNC_CHECK_INTERVAL_SECONDS }]);
    expect(
      await handleWorkerMessage(deps(transcriber), {
        kind: 'transcribe-event',
        jobId: job.id,
        status: 'COMPLETED',
      }),
    ).toBe('waiting');
    expect(queue.sent).toHaveLength(1);
  });

  it('gives the job up when the transcriber is still busy at the deadline', async () => {
    const job = await queuedJob();
    const transcriber = asyncTranscriber([]);
    await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: job.id });
    clock.advance(ASYNC_DEADLINE_MS);
    expect(await handleWorkerMessage(deps(transcriber), { kind: 'check', jobId: job.id, attempt: 36 })).toBe(
      'failed',
    );
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
    await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: completed.id });
    await handleWorkerMessage(deps(transcriber), { kind: 'process', jobId: failed.id });
    const event = (jobId: string) => ({ kind: 'transcribe-event' as const, jobId, status: 'COMPLETED' });
    expect(await handleWorkerMessage(deps(transcriber), event(completed.id))).toBe('completed');
    expect(await handleWorkerMessage(deps(transcriber), event(failed.id))).toBe('failed');
    expect((await media.getResult(resultKey('acme', completed.id))).transcript).toBe('from the service');
    expect(await jobs.get(failed.id)).toMatchObject({
      status: 'error',
      error: { code: 'unsupported_media' },
    });
    // A late duplicate event finds the job finished.
    expect(await handleWorkerMessage(deps(transcriber), event(completed.id))).toBe('skipped');
  });

  it('ignores checks and events for a job that was never handed off', async () => {
    const job = await queuedJob();
    const transcriber = asyncTranscriber([{ state: 'completed', transcription: transcription() }]);
    expect(await handleWorkerMessage(deps(transcriber), { kind: 'check', jobId: job.id, attempt: 1 })).toBe(
      'skipped',
    );
    expect((await jobs.get(job.id))?.status).toBe('queued');
  });
});

describe('a dead-lettered job', () => {
  it('ends in error unless it had already finished', async () => {
    const stuck = await queuedJob();
    const finished = await queuedJob();
    await handleWorkerMessage(deps(scriptedTranscriber(() => transcription())), {
      kind: 'process',
      jobId: finished.id,
    });
    expect(await failAbandonedJob(jobs, stuck.id)).toBe(true);
    expect(await failAbandonedJob(jobs, finished.id)).toBe(false);
    expect(await jobs.get(stuck.id)).toMatchObject({
      status: 'error',
      error: { code: 'transcription_failed' },
    });
    expect((await jobs.get(finished.id))?.status).toBe('completed');
  });
});
