import { RequestError } from './errors.ts';
import { type Job, newJob } from './job.ts';
import { type ParseOptionsSettings, parseJobOptions } from './options.ts';
import type { JobQueue, JobStore, MediaStore } from './ports.ts';

export interface SubmitDeps {
  jobs: JobStore;
  media: MediaStore;
  queue: JobQueue;
}

/** Audio already streamed into the media store under the job's audio key. */
export interface ReceivedAudio {
  key: string;
  bytes: number;
}

export interface Submission {
  id: string;
  tenantId: string;
  fields: Record<string, string>;
  audio?: ReceivedAudio;
  /** Something wrong with the form found while reading it; the audio may still have been stored. */
  problem?: RequestError;
  now: Date;
}

/** Seconds a client refused for too many active jobs is told to wait: about what a short job takes. */
const CAPACITY_RETRY_SECONDS = 30;

/**
 * Refuses a submission (429) while the tenant has `cap` jobs queued or processing, before any audio
 * is received. The count comes from an eventually consistent index: the cap holds within a few jobs.
 */
export async function ensureCapacity(jobs: JobStore, tenantId: string, cap: number): Promise<void> {
  const active = await jobs.countActive(tenantId, cap);
  if (active >= cap) {
    throw new RequestError(
      'rate_limited',
      `You have ${cap} jobs queued or processing, the most at once; submit more when some have finished.`,
      undefined,
      CAPACITY_RETRY_SECONDS,
    );
  }
}

/**
 * Validates a submission whose audio is already stored, records the job and queues it. On a refusal
 * the stored audio is removed. Once the job is recorded it is accepted: should its start message fail
 * to be sent, the job stays queued and the sweeper sends the message when the job falls due.
 */
export async function submitJob(
  deps: SubmitDeps,
  submission: Submission,
  settings: ParseOptionsSettings = {},
): Promise<Job> {
  const { audio } = submission;
  let job: Job;
  try {
    if (submission.problem) throw submission.problem;
    const options = parseJobOptions(submission.fields, settings);
    if (!audio) {
      throw new RequestError('missing_audio', 'Send the audio file in a form part named "audio".', 'audio');
    }
    if (audio.bytes === 0)
      throw new RequestError('missing_audio', 'The audio file is empty (0 bytes).', 'audio');

    job = newJob({ id: submission.id, tenantId: submission.tenantId, options, now: submission.now });
    await deps.jobs.create(job);
  } catch (error) {
    // Cleanup must not hide the original error, which the caller reports.
    if (audio) await deps.media.delete(audio.key).catch(() => undefined);
    throw error;
  }
  await deps.queue.enqueue(job.id).catch(() => undefined);
  return job;
}
