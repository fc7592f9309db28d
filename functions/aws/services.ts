import { logger } from '#commons/logger';
import type { ApiKeyStore, IdempotentRequests, JobStore, MediaStore, WebhookSecretStore } from '#core/ports';
import { queueWebhooksOnFinish } from '#core/webhooks';
import { DynamoApiKeyStore } from './api-keys-table.ts';
import {
  createDocumentClient,
  createDynamoClient,
  createPresigningS3Client,
  createS3Client,
  createSqsClient,
} from './clients.ts';
import { readServiceConfig, type ServiceConfig } from './config.ts';
import { PowertoolsIdempotentRequests } from './idempotency-table.ts';
import { SqsJobQueue } from './jobs-queue.ts';
import { DynamoJobStore } from './jobs-table.ts';
import { S3MediaStore } from './media-bucket.ts';
import { DynamoTenantStore } from './tenants-table.ts';
import { SqsWebhookQueue } from './webhook-queue.ts';

export interface Services {
  config: ServiceConfig;
  jobs: JobStore;
  /**
   * The jobs, for the functions that finish them (worker, dead-letter handler, sweeper): a job with a
   * `webhook_url` that reaches `completed` or `error` gets its first webhook attempt queued.
   */
  finishingJobs: JobStore;
  media: MediaStore;
  /** The origin of the media bucket's presigned URLs (uploads and audio), for the console's policy. */
  mediaOrigin: () => Promise<string>;
  queue: SqsJobQueue;
  webhooks: SqsWebhookQueue;
  apiKeys: ApiKeyStore;
  webhookSecrets: WebhookSecretStore;
  idempotency: IdempotentRequests;
}

let services: Services | undefined;

/** The configuration and the adapters for the handlers, built once per Lambda container from the environment. */
export function awsServices(): Services {
  if (!services) {
    const config = readServiceConfig();
    const documents = createDocumentClient(config);
    const sqs = createSqsClient(config);
    const jobs = new DynamoJobStore(documents, config.jobsTable);
    const webhooks = new SqsWebhookQueue(sqs, config.webhookQueueUrl);
    const media = new S3MediaStore(
      createS3Client(config),
      config.mediaBucket,
      createPresigningS3Client(config),
    );
    let mediaOrigin: Promise<string> | undefined;
    services = {
      config,
      jobs,
      finishingJobs: queueWebhooksOnFinish(jobs, webhooks, (error, jobId) =>
        logger.error('The webhook of a finished job could not be queued', { jobId, error }),
      ),
      media,
      mediaOrigin: () => {
        // A failure is not kept: the next request asks again.
        mediaOrigin ??= media.presignedOrigin().catch((error: unknown) => {
          mediaOrigin = undefined;
          throw error;
        });
        return mediaOrigin;
      },
      queue: new SqsJobQueue(sqs, config.jobsQueueUrl),
      webhooks,
      apiKeys: new DynamoApiKeyStore(documents, config.apiKeysTable),
      webhookSecrets: new DynamoTenantStore(documents, config.tenantsTable),
      idempotency: PowertoolsIdempotentRequests.inTable(createDynamoClient(config), config.idempotencyTable),
    };
  }
  return services;
}
