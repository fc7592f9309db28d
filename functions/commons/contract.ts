/**
 * The deployment contract: every name, limit and setting that the CDK stack, the Lambda handlers and the
 * local runtime must agree on, written once. `cdk/`, `functions/aws/`, `functions/worker/` and `local/`
 * import it; nothing here imports the AWS SDK, so the domain may import it too.
 */
import { z } from 'zod';
import { OFFICIAL_MODEL_NAMES } from '#speech/whisper-models';

/** How long a job, its audio and its result are kept (SPEC 8: the console shows the last 90 days). */
export const RETENTION_DAYS = 90;
export const RETENTION_MS = RETENTION_DAYS * 24 * 60 * 60 * 1000;

/** Longest audio accepted (DESIGN 3: up to 4 hours). */
export const MAX_AUDIO_DURATION_MS = 4 * 60 * 60 * 1000;

/**
 * Largest request body accepted by `POST /v1-beta/transcript`. Lambda caps a synchronous invocation
 * payload at 6 MiB (6,291,456 bytes); API Gateway delivers binary bodies base64-encoded (4/3 larger)
 * inside a JSON event, so 64 KiB are kept for the event envelope: (6,291,456 - 65,536) * 3 / 4.
 */
export const MAX_DIRECT_UPLOAD_BYTES = 4_669_440;

/** Largest file accepted through a presigned upload or an `audio_url` (DESIGN 3: up to 2 GB). */
export const MAX_UPLOAD_BYTES = 2 * 1024 * 1024 * 1024;

/** A presigned upload URL must be used within this time; the upload, submitted within the next. */
export const UPLOAD_URL_EXPIRY_SECONDS = 900;
export const UPLOAD_REF_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A job's audio is read (played in the console) through a presigned GET valid this long; a player that
 * outlives it asks for a new one.
 */
export const AUDIO_DOWNLOAD_URL_EXPIRY_SECONDS = 600;

/**
 * Uploads carry a tag, signed into their URL: pending until a submission uses them, when it becomes
 * submitted. The bucket's lifecycle expires pending uploads after a day and submitted ones with the job.
 */
export const UPLOAD_TAG = { key: 'state', pending: 'pending', submitted: 'submitted' } as const;
export const PENDING_UPLOAD_EXPIRATION_DAYS = 1;

/** The worker Lambda's timeout; the queue's visibility timeout derives from it. */
export const WORKER_TIMEOUT_SECONDS = 900;

/**
 * While a worker has a message, it keeps it hidden this long past each heartbeat (a heartbeat every
 * third of it) and holds the job's lease five sixths of it: a worker that dies is noticed within this
 * time, and its own redelivered message then always finds the lease expired.
 */
export const HEARTBEAT_VISIBILITY_SECONDS = 180;

/** A failed message waits this long before its second attempt, four times longer before each next one. */
export const RETRY_BASE_SECONDS = 15;
/** …but never longer than this (SQS allows 12 hours). */
export const MAX_RETRY_DELAY_SECONDS = 900;

/** How often the sweeper looks for jobs that nothing moved when something should have. */
export const SWEEP_INTERVAL_SECONDS = 300;

/** A queued job not started within this time has its start message sent again. */
export const QUEUED_DUE_MS = 15 * 60 * 1000;

/**
 * Every job reaches `completed` or `error` within this time of its submission (plus one sweep): long
 * enough for the slowest path, an asynchronous transcriber's whole deadline after a wait in the queue.
 */
export const JOB_DEADLINE_MS = 8 * 60 * 60 * 1000;

/** How often a job left with an asynchronous transcriber is checked, in case its completion event is lost. */
export const ASYNC_CHECK_INTERVAL_SECONDS = 600;

/** How long an asynchronous transcriber may take before the job is given up (4 h of audio fit well within). */
export const ASYNC_DEADLINE_MS = 6 * 60 * 60 * 1000;

/** A job may ask to be kept for fewer days than RETENTION_DAYS (`retention_days`), at least this many. */
export const MIN_RETENTION_DAYS = 1;

/** How long an `Idempotency-Key` names one submission: a repeat within this time answers the same job. */
export const IDEMPOTENCY_SECONDS = 24 * 60 * 60;

/**
 * Webhook delivery (Standard Webhooks). An attempt is delivered when the receiver answers 2xx within
 * the timeout; otherwise it is tried again after 30 s, four times longer before each next try, at most
 * 6 hours apart, for WEBHOOK_MAX_ATTEMPTS attempts in all: about 21 hours, within a day of the job's end.
 */
export const WEBHOOK_TIMEOUT_MS = 10_000;
export const WEBHOOK_RETRY_BASE_SECONDS = 30;
export const WEBHOOK_MAX_RETRY_DELAY_SECONDS = 6 * 60 * 60;
export const WEBHOOK_MAX_ATTEMPTS = 9;
/** Every attempt ends within this time of the first one. */
export const WEBHOOK_GIVE_UP_MS = 24 * 60 * 60 * 1000;

/** The API Gateway stage, locally and on AWS: `{base_url}` ends in `/prod/`. */
export const STAGE_NAME = 'prod';

/** The query parameter (SPEC 5) and header that carry the API key. */
export const API_KEY_PARAMETER = 'x-api-key';

/** What the worker transcribes with (the operator's `engine` setting, and `engine` in every result). */
export const ENGINES = ['sphinx', 'transcribe', 'whisper'] as const;
export type EngineName = (typeof ENGINES)[number];

/**
 * The first part of a cross-region (system-defined) Bedrock inference profile id, naming the geography
 * it routes within (`us.anthropic.claude-3-haiku-20240307-v1:0`); a foundation model id starts with
 * its provider (`anthropic.claude-3-haiku-20240307-v1:0`).
 */
export const CROSS_REGION_PROFILE_PREFIXES = [
  'us',
  'us-gov',
  'eu',
  'apac',
  'jp',
  'au',
  'ca',
  'global',
] as const;

/** What writes `tldr` and `short_hand_notes`. */
export const SUMMARIZERS = ['local', 'bedrock'] as const;
export type SummarizerName = (typeof SUMMARIZERS)[number];

/** Where the media bucket keeps objects, each prefix with its own grants and expiry. */
export const MEDIA_PREFIXES = {
  audio: 'audio/',
  uploads: 'uploads/',
  /** A long job's chunks and their results between workers; deleted when the job ends, expired anyway. */
  work: 'work/',
  results: 'results/',
  transcribeOutput: 'transcribe/',
} as const;
export type MediaPrefix = keyof typeof MEDIA_PREFIXES;

/** Amazon Transcribe output is read once, when its job completes; a week covers every retry. */
export const TRANSCRIBE_OUTPUT_EXPIRATION_DAYS = 7;

export function audioKey(tenantId: string, jobId: string): string {
  return `${MEDIA_PREFIXES.audio}${tenantId}/${jobId}`;
}

/** A long job's working file: its plan, a chunk's audio, a chunk's result. */
export function workKey(tenantId: string, jobId: string, name: string): string {
  return `${MEDIA_PREFIXES.work}${tenantId}/${jobId}/${name}`;
}
/** Working files outlive any job (8 hours at most) by far, in case their cleanup failed. */
export const WORK_EXPIRATION_DAYS = 2;

/** Where a presigned upload puts its file: under the tenant, named by the upload's reference. */
export function uploadKey(tenantId: string, audioRef: string): string {
  return `${MEDIA_PREFIXES.uploads}${tenantId}/${audioRef}`;
}

export function resultKey(tenantId: string, jobId: string): string {
  return `${MEDIA_PREFIXES.results}${tenantId}/${jobId}.json`;
}

export function transcribeOutputKey(tenantId: string, jobId: string): string {
  return `${MEDIA_PREFIXES.transcribeOutput}${tenantId}/${jobId}.json`;
}

/** The first two channels of a job's audio, for Transcribe's channel identification (it takes two). */
export function transcribeInputKey(tenantId: string, jobId: string): string {
  return `${MEDIA_PREFIXES.transcribeOutput}${tenantId}/${jobId}.two-channels.flac`;
}

/**
 * The prefix of this deployment's Amazon Transcribe job names: its EventBridge rule, its IAM grant and
 * the worker all use it, so that a deployment sees only its own jobs. It ends in `_`, which Transcribe
 * job names allow and stack names do not, so that no other stack's prefix can extend it (`Svc-` would
 * also match the jobs of stack `Svc-2`; `Svc_` cannot match `Svc-2_…`).
 */
export function transcribeJobPrefix(stackName: string): string {
  return `${stackName}_`;
}

export function transcribeJobName(prefix: string, jobId: string): string {
  return `${prefix}${jobId}`;
}

/** The job a Transcribe job name stands for, or undefined for a job of another deployment. */
export function jobIdOfTranscribeJob(prefix: string, name: string): string | undefined {
  return prefix && name.startsWith(prefix) ? name.slice(prefix.length) : undefined;
}

/** Names and settings of the AWS resources; deployed names are CloudFormation's, these are the local ones. */
export const RESOURCES = {
  jobsTable: {
    name: 'transcription-jobs',
    partitionKey: 'id',
    ttlAttribute: 'expiresAt',
    tenantIndex: {
      name: 'byTenant',
      partitionKey: 'tenantId',
      sortKey: 'timestamp_submitted',
      projection: 'ALL',
    },
    /** Sparse: only queued and processing jobs carry these keys, so the indexes hold active jobs alone. */
    dueIndex: { name: 'activeByDue', partitionKey: 'activeShard', sortKey: 'dueAt', projection: 'ALL' },
    /** Only counted, so it needs no attributes of its own. */
    activeTenantIndex: {
      name: 'activeByTenant',
      partitionKey: 'activeTenant',
      sortKey: 'dueAt',
      projection: 'KEYS_ONLY',
    },
    /** Sparse: only jobs kept for fewer than 90 days, by when they expire (epoch seconds, a number). */
    expiryIndex: {
      name: 'shortRetentionByExpiry',
      partitionKey: 'retentionShard',
      sortKey: 'expiresAt',
      projection: 'ALL',
    },
  },
  /** What `Idempotency-Key` requests answered, for IDEMPOTENCY_SECONDS (Powertools' attribute names). */
  idempotencyTable: {
    name: 'transcription-idempotency',
    partitionKey: 'id',
    ttlAttribute: 'expiration',
  },
  /** Per-tenant settings: the webhook signing secrets. */
  tenantsTable: {
    name: 'transcription-tenants',
    partitionKey: 'tenantId',
  },
  apiKeysTable: {
    name: 'transcription-api-keys',
    partitionKey: 'keyHash',
  },
  mediaBucket: {
    name: 'transcription-media',
  },
  jobsQueue: {
    name: 'transcription-jobs',
    // Lambda requires at least the function timeout. Workers set each message's own visibility at once
    // (heartbeats, backoff), so this applies only to a worker that dies before its first heartbeat.
    visibilityTimeoutSeconds: 2 * WORKER_TIMEOUT_SECONDS,
    batchSize: 1,
  },
  deadLetterQueue: {
    name: 'transcription-jobs-dlq',
    // The Lambda guide's advice for SQS event sources: at least 5, so that a few throttled or failed
    // receives do not dead-letter a job that would have succeeded.
    maxReceiveCount: 5,
    retentionSeconds: 14 * 24 * 60 * 60,
    batchSize: 10,
  },
  /** One message per webhook attempt; a failed attempt sends the next one with its delay. */
  webhookQueue: {
    name: 'transcription-webhooks',
    // Lambda requires at least the function timeout; a batch's attempts run in parallel.
    visibilityTimeoutSeconds: 60,
    batchSize: 10,
    functionTimeoutSeconds: 30,
  },
  /** Messages the webhook function failed on repeatedly (not receivers that failed: those are recorded). */
  webhookDeadLetterQueue: {
    name: 'transcription-webhooks-dlq',
    maxReceiveCount: 5,
    retentionSeconds: 14 * 24 * 60 * 60,
  },
} as const;

/**
 * Every environment variable a function reads. The stack sets them, the local runtime sets them for
 * its handlers, and the README's configuration table lists them (a test checks).
 */
export const ENV = {
  region: 'AWS_REGION',
  jobsTable: 'JOBS_TABLE',
  apiKeysTable: 'API_KEYS_TABLE',
  idempotencyTable: 'IDEMPOTENCY_TABLE',
  tenantsTable: 'TENANTS_TABLE',
  webhookQueueUrl: 'WEBHOOK_QUEUE_URL',
  publicApiUrl: 'PUBLIC_API_URL',
  mediaBucket: 'MEDIA_BUCKET',
  jobsQueueUrl: 'JOBS_QUEUE_URL',
  engine: 'ENGINE',
  summarizer: 'SUMMARIZER',
  bedrockModelId: 'BEDROCK_MODEL_ID',
  transcribeJobPrefix: 'TRANSCRIBE_JOB_PREFIX',
  chunkSeconds: 'CHUNK_SECONDS',
  whisperModel: 'WHISPER_MODEL',
  maxActiveJobsPerTenant: 'MAX_ACTIVE_JOBS_PER_TENANT',
  heartbeatVisibilitySeconds: 'HEARTBEAT_VISIBILITY_SECONDS',
  retryBaseSeconds: 'RETRY_BASE_SECONDS',
  localMode: 'LOCAL_MODE',
  dynamodbEndpoint: 'DYNAMODB_ENDPOINT',
  s3Endpoint: 'S3_ENDPOINT',
  sqsEndpoint: 'SQS_ENDPOINT',
  logLevel: 'POWERTOOLS_LOG_LEVEL',
  serviceName: 'POWERTOOLS_SERVICE_NAME',
  metricsNamespace: 'POWERTOOLS_METRICS_NAMESPACE',
  metricsDisabled: 'POWERTOOLS_METRICS_DISABLED',
} as const;
export type EnvName = (typeof ENV)[keyof typeof ENV];

/** Jobs a tenant may have queued or processing at once; more submissions get a 429 until some finish. */
export const DEFAULT_MAX_ACTIVE_JOBS_PER_TENANT = 100;

/** Seconds API Gateway caches an authorizer decision by default (and the local gateway likewise). */
export const DEFAULT_AUTHORIZER_CACHE_SECONDS = 300;

/** The log level of deployed functions. */
export const DEPLOYED_LOG_LEVEL = 'INFO';

/**
 * The job outcome metrics the worker and the dead-letter handler emit (CloudWatch embedded metric
 * format) and the stack's alarms and dashboard read. The namespace is the stack's name, so that two
 * deployments in one account keep theirs apart.
 */
export const JOB_METRICS = {
  /** Jobs that ended, by `outcome`: `completed` or the job error code. */
  jobsEnded: 'JobsEnded',
  /** Minutes of audio of the jobs that completed. */
  audioMinutes: 'AudioMinutes',
  /** Processing time over audio time of the jobs the worker transcribed itself, by `engine`. */
  realTimeFactor: 'RealTimeFactor',
  /** Messages the dead-letter handler received. */
  deadLetteredMessages: 'DeadLetteredMessages',
  /** Messages the worker reported failed, to be redelivered. */
  workerFailures: 'WorkerFailures',
  /** Dimension of `jobsEnded`. */
  outcomeDimension: 'outcome',
  /** Dimension of `realTimeFactor`. */
  engineDimension: 'engine',
  /** The `service` dimension Powertools adds to every metric, the same for both handlers. */
  service: 'transcription',
} as const;

/** Job error codes that are the service's failures, not the client's input: each one alarms. */
export const OPERATOR_ERROR_CODES = ['transcription_failed', 'internal'] as const;

/** The API's routes; the local gateway and the stack both build theirs from this list. */
export const API_ROUTES = [
  { method: 'POST', path: '/v1-beta/transcript', handler: 'submit', authorized: true },
  { method: 'POST', path: '/v1-beta/upload', handler: 'upload', authorized: true },
  { method: 'GET', path: '/v1-beta/transcript/status', handler: 'status', authorized: true },
  { method: 'GET', path: '/v1-beta/transcript/export', handler: 'export', authorized: true },
  { method: 'GET', path: '/v1-beta/transcript/audio', handler: 'audio', authorized: true },
  { method: 'DELETE', path: '/v1-beta/transcript', handler: 'delete', authorized: true },
  { method: 'GET', path: '/v1-beta/transcripts', handler: 'list', authorized: true },
  // The page holds no data; the data routes it calls are behind the authorizer.
  { method: 'GET', path: '/console', handler: 'console', authorized: false },
  // The API's description and its reference page: public, like any published API contract.
  { method: 'GET', path: '/openapi.json', handler: 'openapi', authorized: false },
  { method: 'GET', path: '/reference', handler: 'reference', authorized: false },
] as const;
export type ApiHandlerName = (typeof API_ROUTES)[number]['handler'];

/** Content types API Gateway passes to the handlers base64-encoded, so that audio arrives intact. */
export const BINARY_MEDIA_TYPES = ['multipart/form-data', 'audio/*', 'video/*', 'application/octet-stream'];

const count = (fallback: number) => z.coerce.number().int().nonnegative().default(fallback);

/**
 * The length local transcribers aim at when they cut long audio into chunks that workers transcribe
 * apart (a chunk lies between half and twice it, at the quietest stretch; a file up to twice it is one
 * chunk). Shorter chunks spread a file over more workers at more per-chunk overhead.
 */
export const DEFAULT_CHUNK_SECONDS = 60;
export const CHUNK_SECONDS_RANGE = { min: 10, max: 600 } as const;

/** Lambda's range for an SQS event source's maximum concurrency (ScalingConfig.MaximumConcurrency). */
export const WORKER_CONCURRENCY_RANGE = { min: 2, max: 1000 } as const;

/** The deployment's choices: `cdk deploy -c name=value` or `cdk.json` (the README's Deploy section). */
export const deploymentSettingsSchema = z
  .object({
    stackName: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9-]{0,127}$/)
      .default('TranscriptionService'),
    engine: z.enum(ENGINES).default('transcribe'),
    summarizer: z.enum(SUMMARIZERS).default('local'),
    bedrockModelId: z.string().min(1).optional(),
    // The official whisper model the worker image is built with (engine whisper).
    whisperModel: z.enum(OFFICIAL_MODEL_NAMES).optional(),
    // The jobs queue's event source's maximum concurrency, not reserved concurrency: a new account's
    // concurrency quota may be 10, and reserving 10 of it would fail the deployment.
    workerConcurrency: count(10).pipe(
      z.number().min(WORKER_CONCURRENCY_RANGE.min).max(WORKER_CONCURRENCY_RANGE.max),
    ),
    authorizerCacheSeconds: count(DEFAULT_AUTHORIZER_CACHE_SECONDS).pipe(z.number().max(3600)),
    maxActiveJobsPerTenant: count(DEFAULT_MAX_ACTIVE_JOBS_PER_TENANT).pipe(z.number().min(1)),
    chunkSeconds: count(DEFAULT_CHUNK_SECONDS).pipe(
      z.number().min(CHUNK_SECONDS_RANGE.min).max(CHUNK_SECONDS_RANGE.max),
    ),
    throttlingRateLimit: count(50),
    throttlingBurstLimit: count(100),
    alarmEmail: z.email().optional(),
    corsAllowedOrigins: z
      .string()
      .default('*')
      .transform((value) =>
        value
          .split(',')
          .map((origin) => origin.trim())
          .filter(Boolean),
      ),
    maxQueueAgeSeconds: count(1800),
  })
  .refine((settings) => settings.summarizer !== 'bedrock' || settings.bedrockModelId, {
    message: 'summarizer=bedrock needs -c bedrockModelId=…',
  })
  .refine((settings) => settings.engine !== 'whisper' || settings.whisperModel, {
    message: `engine=whisper needs -c whisperModel=… (${OFFICIAL_MODEL_NAMES.join(', ')})`,
  });
export type DeploymentSettings = z.infer<typeof deploymentSettingsSchema>;
/** The names of the deployment settings, to read each from the CDK context. */
export const DEPLOYMENT_SETTING_NAMES = Object.keys(
  deploymentSettingsSchema.shape,
) as (keyof DeploymentSettings)[];
