import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ASYNC_CHECK_INTERVAL_SECONDS,
  ASYNC_DEADLINE_MS,
  HEARTBEAT_VISIBILITY_SECONDS,
  MAX_RETRY_DELAY_SECONDS,
  RETRY_BASE_SECONDS,
  resultKey,
} from '#commons/contract';
import { failureKind, type JobError, JobFailure } from './errors.ts';
import type { Job } from './job.ts';
import type { WorkerMessage } from './messages.ts';
import type {
  AudioFetcher,
  Clock,
  JobQueue,
  JobStore,
  Lease,
  MediaStore,
  Summarizer,
  Transcriber,
  Transcription,
} from './ports.ts';

/** How a worker paces its heartbeats and retries; the defaults are the contract's. */
export interface WorkerTimings {
  /** Seconds a message stays hidden past each heartbeat. */
  heartbeatVisibilitySeconds: number;
  /** Seconds before a failed message's second attempt; each later attempt waits four times longer. */
  retryBaseSeconds: number;
}

export const DEFAULT_TIMINGS: WorkerTimings = {
  heartbeatVisibilitySeconds: HEARTBEAT_VISIBILITY_SECONDS,
  retryBaseSeconds: RETRY_BASE_SECONDS,
};

/** A job handed off is due (its chain of checks is considered broken) this long after its last check. */
export const CHECK_DUE_MS = 2 * ASYNC_CHECK_INTERVAL_SECONDS * 1000;

export interface ProcessDeps {
  jobs: JobStore;
  media: MediaStore;
  queue: JobQueue;
  /** Fetches the audio of jobs submitted by address. */
  fetcher: AudioFetcher;
  transcriber: Transcriber;
  summarizer: Summarizer;
  clock: Clock;
  timings: WorkerTimings;
}

/** The message being worked on, as the queue delivered it. */
export interface Delivery {
  /** 1 on the first delivery. */
  receiveCount: number;
  /** Hides the message for this many seconds from now (longer or shorter than it was). */
  hide(seconds: number): Promise<void>;
}

export type ProcessOutcome =
  | 'completed'
  | 'failed'
  | 'started'
  | 'waiting'
  /** Nothing to do: the job is finished, missing, or not handed off. */
  | 'skipped'
  /** Another worker holds the job; its own message covers it, so this one is dropped. */
  | 'busy';

export interface WorkerResult {
  outcome: ProcessOutcome;
  /** The unexpected error (a bug) that ended the job in `internal`, for the log. */
  bug?: unknown;
}

/** Thrown after a transient failure, once the message has been hidden until its next attempt. */
export class RetryLater extends Error {
  constructor(
    override readonly cause: unknown,
    readonly delaySeconds: number,
  ) {
    super(`Retrying in ${delaySeconds} s: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'RetryLater';
  }
}

/** The delay before the next attempt of a message that failed on its `receiveCount`-th delivery. */
export function retryDelaySeconds(timings: WorkerTimings, receiveCount: number): number {
  const exponent = Math.max(0, receiveCount - 1);
  return Math.min(MAX_RETRY_DELAY_SECONDS, Math.ceil(timings.retryBaseSeconds * 4 ** exponent));
}

/**
 * Handles one worker message. The message stays hidden while the work goes on (heartbeats); input that
 * can never succeed, and bugs, end the job in `error` at once; anything else hides the message until
 * its next attempt and throws RetryLater, and the queue's redrive policy bounds the attempts.
 */
export async function handleWorkerMessage(
  deps: ProcessDeps,
  message: WorkerMessage,
  delivery: Delivery,
): Promise<WorkerResult> {
  const heartbeat = new Heartbeat(deps, delivery);
  try {
    await heartbeat.start();
    if (message.kind === 'process') return await processJob(deps, message.jobId, heartbeat);
    return await checkHandedOff(deps, message.jobId, message.kind === 'check' ? message.attempt : undefined);
  } catch (error) {
    heartbeat.stop();
    const delaySeconds = retryDelaySeconds(deps.timings, delivery.receiveCount);
    // If even this fails, the message comes back after its last heartbeat's visibility.
    await delivery.hide(delaySeconds).catch(() => undefined);
    throw new RetryLater(error, delaySeconds);
  } finally {
    heartbeat.stop();
  }
}

/**
 * Keeps the message hidden, and the job's lease held, while the work goes on. Its first beat comes
 * before any work, so that a worker that dies early is noticed as soon as one that dies late.
 */
class Heartbeat {
  private timer: NodeJS.Timeout | undefined;
  private lease: { jobId: string; owner: string } | undefined;

  constructor(
    private readonly deps: ProcessDeps,
    private readonly delivery: Delivery,
  ) {}

  async start(): Promise<void> {
    await this.beat();
    const intervalMs = (this.deps.timings.heartbeatVisibilitySeconds * 1000) / 3;
    this.timer = setInterval(() => this.beat().catch(() => undefined), intervalMs);
    this.timer.unref();
  }

  hold(jobId: string, owner: string): void {
    this.lease = { jobId, owner };
  }

  release(): void {
    this.lease = undefined;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * Best effort: a beat that fails leaves the message hidden as long as it was (at worst the queue's own
   * visibility timeout) and the lease as it was; neither is a reason to abandon the work.
   */
  private async beat(): Promise<void> {
    const { lease } = this;
    await Promise.allSettled([
      this.delivery.hide(this.deps.timings.heartbeatVisibilitySeconds),
      lease && this.deps.jobs.extendLease(lease.jobId, newLease(this.deps, lease.owner)),
    ]);
  }
}

/** A lease of five sixths of the heartbeat's visibility: it runs out before the message reappears. */
function newLease(deps: ProcessDeps, owner: string): Lease {
  const now = deps.clock();
  const visibilityMs = deps.timings.heartbeatVisibilitySeconds * 1000;
  return {
    owner,
    now,
    until: new Date(now.getTime() + (visibilityMs * 5) / 6),
    // The dead worker's own message reappears first; the sweeper steps in only if it does not.
    dueAt: new Date(now.getTime() + 2 * visibilityMs),
  };
}

/** Claims a queued job, fetches its audio and transcribes it, or hands it to an asynchronous transcriber. */
async function processJob(deps: ProcessDeps, jobId: string, heartbeat: Heartbeat): Promise<WorkerResult> {
  const owner = randomUUID();
  const claim = await deps.jobs.claim(jobId, newLease(deps, owner));
  if (claim.outcome === 'missing' || claim.outcome === 'finished') return { outcome: 'skipped' };
  if (claim.outcome === 'leased') return { outcome: 'busy' };

  const { job } = claim;
  heartbeat.hold(job.id, owner);
  try {
    return { outcome: await transcribe(deps, job) };
  } catch (error) {
    const settled = await settleFailure(deps, job, error);
    if (settled) return settled;
    // A retry must not wait for this lease to run out.
    heartbeat.release();
    await deps.jobs.releaseLease(job.id, owner).catch(() => undefined);
    throw error;
  } finally {
    heartbeat.release();
  }
}

async function transcribe(deps: ProcessDeps, job: Job): Promise<ProcessOutcome> {
  const workDir = await mkdtemp(join(tmpdir(), 'job-'));
  try {
    const audioFile = join(workDir, 'input');
    // A job submitted by address has its audio fetched into the store once; a retry finds it there.
    if (job.audioUrl && !(await deps.media.describe(job.audioKey))) {
      const url = job.audioUrl;
      await deps.fetcher.fetchInto(url, (body) => deps.media.putAudio(job.audioKey, body));
      // Deleted while its audio was fetched: the deletion found nothing to remove, so this copy goes here.
      if (!(await deps.jobs.get(job.id))) {
        await deps.media.delete(job.audioKey);
        return 'skipped';
      }
    }
    await deps.media.downloadToFile(job.audioKey, audioFile);
    const { transcriber } = deps;
    if (transcriber.mode === 'sync') {
      const transcription = await transcriber.transcribe({ audioFile, workDir, options: job.options });
      // Awaited here: the cleanup below must not leave a rejection unobserved while it runs.
      return await finish(deps, job, transcription);
    }
    const started = await transcriber.start({ job, audioFile, workDir });
    const now = deps.clock();
    await deps.jobs.markHandedOff(job.id, {
      audio_duration_ms: started.audio_duration_ms,
      now,
      deadline: new Date(now.getTime() + ASYNC_DEADLINE_MS),
      dueAt: new Date(now.getTime() + CHECK_DUE_MS),
    });
    // Should this message be lost, the sweeper sends a check once the job is due.
    await deps.queue.scheduleCheck(job.id, 1, ASYNC_CHECK_INTERVAL_SECONDS);
    return 'started';
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/**
 * Finishes a job an asynchronous transcriber has, on its completion event or a scheduled check. A check
 * that finds the transcriber still busy schedules the next one, until the deadline.
 */
async function checkHandedOff(
  deps: ProcessDeps,
  jobId: string,
  attempt: number | undefined,
): Promise<WorkerResult> {
  const { transcriber } = deps;
  const job = await deps.jobs.get(jobId);
  if (job?.status !== 'processing' || !job.handedOffAt || transcriber.mode !== 'async') {
    return { outcome: 'skipped' };
  }
  try {
    const state = await transcriber.poll(job);
    if (state.state === 'completed') return { outcome: await finish(deps, job, state.transcription) };
    if (state.state === 'failed') {
      await deps.jobs.fail(job.id, state.error);
      return { outcome: 'failed' };
    }
    if (attempt === undefined) return { outcome: 'waiting' };
    const now = deps.clock();
    if (now.getTime() >= new Date(job.handedOffAt).getTime() + ASYNC_DEADLINE_MS) {
      throw new JobFailure('transcription_failed', 'The transcription engine did not finish in time.');
    }
    await deps.queue.scheduleCheck(job.id, attempt + 1, ASYNC_CHECK_INTERVAL_SECONDS);
    await deps.jobs.setDue(job.id, new Date(now.getTime() + CHECK_DUE_MS));
    return { outcome: 'waiting' };
  } catch (error) {
    const settled = await settleFailure(deps, job, error);
    if (settled) return settled;
    throw error;
  }
}

/**
 * Adds the summaries the job asked for, stores the result and completes the job. A job deleted while
 * it was transcribed is left as it is, and a result stored while it was being deleted is removed.
 */
async function finish(deps: ProcessDeps, job: Job, transcription: Transcription): Promise<ProcessOutcome> {
  if ((await deps.jobs.get(job.id))?.status !== 'processing') return 'skipped';
  const { tldr, short_hand_notes } = job.options;
  const summaries =
    tldr || short_hand_notes
      ? await deps.summarizer.summarize(transcription, { tldr, short_hand_notes })
      : {};
  const key = resultKey(job.tenantId, job.id);
  await deps.media.putResult(key, { ...transcription, ...summaries });
  if (
    await deps.jobs.complete(job.id, { resultKey: key, audio_duration_ms: transcription.audio_duration_ms })
  ) {
    return 'completed';
  }
  // The deletion removed the objects before this result was stored, or removes them after it.
  if (!(await deps.jobs.get(job.id))) await deps.media.delete(key);
  return 'skipped';
}

const INTERNAL_FAILURE: JobError = {
  code: 'internal',
  message: 'An internal error ended the job; it has been logged. Submitting the file again may work.',
};

/** Ends the job for an input problem or a bug; undefined for a transient failure, which is retried. */
async function settleFailure(deps: ProcessDeps, job: Job, error: unknown): Promise<WorkerResult | undefined> {
  const kind = failureKind(error);
  if (kind === 'transient') return undefined;
  if (kind === 'input') {
    await deps.jobs.fail(job.id, (error as JobFailure).toJobError());
    return { outcome: 'failed' };
  }
  await deps.jobs.fail(job.id, INTERNAL_FAILURE);
  return { outcome: 'failed', bug: error };
}

/** Called for a message that exhausted its deliveries: the job must not stay queued or processing. */
export async function failAbandonedJob(jobs: JobStore, jobId: string): Promise<boolean> {
  return jobs.fail(jobId, {
    code: 'transcription_failed',
    message: 'Transcription failed repeatedly; the job was given up.',
  });
}
