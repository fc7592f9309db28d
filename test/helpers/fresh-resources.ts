import { randomBytes } from 'node:crypto';
import { readServiceConfig } from '#aws/config';
import { createResources, type LocalQueues } from '#local/provision';

/**
 * Fresh tables, bucket and queues for one test file, under unique names, with the settings of the
 * stack; the handlers of that file find them through the environment.
 */
export async function useFreshResources(
  settings: { visibilityTimeoutSeconds?: number } = {},
): Promise<LocalQueues> {
  const suffix = randomBytes(4).toString('hex');
  process.env.JOBS_TABLE = `jobs-${suffix}`;
  process.env.API_KEYS_TABLE = `api-keys-${suffix}`;
  process.env.MEDIA_BUCKET = `media-${suffix}`;
  process.env.IDEMPOTENCY_TABLE = `idempotency-${suffix}`;
  process.env.TENANTS_TABLE = `tenants-${suffix}`;
  const queues = await createResources(readServiceConfig(), { ...settings, queueNameSuffix: suffix });
  process.env.JOBS_QUEUE_URL = queues.jobsQueueUrl;
  process.env.WEBHOOK_QUEUE_URL = queues.webhookQueueUrl;
  return queues;
}
