import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ASYNC_CHECK_INTERVAL_SECONDS, ASYNC_DEADLINE_MS, resultKey } from '#commons/contract';
import { JobFailure } from './errors.ts';
import type { Job } from './job.ts';
import type { WorkerMessage } from './messages.ts';
import type {
  Clock,
  JobQueue,
  JobStore,
  MediaStore,
  Summarizer,
  Transcriber,
  Transcription,
} from './ports.ts';

export interface ProcessDeps {
  jobs: JobStore;
  media: MediaStore;
  queue: JobQueue;
  transcriber: Transcriber;
  summarizer: Summarizer;
  /** How long a worker holds a job before a redelivered message may take it over. */
  leaseMs: number;
  clock: Clock;
}

export type ProcessOutcome = 'completed' | 'failed' | 'started' | 'waiting' | 'skipped';

/** Thrown when another worker holds the job: the message must come back later, not be dropped. */
export class JobBusy extends Error {
  constructor(id: string) {
    super(`Job ${id} is being processed by another worker.`);
    this.name = 'JobBusy';
  }
}

/**
 * Handles one worker message. A JobFailure ends the job in error; any other error propagates so that
 * the queue retries; a finished job is never run again.
 */
export async function handleWorkerMessage(
  deps: ProcessDeps,
  message: WorkerMessage,
): Promise<ProcessOutcome> {
  if (message.kind === 'process') return processJob(deps, message.jobId);
  return checkHandedOff(deps, message.jobId, message.kind === 'check' ? message.attempt : undefined);
}

/** Claims a queued job, fetches its audio and transcribes it, or hands it to an asynchronous transcriber. */
async function processJob(deps: ProcessDeps, jobId: string): Promise<ProcessOutcome> {
  const claim = await deps.jobs.claim(jobId, deps.clock(), deps.leaseMs);
  if (claim.outcome === 'missing' || claim.outcome === 'finished') return 'skipped';
  // The start message of a job already handed off came again: the transcriber's events finish it.
  if (claim.outcome === 'leased' && claim.job.handedOffAt) return 'skipped';
  if (claim.outcome === 'leased') throw new JobBusy(jobId);

  const { job } = claim;
  return failOnJobFailure(deps, job, async () => {
    const workDir = await mkdtemp(join(tmpdir(), 'job-'));
    try {
      const audioFile = join(workDir, 'input');
      await deps.media.downloadToFile(job.audioKey, audioFile);
      const { transcriber } = deps;
      if (transcriber.mode === 'sync') {
        const transcription = await transcriber.transcribe({ audioFile, workDir, options: job.options });
        return finish(deps, job, transcription);
      }
      const started = await transcriber.start({ job, audioFile, workDir });
      const now = deps.clock();
      await deps.jobs.markHandedOff(job.id, {
        audio_duration_ms: started.audio_duration_ms,
        now,
        deadline: new Date(now.getTime() + ASYNC_DEADLINE_MS),
      });
      await deps.queue.scheduleCheck(job.id, 1, ASYNC_CHECK_INTERVAL_SECONDS);
      return 'started';
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
  });
}

/**
 * Finishes a job an asynchronous transcriber has, on its completion event or a scheduled check. A check
 * that finds the transcriber still busy schedules the next one, until the deadline.
 */
async function checkHandedOff(
  deps: ProcessDeps,
  jobId: string,
  attempt: number | undefined,
): Promise<ProcessOutcome> {
  const { transcriber } = deps;
  const job = await deps.jobs.get(jobId);
  if (job?.status !== 'processing' || !job.handedOffAt || transcriber.mode !== 'async') return 'skipped';

  return failOnJobFailure(deps, job, async () => {
    const outcome = await transcriber.poll(job);
    if (outcome.state === 'completed') return finish(deps, job, outcome.transcription);
    if (outcome.state === 'failed') {
      await deps.jobs.fail(job.id, outcome.error);
      return 'failed';
    }
    if (attempt === undefined) return 'waiting';
    const handedOff = new Date(job.handedOffAt ?? 0).getTime();
    if (deps.clock().getTime() >= handedOff + ASYNC_DEADLINE_MS) {
      throw new JobFailure('transcription_failed', 'The transcription engine did not finish in time.');
    }
    await deps.queue.scheduleCheck(job.id, attempt + 1, ASYNC_CHECK_INTERVAL_SECONDS);
    return 'waiting';
  });
}

/** Adds the summaries the job asked for, stores the result and completes the job. */
async function finish(deps: ProcessDeps, job: Job, transcription: Transcription): Promise<ProcessOutcome> {
  const { tldr, short_hand_notes } = job.options;
  const summaries =
    tldr || short_hand_notes
      ? await deps.summarizer.summarize(transcription, { tldr, short_hand_notes })
      : {};
  const key = resultKey(job.tenantId, job.id);
  await deps.media.putResult(key, { ...transcription, ...summaries });
  await deps.jobs.complete(job.id, { resultKey: key, audio_duration_ms: transcription.audio_duration_ms });
  return 'completed';
}

async function failOnJobFailure(
  deps: ProcessDeps,
  job: Job,
  work: () => Promise<ProcessOutcome>,
): Promise<ProcessOutcome> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof JobFailure)) throw error;
    await deps.jobs.fail(job.id, error.toJobError());
    return 'failed';
  }
}

/** Called for a message that exhausted its deliveries: the job must not stay queued or processing. */
export async function failAbandonedJob(jobs: JobStore, jobId: string): Promise<boolean> {
  return jobs.fail(jobId, {
    code: 'transcription_failed',
    message: 'Transcription failed repeatedly; the job was given up.',
  });
}
