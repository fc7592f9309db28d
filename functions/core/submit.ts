import { createHash } from 'node:crypto';
import { clientUrlProblem } from '#commons/client-urls';
import { UPLOAD_TAG } from '#commons/contract';
import { RequestError } from './errors.ts';
import { onceForKey } from './idempotency.ts';
import { type Job, newJob, type SubmissionRecord, toSubmissionRecord } from './job.ts';
import { type ParseOptionsSettings, parseJobOptions } from './options.ts';
import type { IdempotentRequests, JobQueue, JobStore, MediaStore } from './ports.ts';
import { resolveUpload } from './upload.ts';

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
 * Validates a submission and records the job, whose audio is the streamed file part, a presigned
 * upload (`audio_ref`) or an address the worker will fetch (`audio_url`): exactly one of them. On a
 * refusal a streamed file is removed. Once the job is recorded it is accepted: should its start message
 * fail to be sent, the job stays queued and the sweeper sends the message when the job falls due.
 */
export async function submitJob(
  deps: SubmitDeps,
  submission: Submission,
  settings: ParseOptionsSettings = {},
): Promise<Job> {
  const { audio, tenantId, now } = submission;
  let job: Job;
  try {
    if (submission.problem) throw submission.problem;
    const { audio_ref: audioRef, audio_url: audioUrl, ...optionFields } = submission.fields;
    const sources = [
      audio && 'audio',
      audioRef !== undefined && 'audio_ref',
      audioUrl !== undefined && 'audio_url',
    ];
    const given = sources.filter((source): source is string => Boolean(source));
    if (given.length === 0) {
      throw new RequestError(
        'missing_audio',
        'Send the audio file in a form part named "audio", or an upload in "audio_ref", or an address in "audio_url".',
        'audio',
      );
    }
    if (given.length > 1) {
      throw new RequestError('invalid_request', `Send one of ${given.join(' and ')}, not both.`, given[1]);
    }
    const options = parseJobOptions(optionFields, settings);
    if (audio) {
      if (audio.bytes === 0)
        throw new RequestError('missing_audio', 'The audio file is empty (0 bytes).', 'audio');
      job = newJob({ id: submission.id, tenantId, options, now, audioKey: audio.key });
    } else if (audioRef !== undefined) {
      const upload = await resolveUpload(deps.media, tenantId, audioRef, now);
      job = newJob({ id: upload.jobId, tenantId, options, now, audioKey: upload.key });
    } else {
      job = newJob({
        id: submission.id,
        tenantId,
        options,
        now,
        audioUrl: parseAudioUrl(audioUrl ?? '', settings),
      });
    }
    if (!(await deps.jobs.create(job))) {
      throw new RequestError('invalid_request', 'audio_ref was already submitted.', 'audio_ref');
    }
  } catch (error) {
    // Cleanup must not hide the original error, which the caller reports.
    if (audio) await deps.media.delete(audio.key).catch(() => undefined);
    throw error;
  }
  if (submission.fields.audio_ref !== undefined) {
    // Kept with the job from now on; should this fail, the upload expires a day early, after the job ends.
    await deps.media.setTags(job.audioKey, { [UPLOAD_TAG.key]: UPLOAD_TAG.submitted }).catch(() => undefined);
  }
  await deps.queue.enqueue(job.id).catch(() => undefined);
  return job;
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
  const { audio } = submission;
  try {
    const outcome = await onceForKey(deps.idempotency, {
      scope: 'submit',
      tenantId: submission.tenantId,
      key: submission.idempotencyKey,
      fingerprint: () => submissionFingerprint(submission.fields, audio?.sha256),
      work: async () => toSubmissionRecord(await submitJob(deps, submission, settings)),
    });
    if (outcome.replayed && audio) await deps.media.delete(audio.key).catch(() => undefined);
    return { record: outcome.result, replayed: outcome.replayed };
  } catch (error) {
    if (audio) await deps.media.delete(audio.key).catch(() => undefined);
    throw error;
  }
}

/** An `audio_url`: an absolute https address of a public host (http and private hosts too in local mode). */
function parseAudioUrl(value: string, settings: ParseOptionsSettings): string {
  const problem = clientUrlProblem(value.trim(), { local: settings.localMode ?? false });
  if (problem) throw new RequestError('invalid_option', `audio_url ${problem}.`, 'audio_url');
  return new URL(value.trim()).href;
}
