import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { newJob, newJobId } from '#core/job';
import { parseJobOptions } from '#core/options';
import { InMemoryJobStore, testLease } from '#test/helpers/memory-ports';

type JobMetrics = typeof import('#aws/job-metrics');

/** The embedded-metric-format documents the module printed, with the setting POWERTOOLS_METRICS_DISABLED given. */
async function capture(disabled: 'true' | 'false', run: (metrics: JobMetrics) => Promise<void>) {
  vi.resetModules();
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', disabled);
  vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'UnitTest');
  const printed: string[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    printed.push(String(chunk));
    return true;
  });
  try {
    await run(await import('#aws/job-metrics'));
  } finally {
    write.mockRestore();
  }
  return printed
    .flatMap((chunk) => chunk.split('\n'))
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function storedJob(jobs: InMemoryJobStore) {
  const job = newJob({ id: newJobId(), tenantId: 'acme', options: parseJobOptions({}), now: new Date() });
  await jobs.create(job);
  return job;
}

let jobs: InMemoryJobStore;
beforeEach(() => {
  jobs = new InMemoryJobStore();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('job metrics', () => {
  it('records a job claimed and completed in this process: outcome, audio minutes and real-time factor', async () => {
    const emitted = await capture('false', async ({ withJobMetrics }) => {
      const observed = withJobMetrics(jobs, { engine: 'sphinx' });
      const job = await storedJob(jobs);
      await observed.claim(job.id, testLease(60_000));
      await observed.complete(job.id, { resultKey: 'results/x.json', audio_duration_ms: 90_000 });
    });
    expect(emitted).toHaveLength(3);
    expect(emitted[0]).toMatchObject({ JobsEnded: 1, outcome: 'completed', service: 'transcription' });
    expect(emitted[1]).toMatchObject({ AudioMinutes: 1.5 });
    expect(emitted[2]).toMatchObject({ engine: 'sphinx', RealTimeFactor: expect.any(Number) });
    const metadata = emitted[0]?._aws as
      | { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] }
      | undefined;
    const directive = metadata?.CloudWatchMetrics[0];
    expect(directive?.Namespace).toBe('UnitTest');
    expect(directive?.Dimensions[0]).toEqual(expect.arrayContaining(['service', 'outcome']));
  });

  it('records a failed job by its error code, and nothing for a transition that did not happen', async () => {
    const emitted = await capture('false', async ({ withJobMetrics }) => {
      const observed = withJobMetrics(jobs);
      const job = await storedJob(jobs);
      await observed.fail(job.id, { code: 'unsupported_media', message: 'not audio' });
      // A redelivered message: the job has ended already, so neither call changes it.
      await observed.fail(job.id, { code: 'transcription_failed', message: 'again' });
      await observed.complete(job.id, { resultKey: 'results/x.json', audio_duration_ms: 1000 });
    });
    expect(emitted).toEqual([expect.objectContaining({ JobsEnded: 1, outcome: 'unsupported_media' })]);
  });

  it('gives no real-time factor for a job completed by another invocation (Amazon Transcribe)', async () => {
    const job = await storedJob(jobs);
    await jobs.claim(job.id, testLease(60_000));
    const emitted = await capture('false', async ({ withJobMetrics }) => {
      await withJobMetrics(jobs, { engine: 'transcribe' }).complete(job.id, {
        resultKey: 'results/x.json',
        audio_duration_ms: 60_000,
      });
    });
    expect(emitted.map((document) => Object.keys(document).find((key) => /^[A-Z]/.test(key)))).toEqual([
      'JobsEnded',
      'AudioMinutes',
    ]);
  });

  it('counts dead-lettered messages and messages handed back, and no zero', async () => {
    const emitted = await capture('false', async ({ recordDeadLetteredMessage, recordWorkerFailures }) => {
      recordDeadLetteredMessage();
      recordWorkerFailures(0);
      recordWorkerFailures(2);
    });
    expect(emitted).toEqual([
      expect.objectContaining({ DeadLetteredMessages: 1 }),
      expect.objectContaining({ WorkerFailures: 2 }),
    ]);
  });

  it('prints nothing with POWERTOOLS_METRICS_DISABLED=true, as in the local runtime and the tests', async () => {
    const emitted = await capture('true', async ({ withJobMetrics, recordDeadLetteredMessage }) => {
      const observed = withJobMetrics(jobs, { engine: 'sphinx' });
      const job = await storedJob(jobs);
      await observed.claim(job.id, testLease(60_000));
      await observed.complete(job.id, { resultKey: 'results/x.json', audio_duration_ms: 1000 });
      recordDeadLetteredMessage();
    });
    expect(emitted).toEqual([]);
  });
});
