import { Webhook } from 'standardwebhooks';
import { beforeEach, describe, expect, it } from 'vitest';
import { WEBHOOK_GIVE_UP_MS, WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_BASE_SECONDS } from '#commons/contract';
import { type Job, newJob, newJobId, toStatusRecord } from '#core/job';
import { parseJobOptions } from '#core/options';
import type { WebhookResponse, WebhookSender } from '#core/ports';
import {
  createWebhookSecret,
  deliverWebhook,
  queueWebhooksOnFinish,
  rotateWebhookSecret,
  WEBHOOK_SECRET_GRACE_MS,
  type WebhookDeps,
  webhookRetryDelaySeconds,
} from '#core/webhooks';
import {
  InMemoryJobStore,
  InMemoryWebhookQueue,
  InMemoryWebhookSecretStore,
  manualClock,
  testLease,
} from '#test/helpers/memory-ports';

const TENANT = 'acme';
const HOOK = 'https://hooks.example.com/transcripts';

/** A receiver that answers what the test tells it to, and keeps every request. */
class ScriptedSender implements WebhookSender {
  readonly requests: { url: string; body: string; headers: Record<string, string> }[] = [];
  constructor(public answer: (n: number) => WebhookResponse) {}

  async post(url: string, body: string, headers: Record<string, string>): Promise<WebhookResponse> {
    this.requests.push({ url, body, headers });
    return this.answer(this.requests.length);
  }
}

const answered = (statusCode: number): WebhookResponse => ({ outcome: 'answered', statusCode });

let jobs: InMemoryJobStore;
let queue: InMemoryWebhookQueue;
let secrets: InMemoryWebhookSecretStore;
let clock: ReturnType<typeof manualClock>;
let secret: string;

beforeEach(async () => {
  jobs = new InMemoryJobStore();
  queue = new InMemoryWebhookQueue();
  secrets = new InMemoryWebhookSecretStore();
  clock = manualClock(new Date());
  secret = await createWebhookSecret(secrets, TENANT, clock());
});

function deps(sender: WebhookSender): WebhookDeps {
  return {
    jobs,
    secrets,
    sender,
    queue,
    clock,
    statusUrl: (id) => `https://api.example.com/prod/v1-beta/transcript/status?id=${id}`,
  };
}

/** A job that reached `completed` (or `error`), as the worker leaves it. */
async function finishedJob(options: Record<string, string> = { webhook_url: HOOK }, failed = false) {
  const job = newJob({ id: newJobId(), tenantId: TENANT, options: parseJobOptions(options), now: clock() });
  await jobs.create(job);
  await jobs.claim(job.id, testLease(60_000, clock()));
  if (failed) await jobs.fail(job.id, { code: 'unsupported_media', message: 'Not audio.' });
  else await jobs.complete(job.id, { resultKey: 'results/x.json', audio_duration_ms: 1000 });
  return job;
}

/** Delivers attempt after attempt as the queue hands them over, moving the clock by their delays. */
async function runToEnd(sender: WebhookSender, jobId: string): Promise<string[]> {
  const outcomes: string[] = [];
  let next = { attempt: { jobId, attempt: 1 }, delaySeconds: 0 };
  for (let step = 0; step < 100; step++) {
    clock.advance(next.delaySeconds * 1000);
    const before = queue.sent.length;
    outcomes.push(await deliverWebhook(deps(sender), next.attempt));
    const sent = queue.sent[before];
    if (!sent) return outcomes;
    next = sent;
  }
  throw new Error('The delivery never ended.');
}

describe('webhook retry schedule', () => {
  it('backs off four times longer each time, at most 6 hours apart, and ends within a day', () => {
    const delays = Array.from({ length: WEBHOOK_MAX_ATTEMPTS - 1 }, (_, index) =>
      webhookRetryDelaySeconds(index + 1),
    );
    expect(delays.slice(0, 4)).toEqual([30, 120, 480, 1920]);
    expect(Math.max(...delays)).toBe(6 * 3600);
    const total = delays.reduce((sum, delay) => sum + delay, 0) * 1000;
    expect(total).toBeLessThan(WEBHOOK_GIVE_UP_MS);
    // One more attempt would go past the day.
    expect(total + webhookRetryDelaySeconds(WEBHOOK_MAX_ATTEMPTS) * 1000).toBeGreaterThan(WEBHOOK_GIVE_UP_MS);
    expect(WEBHOOK_RETRY_BASE_SECONDS).toBe(30);
  });
});

describe('delivering a webhook', () => {
  it('posts the job id, status and status link, signed so that the Standard Webhooks verifier accepts it', async () => {
    const job = await finishedJob();
    const sender = new ScriptedSender(() => answered(204));
    expect(await deliverWebhook(deps(sender), { jobId: job.id, attempt: 1 })).toBe('delivered');
    const [request] = sender.requests;
    if (!request) throw new Error('Nothing was posted.');
    expect(request.url).toBe(HOOK);
    const payload = new Webhook(secret).verify(request.body, request.headers);
    expect(payload).toEqual({
      type: 'transcript.completed',
      timestamp: clock().toISOString(),
      id: job.id,
      status: 'completed',
      status_url: `https://api.example.com/prod/v1-beta/transcript/status?id=${job.id}`,
    });
    expect(request.headers['webhook-id']).toBe(`msg_${job.id}`);
    // A body changed on the way, or another secret, does not verify.
    expect(() =>
      new Webhook(secret).verify(request.body.replace('completed', 'error'), request.headers),
    ).toThrow();
    const other = await createWebhookSecret(secrets, 'other', clock());
    expect(() => new Webhook(other).verify(request.body, request.headers)).toThrow();
    expect((await jobs.get(job.id))?.webhook).toMatchObject({
      status: 'delivered',
      attempts: 1,
      last_response_code: 204,
    });
    expect(queue.sent).toEqual([]);
  });

  it('tells a failed job with its error', async () => {
    const job = await finishedJob({ webhook_url: HOOK }, true);
    const sender = new ScriptedSender(() => answered(200));
    await deliverWebhook(deps(sender), { jobId: job.id, attempt: 1 });
    expect(JSON.parse(sender.requests[0]?.body ?? '{}')).toMatchObject({
      type: 'transcript.failed',
      status: 'error',
      error: { code: 'unsupported_media', message: 'Not audio.' },
    });
  });

  it('retries a 500 and a timeout with backoff, and is delivered by a later 2xx', async () => {
    const job = await finishedJob();
    const answers: WebhookResponse[] = [answered(500), { outcome: 'timeout' }, answered(200)];
    const sender = new ScriptedSender((n) => answers[n - 1] ?? answered(200));
    expect(await runToEnd(sender, job.id)).toEqual(['retrying', 'retrying', 'delivered']);
    expect(queue.sent.map((sent) => sent.delaySeconds)).toEqual([30, 120]);
    expect((await jobs.get(job.id))?.webhook).toMatchObject({ status: 'delivered', attempts: 3 });
    // Each attempt is signed anew, so that its timestamp is fresh.
    const stamps = new Set(sender.requests.map((request) => request.headers['webhook-timestamp']));
    expect(stamps.size).toBe(3);
  });

  it.each([
    [301, 'a redirect, not followed'],
    [408, 'request timeout'],
    [429, 'too many requests'],
    [503, 'unavailable'],
  ])('retries a %i (%s)', async (code) => {
    const job = await finishedJob();
    const sender = new ScriptedSender((n) => (n === 1 ? answered(code) : answered(200)));
    expect(await runToEnd(sender, job.id)).toEqual(['retrying', 'delivered']);
  });

  it('retries a receiver it cannot reach', async () => {
    const job = await finishedJob();
    const sender = new ScriptedSender((n) =>
      n === 1 ? { outcome: 'unreachable', reason: 'ECONNREFUSED' } : answered(200),
    );
    await deliverWebhook(deps(sender), { jobId: job.id, attempt: 1 });
    expect((await jobs.get(job.id))?.webhook).toMatchObject({
      status: 'retrying',
      attempts: 1,
      last_error: 'Could not connect: ECONNREFUSED',
    });
  });

  it.each([400, 401, 404, 410, 422])('stops at a %i: no retry', async (code) => {
    const job = await finishedJob();
    const sender = new ScriptedSender(() => answered(code));
    expect(await runToEnd(sender, job.id)).toEqual(['failed']);
    expect(sender.requests).toHaveLength(1);
    expect(queue.sent).toEqual([]);
    expect((await jobs.get(job.id))?.webhook).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_response_code: code,
    });
  });

  it('gives up after the last attempt, within a day, and records it on the job and its status record', async () => {
    const job = await finishedJob();
    const sender = new ScriptedSender(() => answered(500));
    const started = clock().getTime();
    const outcomes = await runToEnd(sender, job.id);
    expect(outcomes.filter((outcome) => outcome === 'retrying')).toHaveLength(WEBHOOK_MAX_ATTEMPTS - 1);
    expect(outcomes.at(-1)).toBe('failed');
    expect(sender.requests).toHaveLength(WEBHOOK_MAX_ATTEMPTS);
    expect(clock().getTime() - started).toBeLessThan(WEBHOOK_GIVE_UP_MS);
    const stored = (await jobs.get(job.id)) as Job;
    expect(stored.webhook).toMatchObject({
      status: 'failed',
      attempts: WEBHOOK_MAX_ATTEMPTS,
      last_response_code: 500,
      last_error: `Gave up after ${WEBHOOK_MAX_ATTEMPTS} attempts. The receiver answered 500.`,
    });
    // The job's own outcome is untouched.
    expect(stored).toMatchObject({ status: 'completed', resultKey: 'results/x.json' });
    expect(toStatusRecord(stored)).toMatchObject({
      status: 'completed',
      webhook_status: 'failed',
      webhook_attempts: WEBHOOK_MAX_ATTEMPTS,
      webhook_response_code: 500,
    });
  });

  it('waits longer than a queue delay in hops, and does not post early', async () => {
    const job = await finishedJob();
    const sender = new ScriptedSender(() => answered(500));
    // Attempt 7 comes 6 hours after attempt 6: more than one 15-minute queue delay.
    clock.advance(1);
    await jobs.recordWebhookAttempt(job.id, {
      status: 'retrying',
      attempts: 5,
      last_attempt_at: clock().toISOString(),
    });
    await deliverWebhook(deps(sender), { jobId: job.id, attempt: 6 });
    const [hop] = queue.sent;
    expect(hop?.delaySeconds).toBe(900);
    expect(hop?.attempt).toMatchObject({
      attempt: 7,
      notBefore: new Date(clock().getTime() + 6 * 3600_000).toISOString(),
    });
    clock.advance(900_000);
    const requestsBefore = sender.requests.length;
    expect(await deliverWebhook(deps(sender), hop?.attempt ?? { jobId: '', attempt: 0 })).toBe('waiting');
    expect(sender.requests).toHaveLength(requestsBefore);
    expect(queue.sent[1]).toMatchObject({ attempt: { attempt: 7 }, delaySeconds: 900 });
  });

  it('skips an attempt made already (a duplicate message), a job without webhook, and a deleted job', async () => {
    const job = await finishedJob();
    const sender = new ScriptedSender(() => answered(500));
    await deliverWebhook(deps(sender), { jobId: job.id, attempt: 1 });
    expect(await deliverWebhook(deps(sender), { jobId: job.id, attempt: 1 })).toBe('skipped');
    const plain = await finishedJob({});
    expect(await deliverWebhook(deps(sender), { jobId: plain.id, attempt: 1 })).toBe('skipped');
    await jobs.markDeleted(job.id, TENANT, clock());
    expect(await deliverWebhook(deps(sender), { jobId: job.id, attempt: 2 })).toBe('skipped');
    expect(sender.requests).toHaveLength(1);
  });

  it('does not post, and says why, for an account without a signing secret', async () => {
    secrets.tenants.clear();
    const job = await finishedJob();
    const sender = new ScriptedSender(() => answered(200));
    expect(await deliverWebhook(deps(sender), { jobId: job.id, attempt: 1 })).toBe('failed');
    expect(sender.requests).toEqual([]);
    expect((await jobs.get(job.id))?.webhook?.last_error).toMatch(/no webhook signing secret/);
  });

  it('stops at an address webhooks may not go to', async () => {
    const job = await finishedJob();
    const sender = new ScriptedSender(() => ({ outcome: 'refused', reason: 'localhost is not allowed.' }));
    expect(await runToEnd(sender, job.id)).toEqual(['failed']);
    expect((await jobs.get(job.id))?.webhook?.last_error).toBe('Not delivered: localhost is not allowed.');
  });

  it('signs with the new and the rotated-out secret while the grace lasts, then with the new one alone', async () => {
    const job = await finishedJob();
    const rotated = await rotateWebhookSecret(secrets, TENANT, clock());
    const sender = new ScriptedSender(() => answered(500));
    await deliverWebhook(deps(sender), { jobId: job.id, attempt: 1 });
    const during = sender.requests[0];
    if (!during) throw new Error('Nothing was posted.');
    expect(new Webhook(secret).verify(during.body, during.headers)).toBeTruthy();
    expect(new Webhook(rotated).verify(during.body, during.headers)).toBeTruthy();

    clock.advance(WEBHOOK_SECRET_GRACE_MS + 1);
    await deliverWebhook(deps(sender), { jobId: job.id, attempt: 2 });
    const after = sender.requests[1];
    if (!after) throw new Error('Nothing was posted.');
    // The verifier refuses old timestamps, so it is asked at the time the message was sent.
    const verifyAt = (key: string) => {
      const realNow = Date.now;
      Date.now = () => clock().getTime();
      try {
        return new Webhook(key).verify(after.body, after.headers);
      } finally {
        Date.now = realNow;
      }
    };
    expect(verifyAt(rotated)).toBeTruthy();
    expect(() => verifyAt(secret)).toThrow();
    await expect(createWebhookSecret(secrets, TENANT, clock())).rejects.toThrow(/rotate/);
    await expect(rotateWebhookSecret(secrets, 'nobody', clock())).rejects.toThrow(/create one first/);
  });
});

describe('starting delivery when a job finishes', () => {
  const failingQueue = { send: async () => Promise.reject(new Error('SQS is down')) };

  it('queues the first attempt once, when a job with a webhook completes or fails, and never otherwise', async () => {
    const reports: unknown[] = [];
    const store = queueWebhooksOnFinish(jobs, queue, (error) => reports.push(error));
    const make = async (options: Record<string, string>) => {
      const job = newJob({
        id: newJobId(),
        tenantId: TENANT,
        options: parseJobOptions(options),
        now: clock(),
      });
      await store.create(job);
      await store.claim(job.id, testLease(60_000, clock()));
      return job;
    };
    const completed = await make({ webhook_url: HOOK });
    const failed = await make({ webhook_url: HOOK });
    const silent = await make({});
    expect(await store.complete(completed.id, { resultKey: 'r', audio_duration_ms: 1 })).toBe(true);
    expect(await store.fail(failed.id, { code: 'no_audio', message: 'x' })).toBe(true);
    expect(await store.complete(silent.id, { resultKey: 'r', audio_duration_ms: 1 })).toBe(true);
    // A second move of a finished job changes nothing and queues nothing.
    expect(await store.fail(completed.id, { code: 'internal', message: 'x' })).toBe(false);
    expect(queue.sent).toEqual([
      { attempt: { jobId: completed.id, attempt: 1 }, delaySeconds: 0 },
      { attempt: { jobId: failed.id, attempt: 1 }, delaySeconds: 0 },
    ]);
    expect(reports).toEqual([]);
  });

  it('never fails or changes the job when the webhook queue fails: the error is reported', async () => {
    const reports: [unknown, string][] = [];
    const store = queueWebhooksOnFinish(jobs, failingQueue, (error, jobId) => reports.push([error, jobId]));
    const job = newJob({
      id: newJobId(),
      tenantId: TENANT,
      options: parseJobOptions({ webhook_url: HOOK }),
      now: clock(),
    });
    await store.create(job);
    await store.claim(job.id, testLease(60_000, clock()));
    expect(await store.complete(job.id, { resultKey: 'r', audio_duration_ms: 5 })).toBe(true);
    expect(await jobs.get(job.id)).toMatchObject({ status: 'completed', resultKey: 'r' });
    expect(reports).toHaveLength(1);
    expect(reports[0]?.[1]).toBe(job.id);
  });

  it('passes every other store call through unchanged', async () => {
    const store = queueWebhooksOnFinish(jobs, queue, () => undefined);
    const job = newJob({ id: newJobId(), tenantId: TENANT, options: parseJobOptions({}), now: clock() });
    await store.create(job);
    expect(await store.get(job.id)).toEqual(job);
    expect(await store.countActive(TENANT, 10)).toBe(1);
    expect(await store.markDeleted(job.id, TENANT, clock())).toMatchObject({ id: job.id, tenantId: TENANT });
    expect(await store.get(job.id)).toBeUndefined();
  });
});
