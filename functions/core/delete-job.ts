import { resultKey, transcribeOutputKey } from '#commons/contract';
import { RequestError } from './errors.ts';
import type { Job } from './job.ts';
import type { Clock, JobStore, MediaStore } from './ports.ts';
import { MAX_ID_LENGTH } from './status.ts';
import { removeAllWorkFiles } from './work-files.ts';

export interface DeleteDeps {
  jobs: JobStore;
  media: MediaStore;
  clock: Clock;
}

/** The answer to a deletion, the same however often it is asked. */
export interface DeletionRecord {
  id: string;
  status: 'deleted';
  deleted_at: string;
}

/**
 * Every object a job may have in the media store: its audio, its result, the engine's output, and the
 * working files of a job deleted while its chunks were out (they hold pieces of its audio).
 */
export async function removeJobObjects(
  media: MediaStore,
  job: Pick<Job, 'id' | 'tenantId' | 'audioKey'>,
): Promise<void> {
  const keys = [job.audioKey, resultKey(job.tenantId, job.id), transcribeOutputKey(job.tenantId, job.id)];
  await Promise.all([...keys.map((key) => media.delete(key)), removeAllWorkFiles(media, job)]);
}

/**
 * Deletes a tenant's job: the record becomes a tombstone first, so that a worker still on the job
 * fails its next status change and never completes it, then its objects are removed. Deleting again
 * answers the same and removes the objects again (an earlier attempt may have stopped halfway).
 * Another tenant's job is as unknown as a missing one.
 */
export async function deleteJob(deps: DeleteDeps, tenantId: string, id: string): Promise<DeletionRecord> {
  const deleted =
    id.length <= MAX_ID_LENGTH ? await deps.jobs.markDeleted(id, tenantId, deps.clock()) : undefined;
  if (!deleted) throw new RequestError('not_found', `No job with id "${id}".`, 'id');
  await removeJobObjects(deps.media, deleted);
  return { id: deleted.id, status: 'deleted', deleted_at: deleted.deletedAt };
}
