import { describe, expect, it } from 'vitest';
import { type Job, newJob, newJobId } from '#core/job';
import { parseJobOptions } from '#core/options';
import type { JobStore, Lease } from '#core/ports';

const LEASE_MS = 60_000;
// Recent: DynamoDB deletes items whose TTL (submission + 90 days) has passed.
const T0 = new Date(Math.floor(Date.now() / 1000) * 1000);
const at = (ms: number) => new Date(T0.getTime() + ms);
/** A lease taken at `nowMs` after T0 for LEASE_MS, due when it ends. */
const lease = (nowMs: number, owner = 'worker-a'): Lease => ({
  owner,
  now: at(nowMs),
  until: at(nowMs + LEASE_MS),
  dueAt: at(nowMs + LEASE_MS),
});

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
      const first = await store().claim(job.id, lease(0));
      expect(first).toMatchObject({
        outcome: 'claimed',
        job: { status: 'processing', leaseOwner: 'worker-a' },
      });
      expect((await store().claim(job.id, lease(LEASE_MS - 1, 'worker-b'))).outcome).toBe('leased');
      const taken = await store().claim(job.id, lease(LEASE_MS + 1, 'worker-b'));
      expect(taken).toMatchObject({
        outcome: 'claimed',
        job: {
          leaseOwner: 'worker-b',
          leaseExpiresAt: at(2 * LEASE_MS + 1).getTime(),
          dueAt: at(2 * LEASE_MS + 1).toISOString(),
        },
      });
    });

    it('answers missing and finished jobs instead of claiming them', async () => {
      expect(await store().claim(newJobId(), lease(0))).toEqual({ outcome: 'missing' });
      const job = await stored();
      await store().claim(job.id, lease(0));
      expect(await store().complete(job.id, { resultKey: 'results/x.json', audio_duration_ms: 5 })).toBe(
        true,
      );
      expect((await store().claim(job.id, lease(10 * LEASE_MS))).outcome).toBe('finished');
    });

    it('completes only a processing job, and clears its lease', async () => {
      const job = await stored();
      expect(await store().complete(job.id, { resultKey: 'r', audio_duration_ms: 1 })).toBe(false);
      await store().claim(job.id, lease(0));
      expect(await store().complete(job.id, { resultKey: 'r', audio_duration_ms: 1200 })).toBe(true);
      const done = await store().get(job.id);
      expect(done).toMatchObject({ status: 'completed', resultKey: 'r', audio_duration_ms: 1200 });
      for (const gone of ['leaseExpiresAt', 'leaseOwner', 'dueAt']) expect(done).not.toHaveProperty(gone);
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
      const handOff = (nowMs: number) => ({
        audio_duration_ms: 900,
        now: at(nowMs),
        deadline: at(6 * 3_600_000),
        dueAt: at(nowMs + 1_200_000),
      });
      expect(await store().markHandedOff(job.id, handOff(0))).toBe(false);
      await store().claim(job.id, lease(0));
      expect(await store().markHandedOff(job.id, handOff(0))).toBe(true);
      expect(await store().markHandedOff(job.id, handOff(5000))).toBe(true);
      expect(await store().get(job.id)).toMatchObject({
        handedOffAt: T0.toISOString(),
        audio_duration_ms: 900,
        leaseExpiresAt: at(6 * 3_600_000).getTime(),
        dueAt: at(5000 + 1_200_000).toISOString(),
      });
      expect((await store().claim(job.id, lease(LEASE_MS * 10, 'worker-b'))).outcome).toBe('leased');
      // The transcriber's work is not a worker's to extend or release.
      expect(await store().extendLease(job.id, lease(LEASE_MS))).toBe(false);
      expect(await store().releaseLease(job.id, 'worker-a')).toBe(false);
    });

    it('extends and releases a lease only for the worker that holds it', async () => {
      const job = await stored();
      await store().claim(job.id, lease(0, 'owner'));
      expect(await store().extendLease(job.id, lease(1000, 'intruder'))).toBe(false);
      expect(await store().extendLease(job.id, lease(30_000, 'owner'))).toBe(true);
      expect(await store().get(job.id)).toMatchObject({
        leaseExpiresAt: at(30_000 + LEASE_MS).getTime(),
        dueAt: at(30_000 + LEASE_MS).toISOString(),
      });
      expect((await store().claim(job.id, lease(LEASE_MS + 1, 'other'))).outcome).toBe('leased');
      expect(await store().releaseLease(job.id, 'intruder')).toBe(false);
      expect(await store().releaseLease(job.id, 'owner')).toBe(true);
      expect((await store().claim(job.id, lease(LEASE_MS + 2, 'other'))).outcome).toBe('claimed');
      expect(await store().extendLease(job.id, lease(LEASE_MS + 3, 'owner'))).toBe(false);
    });

    it('records a plan for the lease holder only, gives the lease up, and counts distinct chunks done, before and after it', async () => {
      const job = await stored();
      await store().claim(job.id, lease(0, 'planner'));
      const plan = { chunks: 3, audio_duration_ms: 180_000, dueAt: at(1_800_000) };
      // Chunks are queued as they are cut: one may be done before the plan is recorded.
      expect(await store().markChunkDone(job.id, 2, at(5))).toEqual({ done: 1 });
      expect(await store().recordPlan(job.id, 'intruder', plan)).toBeUndefined();
      expect(await store().recordPlan(job.id, 'planner', plan)).toBe(1);
      const planned = await store().get(job.id);
      expect(planned).toMatchObject({
        chunksTotal: 3,
        audio_duration_ms: 180_000,
        dueAt: at(1_800_000).toISOString(),
      });
      expect(planned).not.toHaveProperty('leaseOwner');
      // The lease is given up: the last chunk's worker claims the job to assemble it.
      expect((await store().claim(job.id, lease(1, 'assembler'))).outcome).toBe('claimed');
      expect(await store().releaseLease(job.id, 'assembler', at(3_600_000))).toBe(true);
      expect((await store().get(job.id))?.dueAt).toBe(at(3_600_000).toISOString());

      const counts = [];
      for (const index of [0, 2]) counts.push(await store().markChunkDone(job.id, index, at(10)));
      expect(counts).toEqual([
        { done: 2, total: 3 },
        { done: 2, total: 3 },
      ]);
      // Two workers finishing the last chunks at once: exactly one of them sees every chunk done.
      const other = await stored();
      await store().claim(other.id, lease(0, 'planner'));
      expect(await store().recordPlan(other.id, 'planner', { ...plan, chunks: 2 })).toBe(0);
      const last = await Promise.all([0, 1].map((index) => store().markChunkDone(other.id, index, at(10))));
      expect(last.map((progress) => progress?.done).sort()).toEqual([1, 2]);
      expect(await store().markChunkDone(job.id, 1, at(20))).toEqual({ done: 3, total: 3 });
      expect((await store().get(job.id))?.chunksDone?.sort()).toEqual([0, 1, 2]);
      expect((await store().get(job.id))?.dueAt).toBe(at(20).toISOString());

      await store().fail(job.id, { code: 'internal', message: 'x' });
      expect(await store().markChunkDone(job.id, 1, at(30))).toBeUndefined();
      const ended = await store().get(job.id);
      expect(ended).not.toHaveProperty('chunksDone');
      expect(await store().recordPlan(job.id, 'assembler', plan)).toBeUndefined();
    });

    it('lists active jobs past their due time, earliest first, and moves a due time once', async () => {
      const early = await stored('tenant-due', at(-10 * 3_600_000));
      const later = await stored('tenant-due', at(-9 * 3_600_000));
      const finished = await stored('tenant-due', at(-10 * 3_600_000));
      await store().fail(finished.id, { code: 'internal', message: 'x' });
      const notYet = await stored('tenant-due', T0);
      const due = (await store().listDue(at(0), 1000)).map((job) => job.id);
      expect(due.indexOf(early.id)).toBeGreaterThanOrEqual(0);
      expect(due.indexOf(early.id)).toBeLessThan(due.indexOf(later.id));
      expect(due).not.toContain(finished.id);
      expect(due).not.toContain(notYet.id);

      expect(await store().setDue(early.id, at(60_000), 'not what it was')).toBe(false);
      expect(await store().setDue(early.id, at(60_000), early.dueAt)).toBe(true);
      expect(await store().setDue(early.id, at(120_000), early.dueAt)).toBe(false);
      expect((await store().listDue(at(0), 1000)).map((job) => job.id)).not.toContain(early.id);
      expect(await store().setDue(finished.id, at(0))).toBe(false);
    });

    it("counts a tenant's active jobs, up to a bound", async () => {
      const tenantId = `tenant-${newJobId()}`;
      const jobs = [await stored(tenantId), await stored(tenantId), await stored(tenantId)];
      await stored(`other-${newJobId()}`);
      expect(await store().countActive(tenantId, 10)).toBe(3);
      expect(await store().countActive(tenantId, 2)).toBe(2);
      await store().claim(jobs[0]?.id ?? '', lease(0));
      await store().complete(jobs[0]?.id ?? '', { resultKey: 'r', audio_duration_ms: 1 });
      await store().fail(jobs[1]?.id ?? '', { code: 'no_audio', message: 'x' });
      expect(await store().countActive(tenantId, 10)).toBe(1);
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
      await store().claim(jobs[0]?.id ?? '', lease(0));
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

    it("replaces a tenant's job with a tombstone: gone for every read and move, the same on a second deletion", async () => {
      const job = await stored('tenant-del');
      await store().claim(job.id, lease(0));
      expect(await store().markDeleted(job.id, 'another-tenant', at(1000))).toBeUndefined();
      const deleted = await store().markDeleted(job.id, 'tenant-del', at(1000));
      expect(deleted).toEqual({
        id: job.id,
        tenantId: 'tenant-del',
        deletedAt: at(1000).toISOString(),
        audioKey: job.audioKey,
      });
      expect(await store().markDeleted(job.id, 'tenant-del', at(9000))).toEqual(deleted);
      expect(await store().markDeleted(job.id, 'another-tenant', at(9000))).toBeUndefined();
      expect(await store().markDeleted(newJobId(), 'tenant-del', at(0))).toBeUndefined();
      // A worker still on it can neither complete, fail, extend nor claim it.
      expect(await store().get(job.id)).toBeUndefined();
      expect(await store().complete(job.id, { resultKey: 'r', audio_duration_ms: 1 })).toBe(false);
      expect(await store().fail(job.id, { code: 'internal', message: 'x' })).toBe(false);
      expect(await store().extendLease(job.id, lease(1000))).toBe(false);
      expect(await store().claim(job.id, lease(10 * LEASE_MS, 'worker-b'))).toEqual({ outcome: 'missing' });
      expect(await store().setDue(job.id, at(0))).toBe(false);
      // And no index finds it.
      const listed = await store().listByTenant({
        tenantId: 'tenant-del',
        since: at(-1000).toISOString(),
        limit: 100,
      });
      expect(listed.jobs.map((item) => item.id)).not.toContain(job.id);
      expect((await store().listDue(at(10 * 3_600_000), 1000)).map((item) => item.id)).not.toContain(job.id);
      expect(
        await store().recordWebhookAttempt(job.id, { status: 'retrying', attempts: 1, last_attempt_at: 'x' }),
      ).toBe(false);
    });

    it('records webhook attempts on a finished job, each later than the last, never on an active one', async () => {
      const job = await stored();
      const attempt = (attempts: number, status: 'retrying' | 'delivered' = 'retrying') => ({
        status,
        attempts,
        last_response_code: 500,
        last_attempt_at: at(attempts).toISOString(),
      });
      expect(await store().recordWebhookAttempt(job.id, attempt(1))).toBe(false);
      await store().claim(job.id, lease(0));
      await store().fail(job.id, { code: 'no_audio', message: 'x' });
      expect(await store().recordWebhookAttempt(job.id, attempt(1))).toBe(true);
      expect(await store().recordWebhookAttempt(job.id, attempt(1))).toBe(false);
      expect(await store().recordWebhookAttempt(job.id, attempt(3, 'delivered'))).toBe(true);
      expect(await store().recordWebhookAttempt(job.id, attempt(2))).toBe(false);
      expect(await store().get(job.id)).toMatchObject({ status: 'error', webhook: attempt(3, 'delivered') });
    });

    it('lists jobs of a shorter retention once expired, earliest first, and removes them only then', async () => {
      const make = async (retention: string | undefined) => {
        const job = newJob({
          id: newJobId(),
          tenantId: 'tenant-retention',
          options: parseJobOptions(retention ? { retention_days: retention } : {}),
          now: T0,
        });
        await store().create(job);
        return job;
      };
      const oneDay = await make('1');
      const twoDays = await make('2');
      const full = await make(undefined);
      expect(oneDay.expiresAt).toBe(T0.getTime() / 1000 + 86_400);
      const day = 86_400_000;
      const ids = async (nowMs: number) => (await store().listExpired(at(nowMs), 1000)).map((job) => job.id);
      expect(await ids(day - 1000)).not.toContain(oneDay.id);
      const later = await ids(2 * day);
      expect(later.indexOf(oneDay.id)).toBeGreaterThanOrEqual(0);
      expect(later.indexOf(oneDay.id)).toBeLessThan(later.indexOf(twoDays.id));
      // Jobs of the full 90 days are the TTL's and the lifecycle rules' to remove.
      expect(await ids(100 * day)).not.toContain(full.id);
      expect(await store().removeExpired(twoDays.id, at(day))).toBe(false);
      expect(await store().removeExpired(oneDay.id, at(day))).toBe(true);
      expect(await store().get(oneDay.id)).toBeUndefined();
      expect(await store().removeExpired(oneDay.id, at(day))).toBe(false);
      expect(await ids(2 * day)).not.toContain(oneDay.id);
    });
  });
}
