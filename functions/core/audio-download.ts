import { AUDIO_DOWNLOAD_URL_EXPIRY_SECONDS } from '#commons/contract';
import { RequestError } from './errors.ts';
import type { JobStore, MediaStore } from './ports.ts';
import { findTenantJob } from './status.ts';

/** What `GET /v1-beta/transcript/audio` answers: where to read the job's audio, until when. */
export interface AudioDownload {
  download_url: string;
  expires_at: string;
}

/**
 * A short-lived presigned GET of a tenant's job's audio, as it was submitted (for the console's player).
 * A job that is unknown, another tenant's, deleted or past its retention is missing; so is audio that is
 * not stored: an `audio_url` not fetched yet, or one whose fetch failed.
 */
export async function getAudioDownload(
  deps: { jobs: JobStore; media: MediaStore },
  tenantId: string,
  id: string,
  now = new Date(),
): Promise<AudioDownload> {
  const job = await findTenantJob(deps.jobs, tenantId, id, now);
  if (!(await deps.media.describe(job.audioKey))) {
    throw new RequestError(
      'not_found',
      job.audioUrl && job.status !== 'error'
        ? `The audio of job "${id}" is not fetched from its audio_url yet.`
        : `Job "${id}" has no stored audio.`,
      'id',
    );
  }
  return {
    download_url: await deps.media.presignDownload(job.audioKey, AUDIO_DOWNLOAD_URL_EXPIRY_SECONDS),
    expires_at: new Date(now.getTime() + AUDIO_DOWNLOAD_URL_EXPIRY_SECONDS * 1000).toISOString(),
  };
}
