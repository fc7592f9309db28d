import { removeJobObjects } from './delete-job.ts';
import { isFinished } from './job.ts';
import type { Clock, JobStore, MediaStore } from './ports.ts';

export interface RetentionDeps {
  jobs: JobStore;
  media: MediaStore;
  clock: Clock;
}

/** Jobs removed per run; a larger backlog is worked through by the next runs. */
const EXPIRE_LIMIT = 200;

/**
 * Removes the jobs kept for fewer than 90 days (`retention_days`) whose time has run out: their
 * objects first, then the record, so that a run stopped halfway is finished by the next. Runs with
 * the sweeper, every few minutes; the API treats such a job as gone from its expiry on. (Jobs of the
 * full 90 days are removed by the table's TTL and the bucket's lifecycle rules.)
 */
export async function expireJobs(deps: RetentionDeps): Promise<string[]> {
  const now = deps.clock();
  const removed: string[] = [];
  for (const job of await deps.jobs.listExpired(now, EXPIRE_LIMIT)) {
    // A job ends within hours and is kept at least a day; one still active is left to finish first.
    if (!isFinished(job.status)) continue;
    await removeJobObjects(deps.media, job);
    if (await deps.jobs.removeExpired(job.id, now)) removed.push(job.id);
  }
  return removed;
}
