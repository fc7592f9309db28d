import { RequestError } from './errors.ts';
import { isExpired, type Job, type StatusRecord, toStatusRecord } from './job.ts';
import type { JobStore, MediaStore } from './ports.ts';

export interface StatusDeps {
  jobs: JobStore;
  media: MediaStore;
}

/** Longer ids are never issued; refusing them early keeps them out of the table request. */
export const MAX_ID_LENGTH = 128;

/**
 * A tenant's job; another tenant's job is as missing as an unknown one, and so is a deleted job and
 * one past its retention.
 */
export async function findTenantJob(jobs: JobStore, tenantId: string, id: string, now: Date): Promise<Job> {
  const job = id.length <= MAX_ID_LENGTH ? await jobs.get(id) : undefined;
  if (!job || job.tenantId !== tenantId || isExpired(job, now)) {
    throw new RequestError('not_found', `No job with id "${id}".`, 'id');
  }
  return job;
}

/** The status record of a tenant's job (see findTenantJob for the jobs that are missing). */
export async function getJobStatus(
  deps: StatusDeps,
  tenantId: string,
  id: string,
  now = new Date(),
): Promise<StatusRecord> {
  const job = await findTenantJob(deps.jobs, tenantId, id, now);
  if (job.status === 'completed' && job.resultKey) {
    return toStatusRecord(job, await deps.media.getResult(job.resultKey));
  }
  return toStatusRecord(job);
}
