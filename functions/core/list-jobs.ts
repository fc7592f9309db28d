import { z } from 'zod';
import { RETENTION_MS } from '#commons/contract';
import { RequestError } from './errors.ts';
import { isExpired, JOB_STATUSES, type JobSummary, toJobSummary } from './job.ts';
import type { JobStore } from './ports.ts';

const DEFAULT_PAGE_SIZE = 25;
const MAX_PAGE_SIZE = 100;

/** The list route's query parameters, as the handler parses them (and the OpenAPI document describes). */
export const listQuery = z.object({
  limit: z.coerce
    .number({ error: `limit must be a number from 1 to ${MAX_PAGE_SIZE}.` })
    .int()
    .min(1, { error: `limit must be a number from 1 to ${MAX_PAGE_SIZE}.` })
    .max(MAX_PAGE_SIZE, { error: `limit must be a number from 1 to ${MAX_PAGE_SIZE}.` })
    .default(DEFAULT_PAGE_SIZE),
  cursor: z.string().min(1).optional(),
  status: z.enum(JOB_STATUSES, { error: `status must be one of: ${JOB_STATUSES.join(', ')}.` }).optional(),
  q: z.string().trim().max(200, { error: 'q must be at most 200 characters.' }).optional(),
});

export interface JobList {
  jobs: JobSummary[];
  next_cursor: string | null;
}

/**
 * A tenant's jobs of the last 90 days, newest first, a page at a time; filtered by status and by
 * text in the id or custom value. Jobs past their retention never appear, even before they are removed.
 */
export async function listJobs(
  jobs: JobStore,
  tenantId: string,
  parameters: Record<string, string | undefined>,
  now: Date,
): Promise<JobList> {
  const parsed = listQuery.safeParse(parameters);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RequestError(
      'invalid_request',
      issue?.message ?? 'Invalid query.',
      String(issue?.path[0] ?? ''),
    );
  }
  const { limit, cursor, status, q } = parsed.data;
  const since = new Date(now.getTime() - RETENTION_MS).toISOString();
  const page = await jobs.listByTenant({
    tenantId,
    since,
    limit,
    ...(cursor ? { cursor } : {}),
    ...(status ? { status } : {}),
    ...(q ? { search: q.toLowerCase() } : {}),
  });
  // A job kept for fewer days is gone from its expiry on, though its removal may be minutes away.
  const kept = page.jobs.filter((job) => !isExpired(job, now));
  return { jobs: kept.map(toJobSummary), next_cursor: page.cursor ?? null };
}
