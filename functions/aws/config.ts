import { RESOURCES } from '#core/resources';

/**
 * Where the adapters find their resources. On AWS the stack sets the names; locally the runtime sets
 * the emulator endpoints too. Read on first use so that the local runtime can set them before.
 */
export interface AwsConfig {
  region: string;
  jobsTable: string;
  apiKeysTable: string;
  mediaBucket: string;
  jobsQueueUrl: string;
  /** Prefix of Amazon Transcribe job names for this deployment, and where their output goes. */
  transcribeJobPrefix: string;
  transcribeOutputPrefix: string;
  endpoints: { dynamodb?: string; s3?: string; sqs?: string };
}

export function readAwsConfig(env: NodeJS.ProcessEnv = process.env): AwsConfig {
  return {
    region: env.AWS_REGION ?? 'us-east-1',
    jobsTable: env.JOBS_TABLE ?? RESOURCES.jobsTable.name,
    apiKeysTable: env.API_KEYS_TABLE ?? RESOURCES.apiKeysTable.name,
    mediaBucket: env.MEDIA_BUCKET ?? RESOURCES.mediaBucket.name,
    jobsQueueUrl: env.JOBS_QUEUE_URL ?? '',
    transcribeJobPrefix: env.TRANSCRIBE_JOB_PREFIX ?? '',
    transcribeOutputPrefix: env.TRANSCRIBE_OUTPUT_PREFIX ?? 'transcribe/',
    endpoints: { dynamodb: env.DYNAMODB_ENDPOINT, s3: env.S3_ENDPOINT, sqs: env.SQS_ENDPOINT },
  };
}
