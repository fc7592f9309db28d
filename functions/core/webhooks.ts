import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  WEBHOOK_MAX_ATTEMPTS,
  WEBHOOK_MAX_RETRY_DELAY_SECONDS,
  WEBHOOK_RETRY_BASE_SECONDS,
} from '#commons/contract';
import type { JobError } from './errors.ts';
import { isFinished, type Job, type WebhookDelivery } from './job.ts';
import {
  type Clock,
  type JobStore,
  overrideJobStore,
  type WebhookAttempt,
  type WebhookQueue,
  type WebhookResponse,
  type WebhookSecretStore,
  type WebhookSender,
} from './ports.ts';

/** SQS delays a message by at most 15 minutes; a longer wait is made of several. */
const MAX_QUEUE_DELAY_SECONDS = 900;

/** A rotated-out secret still signs (beside the new one) this long, so that receivers can switch over. */
export const WEBHOOK_SECRET_GRACE_MS = 24 * 60 * 60 * 1000;

export interface WebhookDeps {
  jobs: JobStore;
  secrets: WebhookSecretStore;
  sender: WebhookSender;
  queue: WebhookQueue;
  clock: Clock;
  /** The status route's address for a job, sent as `status_url` (never with a key). */
  statusUrl: (jobId: string) => string;
  /** Seconds before the second attempt; four times longer before each next one (tests shorten it). */
  retryBaseSeconds?: number;
}

export type WebhookOutcome =
  | 'delivered'
  | 'retrying'
  | 'failed'
  /** Not yet due: sent on with the rest of its delay. */
  | 'waiting'
  /** Nothing to do: the job is gone, has no webhook, or this attempt was made already. */
  | 'skipped';

/** The delay after attempt `attempt` failed before the next one. */
export function webhookRetryDelaySeconds(
  attempt: number,
  baseSeconds: number = WEBHOOK_RETRY_BASE_SECONDS,
): number {
  return Math.min(WEBHOOK_MAX_RETRY_DELAY_SECONDS, Math.ceil(baseSeconds * 4 ** (attempt - 1)));
}

/** The body a receiver gets: what happened to which job, and where to read the rest. */
export interface WebhookEvent {
  type: 'transcript.completed' | 'transcript.failed';
  timestamp: string;
  id: string;
  status: 'completed' | 'error';
  error?: JobError;
  status_url: string;
}

export function webhookPayload(job: Job, statusUrl: string, now: Date): string {
  const event: WebhookEvent = {
    type: job.status === 'completed' ? 'transcript.completed' : 'transcript.failed',
    timestamp: now.toISOString(),
    id: job.id,
    status: job.status === 'completed' ? 'completed' : 'error',
    ...(job.error ? { error: job.error } : {}),
    status_url: statusUrl,
  };
  return JSON.stringify(event);
}

/**
 * The Standard Webhooks headers of a body: `webhook-signature` holds one `v1,…` signature per secret,
 * so that a receiver holding either the new or the rotated-out secret verifies it.
 */
export function signWebhook(
  secrets: string[],
  messageId: string,
  now: Date,
  body: string,
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(messageId, now, body)).join(' '),
  };
}

/** What one answer means for the delivery: done, never (4xx but 408/429, or a refused address), or again. */
function verdict(response: WebhookResponse): 'delivered' | 'stop' | 'retry' {
  if (response.outcome === 'refused') return 'stop';
  if (response.outcome !== 'answered') return 'retry';
  const code = response.statusCode;
  if (code >= 200 && code < 300) return 'delivered';
  if (code >= 400 && code < 500 && code !== 408 && code !== 429) return 'stop';
  return 'retry';
}

function describe(response: WebhookResponse): string | undefined {
  if (response.outcome === 'timeout') return 'No answer in time.';
  if (response.outcome === 'unreachable') return `Could not connect: ${response.reason}`;
  if (response.outcome === 'refused') return `Not delivered: ${response.reason}`;
  return undefined;
}

/**
 * Makes one attempt to deliver a finished job's webhook. A 2xx answer delivers it; a 4xx other than
 * 408 and 429, or an address webhooks may not go to, stops delivery; anything else (5xx, 3xx: redirects
 * are not followed, 408, 429, no answer in time, no connection) sends the next attempt with its delay,
 * until WEBHOOK_MAX_ATTEMPTS. Every attempt is recorded on the job. The job itself is never changed.
 */
export async function deliverWebhook(deps: WebhookDeps, message: WebhookAttempt): Promise<WebhookOutcome> {
  const now = deps.clock();
  if (message.notBefore && new Date(message.notBefore).getTime() > now.getTime()) {
    const remaining = (new Date(message.notBefore).getTime() - now.getTime()) / 1000;
    await deps.queue.send(message, Math.min(MAX_QUEUE_DELAY_SECONDS, Math.ceil(remaining)));
    return 'waiting';
  }
  const job = await deps.jobs.get(message.jobId);
  if (!job || !isFinished(job.status) || !job.options.webhook_url) return 'skipped';
  const done = job.webhook && (job.webhook.status === 'delivered' || job.webhook.status === 'failed');
  if (done || (job.webhook?.attempts ?? 0) >= message.attempt) return 'skipped';

  const record = (delivery: Omit<WebhookDelivery, 'attempts' | 'last_attempt_at'>) =>
    deps.jobs.recordWebhookAttempt(job.id, {
      ...delivery,
      attempts: message.attempt,
      last_attempt_at: now.toISOString(),
    });

  const secrets = await deps.secrets.signingSecrets(job.tenantId, now);
  if (secrets.length === 0) {
    await record({
      status: 'failed',
      last_error: 'Not delivered: the account has no webhook signing secret (see `npm run keys`).',
    });
    return 'failed';
  }
  const body = webhookPayload(job, deps.statusUrl(job.id), now);
  const response = await deps.sender.post(
    job.options.webhook_url,
    body,
    signWebhook(secrets, `msg_${job.id}`, now, body),
  );
  const answer = {
    ...(response.outcome === 'answered' ? { last_response_code: response.statusCode } : {}),
    ...(describe(response) ? { last_error: describe(response) } : {}),
  };
  const next = verdict(response);
  if (next === 'delivered') {
    await record({ status: 'delivered', ...answer });
    return 'delivered';
  }
  if (next === 'stop' || message.attempt >= WEBHOOK_MAX_ATTEMPTS) {
    const gaveUp = next === 'retry' ? `Gave up after ${message.attempt} attempts. ` : '';
    const reason = answer.last_error ?? `The receiver answered ${answer.last_response_code}.`;
    await record({ ...answer, status: 'failed', last_error: `${gaveUp}${reason}` });
    return 'failed';
  }
  // The next attempt is queued before this one is recorded: should recording fail, the message comes
  // back and is tried again, and a second copy of the next attempt finds it made and is skipped.
  const delaySeconds = webhookRetryDelaySeconds(message.attempt, deps.retryBaseSeconds);
  await deps.queue.send(
    {
      jobId: job.id,
      attempt: message.attempt + 1,
      ...(delaySeconds > MAX_QUEUE_DELAY_SECONDS
        ? { notBefore: new Date(now.getTime() + delaySeconds * 1000).toISOString() }
        : {}),
    },
    Math.min(MAX_QUEUE_DELAY_SECONDS, delaySeconds),
  );
  await record({ status: 'retrying', ...answer });
  return 'retrying';
}

/**
 * A job store that queues the first webhook attempt of a job with a `webhook_url` whenever it moves the
 * job to `completed` or `error`: the worker, the dead-letter handler and the sweeper finish jobs only
 * through `complete` and `fail`, so this is the one place delivery starts. Queuing never fails or delays
 * the job: an error is reported and the job's outcome stands.
 */
export function queueWebhooksOnFinish(
  jobs: JobStore,
  queue: WebhookQueue,
  report: (error: unknown, jobId: string) => void,
): JobStore {
  const notify = async (id: string) => {
    try {
      const job = await jobs.get(id);
      if (job?.options.webhook_url) await queue.send({ jobId: id, attempt: 1 }, 0);
    } catch (error) {
      report(error, id);
    }
  };
  return overrideJobStore(jobs, {
    complete: async (...args) => {
      const finished = await jobs.complete(...args);
      if (finished) await notify(args[0]);
      return finished;
    },
    fail: async (...args) => {
      const finished = await jobs.fail(...args);
      if (finished) await notify(args[0]);
      return finished;
    },
  });
}

function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** A tenant's first webhook signing secret, returned once (it is needed to sign, so it is stored as is). */
export async function createWebhookSecret(
  store: WebhookSecretStore,
  tenantId: string,
  now: Date,
): Promise<string> {
  const secret = newWebhookSecret();
  if (!(await store.create(tenantId, secret, now))) {
    throw new Error(`Tenant ${tenantId} has a webhook secret already; rotate it to get a new one.`);
  }
  return secret;
}

/** A new secret for the tenant; the old one keeps signing beside it for WEBHOOK_SECRET_GRACE_MS. */
export async function rotateWebhookSecret(
  store: WebhookSecretStore,
  tenantId: string,
  now: Date,
): Promise<string> {
  const secret = newWebhookSecret();
  const graceUntil = new Date(now.getTime() + WEBHOOK_SECRET_GRACE_MS);
  if (!(await store.rotate(tenantId, secret, now, graceUntil))) {
    throw new Error(`Tenant ${tenantId} has no webhook secret to rotate; create one first.`);
  }
  return secret;
}
