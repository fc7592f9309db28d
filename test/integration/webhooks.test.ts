import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { readFile } from 'node:fs/promises';
import type { LookupFunction } from 'node:net';
import { hostname } from 'node:os';
import { Readable } from 'node:stream';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSqsClient } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import { isPublicAddress } from '#commons/client-urls';
import { WEBHOOK_MAX_ATTEMPTS } from '#commons/contract';
import { type Job, newJob, newJobId } from '#core/job';
import { encodeProcessMessage } from '#core/messages';
import { parseJobOptions } from '#core/options';
import { createWebhookSecret, type WebhookDeps } from '#core/webhooks';
import { QueuePoller } from '#local/poller';
import type { LocalQueues } from '#local/provision';
import { sqsEvent } from '#test/helpers/events';
import { eventually } from '#test/helpers/eventually';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { findSample, samplePath } from '#test/helpers/samples';
import { WebhookReceiver } from '#test/helpers/webhook-receiver';
import { handler as deadLetter } from '#worker/dead-letter';
import { handler as worker } from '#worker/handler';
import { handler as sweeper } from '#worker/sweeper';
import { HttpWebhookSender } from '#worker/webhook-sender';
import { createWebhookHandler, defaultWebhookDeps } from '#worker/webhooks';

const TENANT = 'tenant-hooks';
let queues: LocalQueues;
let secret: string;
let receiver: WebhookReceiver;
let poller: QueuePoller | undefined;

beforeAll(async () => {
  queues = await useFreshResources();
  secret = await createWebhookSecret(awsServices().webhookSecrets, TENANT, new Date());
  receiver = new WebhookReceiver();
  await receiver.start();
});

afterAll(() => receiver?.stop());

afterEach(async () => {
  await poller?.stop();
  poller = undefined;
  receiver.received.length = 0;
  receiver.script = () => ({ status: 200 });
});

/**
 * Runs the webhook function as Lambda would, on the real webhook queue: retries come at once (no
 * backoff) and an answer must begin within a second, so that retries and timeouts fit in a test.
 */
function deliverWebhooks(overrides: Partial<WebhookDeps> = {}): void {
  let deps: WebhookDeps | undefined;
  const handler = createWebhookHandler(() => {
    deps ??= {
      ...defaultWebhookDeps(),
      sender: new HttpWebhookSender(true, 1000),
      retryBaseSeconds: 0,
      ...overrides,
    };
    return deps;
  });
  poller = new QueuePoller({
    sqs: createSqsClient(readServiceConfig()),
    queueUrl: queues.webhookQueueUrl,
    handler,
    batchSize: 10,
    concurrency: 1,
    region: 'us-east-1',
  });
  void poller.start();
}

/** A queued job whose webhook goes to `url`, with its audio stored. */
async function queuedJob(url: string, audio?: Buffer, submittedAt = new Date()): Promise<Job> {
  const options = parseJobOptions({ webhook_url: url }, { localMode: true });
  const job = newJob({ id: newJobId(), tenantId: TENANT, options, now: submittedAt });
  const { jobs, media } = awsServices();
  await media.putAudio(job.audioKey, Readable.from([audio ?? Buffer.from('x')]));
  await jobs.create(job);
  return job;
}

/** A job the way the worker finishes one: through the store that starts webhook delivery. */
async function completedJob(url = receiver.url()): Promise<Job> {
  const job = await queuedJob(url);
  const { finishingJobs } = awsServices();
  await finishingJobs.claim(job.id, {
    owner: 'test',
    now: new Date(),
    until: new Date(Date.now() + 60_000),
    dueAt: new Date(Date.now() + 60_000),
  });
  await finishingJobs.complete(job.id, {
    resultKey: `results/${TENANT}/${job.id}.json`,
    audio_duration_ms: 1200,
  });
  return job;
}

const finalDelivery = (job: Job | undefined) =>
  job?.webhook?.status === 'delivered' || job?.webhook?.status === 'failed';

async function deliveryOf(jobId: string, timeoutMs = 30_000): Promise<Job> {
  const job = await eventually(() => awsServices().jobs.get(jobId), finalDelivery, timeoutMs);
  if (!job) throw new Error(`Job ${jobId} is gone.`);
  return job;
}

/** Names as the tests' DNS answers them: one that rebinds to loopback, one mixed, metadata, private IPv6. */
const RESOLUTIONS: Record<string, LookupAddress[]> = {
  'rebind.example': [{ address: '127.0.0.1', family: 4 }],
  'mixed.example': [
    { address: '93.184.215.14', family: 4 },
    { address: '10.1.2.3', family: 4 },
  ],
  'metadata.example': [{ address: '169.254.169.254', family: 4 }],
  'ipv6-private.example': [{ address: 'fd00:ec2::254', family: 6 }],
  'public.example': [{ address: '93.184.215.14', family: 4 }],
};

/** A resolver that answers from a table, in both of the forms a connection asks for. */
function resolvingTo(table: Record<string, LookupAddress[]>): LookupFunction {
  return (hostname, options, callback) => {
    const addresses = table[hostname];
    if (!addresses?.[0]) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 4);
    } else if (options.all) {
      (callback as unknown as (error: null, all: LookupAddress[]) => void)(null, addresses);
    } else {
      callback(null, addresses[0].address, addresses[0].family);
    }
  };
}

describe('webhook delivery against a local receiver', () => {
  it('delivers a completed job once, signed so that the Standard Webhooks verifier accepts it', async () => {
    deliverWebhooks();
    const job = await completedJob();
    const done = await deliveryOf(job.id);
    expect(done.webhook).toMatchObject({ status: 'delivered', attempts: 1, last_response_code: 200 });
    expect(receiver.received).toHaveLength(1);
    const [request] = receiver.received;
    if (!request) throw new Error('No request.');
    expect(request.headers['content-type']).toBe('application/json');
    const payload = new Webhook(secret).verify(request.body, WebhookReceiver.headersOf(request));
    expect(payload).toMatchObject({
      type: 'transcript.completed',
      id: job.id,
      status: 'completed',
      status_url: `${readServiceConfig().publicApiUrl}v1-beta/transcript/status?id=${job.id}`,
    });
    expect(done).toMatchObject({ status: 'completed', audio_duration_ms: 1200 });
  });

  it('retries after a 500 and after a timeout, and records every attempt', async () => {
    receiver.script = (n) =>
      n === 1 ? { status: 500 } : n === 2 ? { status: 200, delayMs: 3000 } : { status: 202 };
    deliverWebhooks();
    const job = await completedJob();
    const done = await deliveryOf(job.id);
    expect(done.webhook).toMatchObject({ status: 'delivered', attempts: 3, last_response_code: 202 });
    expect(receiver.received).toHaveLength(3);
    // The same message each time (one webhook-id), signed anew.
    expect(new Set(receiver.received.map((request) => request.headers['webhook-id'])).size).toBe(1);
    for (const request of receiver.received) {
      expect(new Webhook(secret).verify(request.body, WebhookReceiver.headersOf(request))).toBeTruthy();
    }
  });

  it('does not retry a 410, and never follows a redirect', async () => {
    receiver.script = () => ({ status: 410 });
    deliverWebhooks();
    const gone = await completedJob();
    expect((await deliveryOf(gone.id)).webhook).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_response_code: 410,
    });
    expect(receiver.received).toHaveLength(1);

    receiver.received.length = 0;
    receiver.script = (n) =>
      n === 1 ? { status: 302, headers: { location: receiver.url('/elsewhere') } } : { status: 200 };
    const moved = await completedJob();
    const done = await deliveryOf(moved.id);
    // The redirect counts as a failed attempt; the next attempt goes to the job's address again.
    expect(done.webhook).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(receiver.received.map((request) => request.path)).toEqual(['/hook', '/hook']);
  });

  it('gives up after the last attempt and records it; the job keeps its outcome', async () => {
    receiver.script = () => ({ status: 503 });
    deliverWebhooks();
    const job = await completedJob();
    const done = await deliveryOf(job.id, 60_000);
    expect(receiver.received).toHaveLength(WEBHOOK_MAX_ATTEMPTS);
    expect(done.webhook).toMatchObject({
      status: 'failed',
      attempts: WEBHOOK_MAX_ATTEMPTS,
      last_response_code: 503,
      last_error: expect.stringMatching(/^Gave up after 9 attempts/),
    });
    expect(done).toMatchObject({ status: 'completed', resultKey: `results/${TENANT}/${job.id}.json` });
  });

  it('refuses loopback and private destinations outside local mode, after DNS too, and sends nothing', async () => {
    const sender = new HttpWebhookSender(false, 1000, { lookup: resolvingTo(RESOLUTIONS) });
    const port = new URL(receiver.url()).port;
    for (const url of [
      `https://localhost:${port}/hook`,
      `https://app.localhost:${port}/hook`,
      `https://127.0.0.1:${port}/hook`,
      `https://[::1]:${port}/hook`,
      `https://[::ffff:127.0.0.1]:${port}/hook`,
      `https://0x7f.1:${port}/hook`,
      'https://169.254.169.254/latest/meta-data/',
      'https://10.0.0.8/hook',
      'https://192.168.1.10/hook',
      'https://100.64.0.1/hook',
      'https://0.0.0.0/hook',
      `https://rebind.example:${port}/hook`,
      'https://mixed.example/hook',
      'https://metadata.example/hook',
      'https://ipv6-private.example/hook',
      // Plain HTTP is for the local runtime only.
      `http://rebind.example:${port}/hook`,
      `http://public.example:${port}/hook`,
    ]) {
      const response = await sender.post(url, '{}', {});
      expect(response.outcome, url).toBe('refused');
    }
    // The system resolver: this machine's own name resolves to one of its addresses (loopback here),
    // which is refused once resolved; `localhost.` is refused by its name alone.
    const system = new HttpWebhookSender(false, 1000);
    const own = await lookup(hostname(), { all: true });
    expect(own.every(({ address }) => !isPublicAddress(address))).toBe(true);
    const ownName = await system.post(`https://${hostname()}:${port}/hook`, '{}', {});
    expect(ownName).toEqual({ outcome: 'refused', reason: expect.stringContaining('is not allowed') });
    expect((await system.post(`https://localhost.:${port}/hook`, '{}', {})).outcome).toBe('refused');
    expect(receiver.received).toEqual([]);
  });

  it('delivers to a name whose every address is allowed, connecting to the address it checked', async () => {
    // The receiver stands for a public host here: its address is allowed, as a public one would be.
    const port = new URL(receiver.url()).port;
    const sender = new HttpWebhookSender(false, 1000, {
      allowHttp: true,
      allowAddresses: ['127.0.0.1'],
      lookup: resolvingTo({ 'hooks.example': [{ address: '127.0.0.1', family: 4 }] }),
    });
    expect(await sender.post(`http://hooks.example:${port}/hook`, '{}', {})).toEqual({
      outcome: 'answered',
      statusCode: 200,
    });
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]?.headers.host).toBe(`hooks.example:${port}`);
  });

  it('locally delivers over http to private addresses too', async () => {
    const sender = new HttpWebhookSender(true, 1000);
    expect(await sender.post(receiver.url(), '{}', {})).toEqual({ outcome: 'answered', statusCode: 200 });
    expect(await sender.post(receiver.url('/hook', 'localhost'), '{}', {})).toEqual({
      outcome: 'answered',
      statusCode: 200,
    });
    // Not the metadata service, even locally.
    expect((await sender.post('http://0.0.0.0/hook', '{}', {})).outcome).toBe('refused');
  });

  it('records a refused destination on the job without touching its outcome', async () => {
    deliverWebhooks({ sender: new HttpWebhookSender(false, 1000) });
    const job = await completedJob(receiver.url('/hook', 'localhost'));
    const done = await deliveryOf(job.id);
    expect(done.webhook).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: expect.stringMatching(/^Not delivered/),
    });
    expect(done.webhook).not.toHaveProperty('last_response_code');
    expect(done.status).toBe('completed');
    expect(receiver.received).toEqual([]);
  });
});

describe('every way a job ends starts delivery', () => {
  it('the worker completing a job', async () => {
    deliverWebhooks();
    const utterance = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);
    const job = await queuedJob(receiver.url(), await readFile(samplePath(utterance)));
    expect((await worker(sqsEvent([encodeProcessMessage(job.id)]))).batchItemFailures).toEqual([]);
    const done = await deliveryOf(job.id);
    expect(done).toMatchObject({ status: 'completed', webhook: { status: 'delivered' } });
    expect(JSON.parse(receiver.received[0]?.body ?? '{}')).toMatchObject({ id: job.id, status: 'completed' });
  });

  it('the worker failing a job whose file cannot be decoded', async () => {
    deliverWebhooks();
    const job = await queuedJob(receiver.url(), Buffer.from('this is not audio at all'.repeat(100)));
    await worker(sqsEvent([encodeProcessMessage(job.id)]));
    const done = await deliveryOf(job.id);
    expect(done).toMatchObject({ status: 'error', error: { code: 'unsupported_media' } });
    expect(JSON.parse(receiver.received[0]?.body ?? '{}')).toMatchObject({
      type: 'transcript.failed',
      id: job.id,
      status: 'error',
      error: { code: 'unsupported_media' },
    });
  });

  it('the dead-letter handler giving a job up', async () => {
    deliverWebhooks();
    const job = await queuedJob(receiver.url());
    await deadLetter(sqsEvent([encodeProcessMessage(job.id)]));
    const done = await deliveryOf(job.id);
    expect(done).toMatchObject({ status: 'error', error: { code: 'transcription_failed' } });
    expect(receiver.received).toHaveLength(1);
  });

  it('the sweeper failing a job past its deadline', async () => {
    deliverWebhooks();
    const job = await queuedJob(receiver.url(), undefined, new Date(Date.now() - 9 * 3_600_000));
    const report = await sweeper();
    expect(report.failed).toContain(job.id);
    const done = await deliveryOf(job.id);
    expect(done).toMatchObject({ status: 'error', webhook: { status: 'delivered' } });
  });
});
