import { beforeEach, describe, expect, it } from 'vitest';
import { audioKey, resultKey, transcribeOutputKey, workKey } from '#commons/contract';
import { deleteJob } from '#core/delete-job';
import { newJob, newJobId } from '#core/job';
import { listJobs } from '#core/list-jobs';
import { parseJobOptions } from '#core/options';
import { expireJobs } from '#core/retention';
import { getJobStatus } from '#core/status';
import { MANIFEST_FILE } from '#core/work-files';
import { InMemoryJobStore, InMemoryMediaStore, manualClock, testLease } from '#test/helpers/memory-ports';

let jobs: InMemoryJobStore;
let media: InMemoryMediaStore;
let clock: ReturnType<typeof manualClock>;
const DAY = 86_400_000;

beforeEach(() => {
  jobs = new InMemoryJobStore();
  media = new InMemoryMediaStore();
  clock = manualClock();
});

/** A completed job with its audio, result and engine output stored. */
async function completedJob(tenantId: string, fields: Record<string, string> = {}) {
  const job = newJob({ id: newJobId(), tenantId, options: parseJobOptions(fields), now: clock() });
  await jobs.create(job);
  await jobs.claim(job.id, testLease(1000, clock()));
  const keys = [
    audioKey(tenantId, job.id),
    resultKey(tenantId, job.id),
    transcribeOutputKey(tenantId, job.id),
  ];
  for (const key of keys) media.objects.set(key, Buffer.from('{}'));
  await jobs.complete(job.id, { resultKey: resultKey(tenantId, job.id), audio_duration_ms: 10 });
  return { job, keys };
}

describe('deleting a job', () => {
  it('removes every object, answers the same when asked again, and the job is gone for every route', async () => {
    const { job, keys } = await completedJob('acme');
    const deps = { jobs, media, clock };
    const first = await deleteJob(deps, 'acme', job.id);
    expect(first).toEqual({ id: job.id, status: 'deleted', deleted_at: clock().toISOString() });
    for (const key of keys) expect(media.objects.has(key), key).toBe(false);
    clock.advance(60_000);
    expect(await deleteJob(deps, 'acme', job.id)).toEqual(first);
    await expect(getJobStatus({ jobs, media }, 'acme', job.id, clock())).rejects.toMatchObject({
      code: 'not_found',
    });
    expect((await listJobs(jobs, 'acme', {}, clock())).jobs).toEqual([]);
  });

  it('removes the working files of a job deleted while its chunks were out: they hold its audio', async () => {
    const job = newJob({ id: newJobId(), tenantId: 'acme', options: parseJobOptions({}), now: clock() });
    await jobs.create(job);
    const work = (name: string) => workKey('acme', job.id, name);
    const plan = {
      plan: { chunks: 2, audio_duration_ms: 200_000, details: null },
      files: [['chunk-0-0.wav'], ['chunk-1-0.wav']],
    };
    await media.putJson(work(MANIFEST_FILE), plan);
    for (const name of ['chunk-0-0.wav', 'chunk-1-0.wav', 'result-0.json'])
      media.objects.set(work(name), Buffer.from('{}'));
    const other = workKey('acme', newJobId(), 'chunk-0-0.wav');
    media.objects.set(other, Buffer.from('{}'));

    await deleteJob({ jobs, media, clock }, 'acme', job.id);
    expect([...media.objects.keys()]).toEqual([other]);
  });

  it("is a 404 for an unknown id, an absurd one and another tenant's job, which stays whole", async () => {
    const { job, keys } = await completedJob('other');
    const deps = { jobs, media, clock };
    for (const id of [newJobId(), 'x'.repeat(10_000), job.id]) {
      await expect(deleteJob(deps, 'acme', id)).rejects.toMatchObject({ code: 'not_found', field: 'id' });
    }
    expect((await getJobStatus({ jobs, media }, 'other', job.id, clock())).status).toBe('completed');
    for (const key of keys) expect(media.objects.has(key), key).toBe(true);
  });
});

describe('a shorter retention', () => {
  it('hides the job from its expiry on, and the sweep removes it and its objects; 90-day jobs stay', async () => {
    const short = await completedJob('acme', { retention_days: '2' });
    const kept = await completedJob('acme');
    expect(short.job.expiresAt).toBe(Math.floor(clock().getTime() / 1000) + 2 * 86_400);
    clock.advance(2 * DAY - 1000);
    expect(await expireJobs({ jobs, media, clock })).toEqual([]);
    expect((await getJobStatus({ jobs, media }, 'acme', short.job.id, clock())).retention_days).toBe(2);

    clock.advance(1000);
    // Gone for the API at once, before the sweep.
    await expect(getJobStatus({ jobs, media }, 'acme', short.job.id, clock())).rejects.toMatchObject({
      code: 'not_found',
    });
    expect((await listJobs(jobs, 'acme', {}, clock())).jobs.map((job) => job.id)).toEqual([kept.job.id]);
    expect(await expireJobs({ jobs, media, clock })).toEqual([short.job.id]);
    for (const key of short.keys) expect(media.objects.has(key), key).toBe(false);
    for (const key of kept.keys) expect(media.objects.has(key), key).toBe(true);
    expect(await expireJobs({ jobs, media, clock })).toEqual([]);
  });

  it('leaves a job that is still active to finish first', async () => {
    const job = newJob({
      id: newJobId(),
      tenantId: 'acme',
      options: parseJobOptions({ retention_days: '1' }),
      now: clock(),
    });
    await jobs.create(job);
    clock.advance(DAY + 1);
    expect(await expireJobs({ jobs, media, clock })).toEqual([]);
    expect(jobs.items.has(job.id)).toBe(true);
  });
});
