import { z } from 'zod';
import {
  CHUNK_SECONDS_RANGE,
  DEFAULT_CHUNK_SECONDS,
  DEFAULT_MAX_ACTIVE_JOBS_PER_TENANT,
  ENGINES,
  ENV,
  HEARTBEAT_VISIBILITY_SECONDS,
  RESOURCES,
  RETRY_BASE_SECONDS,
  SUMMARIZERS,
} from '#commons/contract';
import { readEnvironment } from '#commons/environment';

const optional = z.string().optional();

/** The functions' environment (ENV in the contract); the defaults are the local runtime's. */
const environment = z.object({
  [ENV.region]: z.string().default('us-east-1'),
  [ENV.jobsTable]: z.string().default(RESOURCES.jobsTable.name),
  [ENV.apiKeysTable]: z.string().default(RESOURCES.apiKeysTable.name),
  [ENV.idempotencyTable]: z.string().default(RESOURCES.idempotencyTable.name),
  [ENV.tenantsTable]: z.string().default(RESOURCES.tenantsTable.name),
  [ENV.webhookQueueUrl]: z.string().default(''),
  [ENV.publicApiUrl]: z.url({ protocol: /^https?$/ }).default('http://localhost:3000/'),
  [ENV.mediaBucket]: z.string().default(RESOURCES.mediaBucket.name),
  [ENV.jobsQueueUrl]: z.string().default(''),
  [ENV.engine]: z.enum(ENGINES).default('sphinx'),
  [ENV.summarizer]: z.enum(SUMMARIZERS).default('local'),
  [ENV.bedrockModelId]: optional,
  [ENV.transcribeJobPrefix]: z.string().default(''),
  [ENV.chunkSeconds]: z.coerce
    .number()
    .int()
    .min(CHUNK_SECONDS_RANGE.min)
    .max(CHUNK_SECONDS_RANGE.max)
    .default(DEFAULT_CHUNK_SECONDS),
  [ENV.whisperModel]: optional,
  [ENV.maxActiveJobsPerTenant]: z.coerce.number().int().min(1).default(DEFAULT_MAX_ACTIVE_JOBS_PER_TENANT),
  [ENV.heartbeatVisibilitySeconds]: z.coerce
    .number()
    .int()
    .min(2)
    .max(3600)
    .default(HEARTBEAT_VISIBILITY_SECONDS),
  [ENV.retryBaseSeconds]: z.coerce.number().int().min(0).max(900).default(RETRY_BASE_SECONDS),
  [ENV.localMode]: z
    .string()
    .optional()
    .transform((value) => value === 'true'),
  [ENV.dynamodbEndpoint]: optional,
  [ENV.s3Endpoint]: optional,
  [ENV.sqsEndpoint]: optional,
});

/**
 * What a function is configured with. On AWS the stack sets the environment; locally the runtime sets
 * the emulator endpoints too. Read on first use so that the local runtime can set them before.
 */
export interface ServiceConfig {
  region: string;
  jobsTable: string;
  apiKeysTable: string;
  idempotencyTable: string;
  tenantsTable: string;
  mediaBucket: string;
  webhookQueueUrl: string;
  /** The API's public address (`{base_url}`, ending in `/`), for the status link in webhooks. */
  publicApiUrl: string;
  jobsQueueUrl: string;
  engine: (typeof ENGINES)[number];
  summarizer: (typeof SUMMARIZERS)[number];
  bedrockModelId?: string;
  /** Prefix of this deployment's Amazon Transcribe job names. */
  transcribeJobPrefix: string;
  /** The chunk length local transcribers aim at (CHUNK_SECONDS). */
  chunkSeconds: number;
  /** The ggml model file of the `whisper` engine. */
  whisperModel?: string;
  /** The worker's heartbeat and retry pacing (shorter locally, to see retries within a test). */
  timings: { heartbeatVisibilitySeconds: number; retryBaseSeconds: number };
  /** Jobs a tenant may have queued or processing at once. */
  maxActiveJobsPerTenant: number;
  /** The local runtime: http:// and private addresses are accepted for webhooks and audio_url (DESIGN 3). */
  localMode: boolean;
  endpoints: { dynamodb?: string; s3?: string; sqs?: string };
}

/** Reads the configuration; an unknown engine or summarizer fails here, naming the variable. */
export function readServiceConfig(env: NodeJS.ProcessEnv = process.env): ServiceConfig {
  const values = readEnvironment(environment, env);
  const bedrockModelId = values[ENV.bedrockModelId];
  const whisperModel = values[ENV.whisperModel];
  return {
    region: values[ENV.region],
    jobsTable: values[ENV.jobsTable],
    apiKeysTable: values[ENV.apiKeysTable],
    idempotencyTable: values[ENV.idempotencyTable],
    tenantsTable: values[ENV.tenantsTable],
    mediaBucket: values[ENV.mediaBucket],
    webhookQueueUrl: values[ENV.webhookQueueUrl],
    publicApiUrl: values[ENV.publicApiUrl].endsWith('/')
      ? values[ENV.publicApiUrl]
      : `${values[ENV.publicApiUrl]}/`,
    jobsQueueUrl: values[ENV.jobsQueueUrl],
    engine: values[ENV.engine],
    summarizer: values[ENV.summarizer],
    ...(bedrockModelId ? { bedrockModelId } : {}),
    transcribeJobPrefix: values[ENV.transcribeJobPrefix],
    chunkSeconds: values[ENV.chunkSeconds],
    ...(whisperModel ? { whisperModel } : {}),
    timings: {
      heartbeatVisibilitySeconds: values[ENV.heartbeatVisibilitySeconds],
      retryBaseSeconds: values[ENV.retryBaseSeconds],
    },
    localMode: values[ENV.localMode],
    maxActiveJobsPerTenant: values[ENV.maxActiveJobsPerTenant],
    endpoints: {
      dynamodb: values[ENV.dynamodbEndpoint],
      s3: values[ENV.s3Endpoint],
      sqs: values[ENV.sqsEndpoint],
    },
  };
}
