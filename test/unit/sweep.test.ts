import { beforeEach, describe, expect, it } from 'vitest';
import { ASYNC_DEADLINE_MS, JOB_DEADLINE_MS, QUEUED_DUE_MS } from '#commons/contract';
import { type Job, newJob, newJobId } from '#core/job';
import { parseJobOptions } from '#core/options';
import { CHECK_DUE_MS, CHUNKS_DUE_MS } from '#core/process-job';
import { sweepJobs } from '#core/sweep';
import { InMemoryJobQueue, InMemoryJobStore, manualClock, testLease } from '#test/helpers/memory-ports';

let jobs: InMemoryJobStore;
let queue: InMemoryJobQueue;
let clock: ReturnType<typeof manualClock>;
const sweep = () => sweepJobs({ jobs, queue, clock });

async function queuedJob(): Promise<Job> {
  const job = newJob({ id: newJobId(), tenantId: 'acme', options: parseJobOptions({}), now: clock() });
  await jobs.create(job);
  return job;
}

beforeEach(() => {
  jobs = new InMemoryJobStore();
  queue = new InMemoryJobQueue();
  clock = manualClock();
});

describe('the sweeper', () => {
  it('sends the start message again for a queued job nobody started, once per due time', async () => {
    const job = await queuedJob();
    expect(await sweep()).toEqual({ requeued: [], checked: [], rechunked: [], failed: [] });
    clock.advance(QUEUED_DUE_MS);
    expect((await sweep()).requeued).toEqual([job.id]);
    expect(queue.sent).toEqual([{ jobId: job.id, delaySeconds: 0 }]);
    expect(await sweep()).toEqual({ requeued: [], checked: [], rechunked: [], failed: [] });
    clock.advance(QUEUED_DUE_MS);
    expect((await sweep()).requeued).toEqual([job.id]);
  });

  it('sends a start message for a job whose worker died, once its lease and due time have passed', async () => {
    const job = await queuedJob();
    await jobs.claim(job.id, testLease(150_000, clock()));
    clock.advance(149_000);
    expect((await sweep()).requeued).toEqual([]);
    clock.advance(2_000);
    expect((await sweep()).requeued).toEqual([job.id]);
    expect((await jobs.get(job.id))?.status).toBe('processing');
  });

  it('leaves a job alone while its worker renews the lease, even if the due time lagged', async () => {
    const job = await queuedJob();
    await jobs.claim(job.id, { ...testLease(150_000, clock()), dueAt: clock() });
    clock.advance(1);
    expect(await sweep()).toEqual({ requeued: [], checked: [], rechunked: [], failed: [] });
    expect((await jobs.get(job.id))?.dueAt).toBe(new Date(clock().getTime() + 149_999).toISOString());
  });

  it('sends a check for a job handed off whose chain of checks broke', async () => {
    const job = await queuedJob();
    await jobs.claim(job.id, testLease(150_000, clock()));
    await jobs.markHandedOff(job.id, {
      audio_duration_ms: 1,
      now: clock(),
      deadline: new Date(clock().getTime() + ASYNC_DEADLINE_MS),
      dueAt: new Date(clock().getTime() + CHECK_DUE_MS),
    });
    clock.advance(CHECK_DUE_MS);
    expect((await sweep()).checked).toEqual([job.id]);
    expect(queue.sent).toEqual([{ jobId: job.id, check: 3, delaySeconds: 0 }]);
    expect(await sweep()).toEqual({ requeued: [], checked: [], rechunked: [], failed: [] });
  });

  it('sends again only the chunks of a fanned-out job that nobody finished, once it is due', async () => {
    const job = await queuedJob();
    const owner = 'planner';
    await jobs.claim(job.id, testLease(150_000, clock(), owner));
    await jobs.recordPlan(job.id, owner, {
      chunks: 4,
      audio_duration_ms: 240_000,
      dueAt: new Date(clock().getTime() + CHUNKS_DUE_MS),
    });
    await jobs.markChunkDone(job.id, 2, new Date(clock().getTime() + CHUNKS_DUE_MS));
    clock.advance(CHUNKS_DUE_MS - 1);
    expect((await sweep()).rechunked).toEqual([]);
    clock.advance(1);
    expect(await sweep()).toEqual({ requeued: [], checked: [], rechunked: [job.id], failed: [] });
    expect(queue.sent).toEqual([0, 1, 3].map((chunk) => ({ jobId: job.id, chunk, delaySeconds: 0 })));
    expect((await sweep()).rechunked).toEqual([]);
  });

  it('sends a start message for a fanned-out job whose chunks are all done but that nobody assembled', async () => {
    const job = await queuedJob();
    await jobs.claim(job.id, testLease(150_000, clock(), 'planner'));
    const dueAt = new Date(clock().getTime() + CHUNKS_DUE_MS);
    await jobs.recordPlan(job.id, 'planner', { chunks: 2, audio_duration_ms: 1, dueAt });
    for (const index of [1, 0]) await jobs.markChunkDone(job.id, index, dueAt);
    clock.advance(CHUNKS_DUE_MS);
    expect((await sweep()).rechunked).toEqual([job.id]);
    expect(queue.sent).toEqual([{ jobId: job.id, delaySeconds: 0 }]);
  });

  it('leaves a fanned-out job alone while a worker assembles it', async () => {
    const job = await queuedJob();
    await jobs.claim(job.id, testLease(150_000, clock(), 'planner'));
    const dueAt = new Date(clock().getTime() + CHUNKS_DUE_MS);
    await jobs.recordPlan(job.id, 'planner', { chunks: 1, audio_duration_ms: 1, dueAt });
    await jobs.markChunkDone(job.id, 0, dueAt);
    clock.advance(CHUNKS_DUE_MS);
    await jobs.claim(job.id, testLease(150_000, clock(), 'assembler'));
    clock.advance(1);
    expect(await sweep()).toEqual({ requeued: [], checked: [], rechunked: [], failed: [] });
    expect(queue.sent).toEqual([]);
  });

  it('ends a job past its deadline in error, whatever it was waiting for', async () => {
    const queued = await queuedJob();
    const stuck = await queuedJob();
    await jobs.claim(stuck.id, testLease(150_000, clock()));
    clock.advance(JOB_DEADLINE_MS);
    expect((await sweep()).failed.sort()).toEqual([queued.id, stuck.id].sort());
    for (const id of [queued.id, stuck.id]) {
      expect(await jobs.get(id)).toMatchObject({ status: 'error', error: { code: 'transcription_failed' } });
    }
    expect(queue.sent).toEqual([]);
  });

  it('never touches a finished job, and acts once when two sweeps run at the same time', async () => {
    const finished = await queuedJob();
    await jobs.fail(finished.id, { code: 'no_audio', message: 'x' });
    const job = await queuedJob();
    clock.advance(QUEUED_DUE_MS);
    const [first, second] = await Promise.all([sweep(), sweep()]);
    expect([...first.requeued, ...second.requeued]).toEqual([job.id]);
    expect(queue.sent).toEqual([{ jobId: job.id, delaySeconds: 0 }]);
  });
});
