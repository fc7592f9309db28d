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

/**
 * Validates a submission whose audio is already stored, records the job and queues it.
 * On any failure the stored audio is removed; a job that could not be queued is put in error,
 * so nothing waits in `queued` for a message that does not exist.
 */
export async function submitJob(
  deps: SubmitDeps,
  submission: Submission,
  settings: ParseOptionsSettings = {},
): Promise<Job> {
  const { audio } = submission;
  let created: Job | undefined;
  try {
    if (submission.problem) throw submission.problem;
    const options = parseJobOptions(submission.fields, settings);
    if (!audio) {
      throw new RequestError('missing_audio', 'Send the audio file in a form part named "audio".', 'audio');
    }
    if (audio.bytes === 0)
      throw new RequestError('missing_audio', 'The audio file is empty (0 bytes).', 'audio');

    const job = newJob({ id: submission.id, tenantId: submission.tenantId, options, now: submission.now });
    await deps.jobs.create(job);
    created = job;
    await deps.queue.enqueue(job.id);
    return job;
  } catch (error) {
    // Cleanup must not hide the original error, which the caller reports.
    if (created) {
      await deps.jobs
        .fail(created.id, { code: 'internal', message: 'The job could not be queued.' })
        .catch(() => false);
    } else if (audio) {
      await deps.media.delete(audio.key).catch(() => undefined);
    }
    throw error;
  }
}
