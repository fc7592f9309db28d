import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobFailure } from './errors.ts';
import { resultKey } from './job.ts';
import type { JobStore, MediaStore, Transcriber } from './ports.ts';

export interface ProcessDeps {
  jobs: JobStore;
  media: MediaStore;
  transcriber: Transcriber;
  /** How long a worker holds a job before a redelivered message may take it over. */
  leaseMs: number;
}

export type ProcessOutcome = 'completed' | 'failed' | 'skipped';

/** Thrown when another worker holds the job: the message must come back later, not be dropped. */
export class JobBusy extends Error {
  constructor(id: string) {
    super(`Job ${id} is being processed by another worker.`);
    this.name = 'JobBusy';
  }
}

/**
 * Runs one job: claim, fetch audio, transcribe, store the result, complete.
 * A JobFailure ends the job in error; any other error propagates so that the queue retries,
 * and a finished job is never run again.
 */
export async function processJob(deps: ProcessDeps, jobId: string): Promise<ProcessOutcome> {
  const claim = await deps.jobs.claim(jobId, new Date(), deps.leaseMs);
  if (claim.outcome === 'missing' || claim.outcome === 'finished') return 'skipped';
  if (claim.outcome === 'leased') throw new JobBusy(jobId);

  const { job } = claim;
  const workDir = await mkdtemp(join(tmpdir(), 'job-'));
  try {
    const audioFile = join(workDir, 'input');
    await deps.media.downloadToFile(job.audioKey, audioFile);
    const result = await deps.transcriber.transcribe({ audioFile, workDir, options: job.options });
    const key = resultKey(job.tenantId, job.id);
    await deps.media.putResult(key, result);
    await deps.jobs.complete(job.id, {
      resultKey: key,
      audio_duration_ms: result.audio_duration_ms,
      now: new Date(),
    });
    return 'completed';
  } catch (error) {
    if (!(error instanceof JobFailure)) throw error;
    await deps.jobs.fail(job.id, error.toJobError(), new Date());
    return 'failed';
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/** Called for a message that exhausted its deliveries: the job must not stay queued or processing. */
export async function failAbandonedJob(jobs: JobStore, jobId: string): Promise<boolean> {
  return jobs.fail(
    jobId,
    { code: 'transcription_failed', message: 'Transcription failed repeatedly; the job was given up.' },
    new Date(),
  );
}
