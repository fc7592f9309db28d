import { UPLOAD_TAG } from '#commons/contract';
import { RequestError } from './errors.ts';
import { type Job, newJob } from './job.ts';
import { type ParseOptionsSettings, parseJobOptions } from './options.ts';
import type { JobQueue, JobStore, MediaStore } from './ports.ts';
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

export interface SubmitSettings extends ParseOptionsSettings {
  /** Local mode fetches `http://` addresses and private networks too (DESIGN 3). */
  allowHttpUrls?: boolean;
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
  settings: SubmitSettings = {},
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

/** An `audio_url`: an absolute https address (http too in local mode), without credentials in it. */
function parseAudioUrl(value: string, settings: SubmitSettings): string {
  const url = URL.canParse(value.trim()) ? new URL(value.trim()) : undefined;
  const schemes = settings.allowHttpUrls ? ['https:', 'http:'] : ['https:'];
  if (!url || !schemes.includes(url.protocol) || url.hostname === '') {
    throw new RequestError(
      'invalid_option',
      `audio_url must be an absolute ${settings.allowHttpUrls ? 'http:// or https://' : 'https://'} address.`,
      'audio_url',
    );
  }
  if (url.username || url.password) {
    throw new RequestError(
      'invalid_option',
      'audio_url must not carry a user name or password.',
      'audio_url',
    );
  }
  if (url.href.length > 2048)
    throw new RequestError('invalid_option', 'audio_url is longer than 2,048 characters.', 'audio_url');
  return url.href;
}
