import { describe, expect, it } from 'vitest';
import { type Job, newJob, newJobId } from '#core/job';
import { parseJobOptions } from '#core/options';
import type { JobStore } from '#core/ports';

const LEASE_MS = 60_000;
// Recent: DynamoDB deletes items whose TTL (submission + 90 days) has passed.
const T0 = new Date(Math.floor(Date.now() / 1000) * 1000);
const at = (ms: number) => new Date(T0.getTime() + ms);

/**
 * The behaviour every JobStore must have, run against the in-memory store (unit) and DynamoDB
 * (integration), so that the unit tests of core rely on what the real adapter does.
 */
export function describeJobStore(name: string, store: () => JobStore): void {
  const stored = async (tenantId = 'tenant-a', submittedAt = T0, custom = ''): Promise<Job> => {
    const job = newJob({ id: newJobId(), tenantId, options: parseJobOptions({ custom }), now: submittedAt });
    await store().create(job);
    return job;
  };

  describe(`${name} job store`, () => {
    it('keeps a created job as it was given', async () => {
      const job = await stored();
      expect(await store().get(job.id)).toEqual(job);
      expect(await store().get(newJobId())).toBeUndefined();
    });

    it('claims a queued job once, and again only after its lease has run out', async () => {
      const job = await stored();
      const first = await store().claim(job.id, T0, LEASE_MS);
      expect(first).toMatchObject({ outcome: 'claimed', job: { status: 'processing' } });
      expect((await store().claim(job.id, at(LEASE_MS - 1), LEASE_MS)).outcome).toBe('leased');
      const taken = await store().claim(job.id, at(LEASE_MS + 1), LEASE_MS);
      expect(taken).toMatchObject({
        outcome: 'claimed',
        job: { leaseExpiresAt: at(2 * LEASE_MS + 1).getTime() },
      });
    });

    it('answers missing and finished jobs instead of claiming them', async () => {
      expect(await store().claim(newJobId(), T0, LEASE_MS)).toEqual({ outcome: 'missing' });
      const job = await stored();
      await store().claim(job.id, T0, LEASE_MS);
      expect(await store().complete(job.id, { resultKey: 'results/x.json', audio_duration_ms: 5 })).toBe(
        true,
      );
      expect((await store().claim(job.id, at(10 * LEASE_MS), LEASE_MS)).outcome).toBe('finished');
    });

    it('completes only a processing job, and clears its lease', async () => {
      const job = await stored();
      expect(await store().complete(job.id, { resultKey: 'r', audio_duration_ms: 1 })).toBe(false);
      await store().claim(job.id, T0, LEASE_MS);
      expect(await store().complete(job.id, { resultKey: 'r', audio_duration_ms: 1200 })).toBe(true);
      const done = await store().get(job.id);
      expect(done).toMatchObject({ status: 'completed', resultKey: 'r', audio_duration_ms: 1200 });
      expect(done).not.toHaveProperty('leaseExpiresAt');
      expect(await store().complete(job.id, { resultKey: 'other', audio_duration_ms: 1 })).toBe(false);
    });

    it('fails a queued or processing job, never a finished one', async () => {
      const queued = await stored();
      const error = { code: 'no_audio', message: 'none' } as const;
      expect(await store().fail(queued.id, error)).toBe(true);
      expect(await store().get(queued.id)).toMatchObject({ status: 'error', error });
      expect(await store().fail(queued.id, { code: 'internal', message: 'again' })).toBe(false);
      expect((await store().get(queued.id))?.error).toEqual(error);
      expect(await store().fail(newJobId(), error)).toBe(false);
    });

    it('records a hand-off once, with the deadline as the lease', async () => {
      const job = await stored();
      expect(await store().markHandedOff(job.id, { audio_duration_ms: 1, now: T0, deadline: at(1) })).toBe(
        false,
      );
      await store().claim(job.id, T0, LEASE_MS);
      const deadline = at(6 * 3_600_000);
      expect(await store().markHandedOff(job.id, { audio_duration_ms: 900, now: T0, deadline })).toBe(true);
      await store().markHandedOff(job.id, { audio_duration_ms: 900, now: at(5000), deadline });
      expect(await store().get(job.id)).toMatchObject({
        handedOffAt: T0.toISOString(),
        audio_duration_ms: 900,
        leaseExpiresAt: deadline.getTime(),
      });
      expect((await store().claim(job.id, at(LEASE_MS * 10), LEASE_MS)).outcome).toBe('leased');
    });

    it("lists a tenant's jobs newest first, a page at a time, filtered, since a time", async () => {
      const tenantId = `tenant-${newJobId()}`;
      const jobs: Job[] = [];
      for (let i = 0; i < 5; i++) jobs.push(await stored(tenantId, at(i * 1000), i % 2 ? 'odd' : 'even'));
      await stored(`other-${newJobId()}`, at(500));
      const since = at(1000).toISOString();
      // A cursor means that more jobs may follow: the last page may come back empty.
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await store().listByTenant({ tenantId, since, limit: 2, ...(cursor ? { cursor } : {}) });
        pages.push(page.jobs.map((job) => job.id));
        cursor = page.cursor;
      } while (cursor && pages.length < 10);
      expect(pages.flat()).toEqual([jobs[4]?.id, jobs[3]?.id, jobs[2]?.id, jobs[1]?.id]);
      expect(pages[0]).toHaveLength(2);
      expect(pages.every((page) => page.length <= 2)).toBe(true);

      const odd = await store().listByTenant({
        tenantId,
        since: at(0).toISOString(),
        limit: 10,
        search: 'odd',
      });
      expect(odd.jobs.map((job) => job.id)).toEqual([jobs[3]?.id, jobs[1]?.id]);
      await store().claim(jobs[0]?.id ?? '', T0, LEASE_MS);
      const processing = await store().listByTenant({
        tenantId,
        since: at(0).toISOString(),
        limit: 10,
        status: 'processing',
      });
      expect(processing.jobs.map((job) => job.id)).toEqual([jobs[0]?.id]);
    });

    it("refuses another tenant's cursor and a forged one", async () => {
      const tenantId = `tenant-${newJobId()}`;
      for (let i = 0; i < 3; i++) await stored(tenantId, at(i));
      const since = at(0).toISOString();
      const { cursor } = await store().listByTenant({ tenantId, since, limit: 1 });
      expect(cursor).toBeDefined();
      await expect(
        store().listByTenant({ tenantId: 'someone-else', since, limit: 1, cursor: cursor ?? '' }),
      ).rejects.toMatchObject({ code: 'invalid_request', field: 'cursor' });
      await expect(
        store().listByTenant({ tenantId, since, limit: 1, cursor: 'not-a-cursor' }),
      ).rejects.toMatchObject({ code: 'invalid_request', field: 'cursor' });
    });
  });
}
