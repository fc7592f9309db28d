import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { TranscribeClient } from '@aws-sdk/client-transcribe';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ServiceConfig } from './config.ts';

/** What every client of the local emulators signs with (they accept any); on AWS, the default provider chain. */
export const EMULATOR_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

export function createDynamoClient(config: ServiceConfig): DynamoDBClient {
  const { dynamodb } = config.endpoints;
  return new DynamoDBClient({
    region: config.region,
    ...(dynamodb ? { endpoint: dynamodb, credentials: EMULATOR_CREDENTIALS } : {}),
  });
}

export function createDocumentClient(config: ServiceConfig): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(createDynamoClient(config), {
    marshallOptions: { removeUndefinedValues: true },
  });
}

export function createS3Client(config: ServiceConfig): S3Client {
  const { s3 } = config.endpoints;
  return new S3Client({
    region: config.region,
    ...(s3 ? { endpoint: s3, forcePathStyle: true, credentials: EMULATOR_CREDENTIALS } : {}),
  });
}

/**
 * The client that signs upload URLs: it adds no checksum of a body it does not have (the SDK's default
 * would sign the checksum of an empty body, which no real upload matches).
 */
export function createPresigningS3Client(config: ServiceConfig): S3Client {
  const { s3 } = config.endpoints;
  return new S3Client({
    region: config.region,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    ...(s3 ? { endpoint: s3, forcePathStyle: true, credentials: EMULATOR_CREDENTIALS } : {}),
  });
}

export function createSqsClient(config: ServiceConfig): SQSClient {
  const { sqs } = config.endpoints;
  return new SQSClient({
    region: config.region,
    // The emulator's queue URLs name a host that does not resolve: always use the endpoint.
    ...(sqs ? { endpoint: sqs, useQueueUrlAsEndpoint: false, credentials: EMULATOR_CREDENTIALS } : {}),
  });
}

export function createTranscribeClient(config: ServiceConfig): TranscribeClient {
  return new TranscribeClient({ region: config.region });
}

export function createBedrockClient(config: ServiceConfig): BedrockRuntimeClient {
  return new BedrockRuntimeClient({ region: config.region });
}
