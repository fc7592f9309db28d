import type { ApiKeyStore, JobStore, MediaStore } from '#core/ports';
import { DynamoApiKeyStore } from './api-keys-table.ts';
import {
  createDocumentClient,
  createPresigningS3Client,
  createS3Client,
  createSqsClient,
} from './clients.ts';
import { readServiceConfig, type ServiceConfig } from './config.ts';
import { SqsJobQueue } from './jobs-queue.ts';
import { DynamoJobStore } from './jobs-table.ts';
import { S3MediaStore } from './media-bucket.ts';

export interface Services {
  config: ServiceConfig;
  jobs: JobStore;
  media: MediaStore;
  queue: SqsJobQueue;
  apiKeys: ApiKeyStore;
}

let services: Services | undefined;

/** The configuration and the adapters for the handlers, built once per Lambda container from the environment. */
export function awsServices(): Services {
  if (!services) {
    const config = readServiceConfig();
    const documents = createDocumentClient(config);
    services = {
      config,
      jobs: new DynamoJobStore(documents, config.jobsTable),
      media: new S3MediaStore(createS3Client(config), config.mediaBucket, createPresigningS3Client(config)),
      queue: new SqsJobQueue(createSqsClient(config), config.jobsQueueUrl),
      apiKeys: new DynamoApiKeyStore(documents, config.apiKeysTable),
    };
  }
  return services;
}
