import { createHash } from 'node:crypto';
import { RequestError } from './errors.ts';
import { type Job, newJob, type SubmissionRecord, toSubmissionRecord } from './job.ts';
import { type ParseOptionsSettings, parseJobOptions } from './options.ts';
import type { IdempotentRequests, JobQueue, JobStore, MediaStore } from './ports.ts';

export interface SubmitDeps {
  jobs: JobStore;
  media: MediaStore;
  queue: JobQueue;
}

/** Audio already streamed into the media store under the job's audio key. */
export interface ReceivedAudio {
  key: string;
  bytes: number;
  /** SHA-256 of the bytes (hex), which an idempotent submission compares. */
  sha256?: string;
}

export interface Submission {
  id: string;
  tenantId: string;
  fields: Record<string, string>;
  audio?: ReceivedAudio;
  /** Something wrong with the form found while reading it; the audio may still have been stored. */
  problem?: RequestError;
  /** The client's `Idempotency-Key`, already checked by parseIdempotencyKey. */
  idempotencyKey?: string;
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

/** The header that makes a submission idempotent. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** An `Idempotency-Key` value: 1 to 255 visible ASCII characters (a UUID is typical). */
export function parseIdempotencyKey(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(value)) {
    throw new RequestError(
      'invalid_request',
      `${IDEMPOTENCY_HEADER} must be 1 to 255 visible ASCII characters, such as a UUID.`,
      IDEMPOTENCY_HEADER,
    );
  }
  return value;
}

/**
 * What makes two submissions the same: their text parts as sent (in any order) and the bytes of their
 * audio. The multipart boundary, the part order and the file's name are left out, since a client
 * retrying the same request may change them.
 */
export function submissionFingerprint(
  fields: Record<string, string>,
  audioSha256: string | undefined,
): string {
  const parts = Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify({ fields: parts, audio: audioSha256 ?? null }))
    .digest('hex');
}

/**
 * Submits a job, once per `Idempotency-Key` when the client sent one: the same key with the same
 * submission within 24 hours answers the first job's record (and the audio received again is removed);
 * the same key with another submission is a `conflict`. Without a key, every submission is a new job.
 */
export async function submitOnce(
  deps: SubmitDeps & { idempotency: IdempotentRequests },
  submission: Submission,
  settings: ParseOptionsSettings = {},
): Promise<{ record: SubmissionRecord; replayed: boolean }> {
  const submit = async () => toSubmissionRecord(await submitJob(deps, submission, settings));
  const key = submission.idempotencyKey;
  if (key === undefined) return { record: await submit(), replayed: false };
  const { audio } = submission;
  try {
    const { result, replayed } = await deps.idempotency.once({
      scope: 'submit',
      tenantId: submission.tenantId,
      key,
      fingerprint: submissionFingerprint(submission.fields, audio?.sha256),
      work: submit,
    });
    if (replayed && audio) await deps.media.delete(audio.key).catch(() => undefined);
    return { record: result, replayed };
  } catch (error) {
    if (audio) await deps.media.delete(audio.key).catch(() => undefined);
    throw error;
  }
}
