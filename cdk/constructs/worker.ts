import { Duration, IgnoreMode, Size, Stack } from 'aws-cdk-lib';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import { Rule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { DockerImageCode, DockerImageFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import {
  CROSS_REGION_PROFILE_PREFIXES,
  type DeploymentSettings,
  ENV,
  RESOURCES,
  transcribeJobPrefix,
  WORKER_TIMEOUT_SECONDS,
} from '#commons/contract';
import { OFFICIAL_MODELS } from '#speech/whisper-models';
import { WORKER_IMAGE } from '#worker/image-settings';
import { bindBucket, bindJobMetrics, bindQueue, bindTable } from './bind.ts';
import type { Data } from './data.ts';
import type { Queues } from './queues.ts';
import { baseEnvironment, FUNCTION_DEFAULTS, REPO_ROOT, ServiceFunction } from './service-function.ts';

export interface WorkerProps {
  data: Data;
  queues: Queues;
  settings: DeploymentSettings;
}

/**
 * The SQS-triggered worker (a container image: it needs ffmpeg and PocketSphinx), the dead-letter
 * handler that puts abandoned jobs in error, and the rule that brings Amazon Transcribe completions
 * back to the worker through the queue.
 */
export class Worker extends Construct {
  readonly worker: DockerImageFunction;
  readonly deadLetterHandler: ServiceFunction;
  readonly transcribeRule: Rule;
  /** The one grant with a "*" resource, acknowledged to cdk-nag by itself. */
  readonly startTranscriptionJobs: PolicyStatement;

  constructor(scope: Construct, id: string, props: WorkerProps) {
    super(scope, id);
    const { data, queues, settings } = props;
    // Amazon Transcribe job names of this stack start with it, so that its rule sees only its own jobs.
    const jobPrefix = transcribeJobPrefix(settings.stackName);

    const whisper = whisperImage(settings);
    this.worker = new DockerImageFunction(this, 'Function', {
      description: 'Transcribes queued jobs',
      code: DockerImageCode.fromImageAsset(REPO_ROOT, {
        file: 'functions/worker/Dockerfile',
        platform: Platform.LINUX_ARM64,
        // The image needs only the functions and the lock file; anything else would change its hash for nothing
        // (the sphinx-decoder that setup builds beside its source is this machine's: the image builds its own).
        ignoreMode: IgnoreMode.DOCKER,
        exclude: [
          '*',
          '!package.json',
          '!package-lock.json',
          '!functions',
          `functions/speech/${WORKER_IMAGE.sphinxDecoder.file}`,
        ],
        ...(whisper ? { buildArgs: { [WORKER_IMAGE.modelBuildArg]: whisper.name } } : {}),
      }),
      architecture: FUNCTION_DEFAULTS.architecture,
      // Lambda's longest: long audio is cut into pieces, each well within it.
      timeout: Duration.seconds(WORKER_TIMEOUT_SECONDS),
      // About 2.3 vCPUs (Lambda gives a vCPU per 1,769 MB): decoding and recognition are CPU-bound.
      // A larger whisper model gets the memory it needs, and the cores that come with it.
      memorySize: whisper?.memoryMb ?? 4096,
      ephemeralStorageSize: Size.gibibytes(10),
      loggingFormat: FUNCTION_DEFAULTS.loggingFormat,
      logGroup: new LogGroup(this, 'FunctionLogs', { retention: FUNCTION_DEFAULTS.logRetention }),
      environment: {
        ...baseEnvironment('transcription-worker'),
        [ENV.engine]: settings.engine,
        [ENV.summarizer]: settings.summarizer,
        ...(settings.bedrockModelId ? { [ENV.bedrockModelId]: settings.bedrockModelId } : {}),
        [ENV.transcribeJobPrefix]: jobPrefix,
        [ENV.chunkSeconds]: String(settings.chunkSeconds),
        ...(whisper ? { [ENV.whisperModel]: whisper.file } : {}),
      },
    });
    bindJobMetrics(this.worker, settings.stackName);
    this.worker.addEventSource(
      new SqsEventSource(queues.jobsQueue, {
        batchSize: RESOURCES.jobsQueue.batchSize,
        reportBatchItemFailures: true,
        // Bounds the jobs processed at once without reserving account concurrency (which fails the
        // deployment where the account's quota is 10), and the poller stops receiving at the bound
        // instead of receiving, being throttled and burning the messages' receive count.
        maxConcurrency: settings.workerConcurrency,
      }),
    );
    bindTable(this.worker, ENV.jobsTable, data.jobsTable, ['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    // Checks on jobs handed to Amazon Transcribe are delayed messages to the same queue.
    bindQueue(this.worker, ENV.jobsQueueUrl, queues.jobsQueue);
    bindBucket(this.worker, ENV.mediaBucket, data.mediaBucket, {
      // Audio submitted by address is fetched into audio/ by the worker.
      audio: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload'],
      uploads: ['s3:GetObject'],
      // A long job's chunks, their results and its plan, passed between workers and removed at the end.
      work: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
      results: ['s3:PutObject'],
      transcribeOutput: ['s3:GetObject', 's3:PutObject'],
    });

    const { account, region, partition } = Stack.of(this);
    // StartTranscriptionJob has no resource type in the Service Authorization Reference (a policy must
    // name "*"), so the grant is pinned instead by the condition key transcribe:OutputBucketName to this
    // stack's bucket, as the Transcribe developer guide's own example does:
    // https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazontranscribe.html
    // https://docs.aws.amazon.com/transcribe/latest/dg/security_iam_service-with-iam.html
    this.startTranscriptionJobs = new PolicyStatement({
      actions: ['transcribe:StartTranscriptionJob'],
      resources: ['*'],
      conditions: { StringEquals: { 'transcribe:OutputBucketName': data.mediaBucket.bucketName } },
    });
    this.worker.addToRolePolicy(this.startTranscriptionJobs);
    // GetTranscriptionJob has the transcription-job resource type: this stack's jobs only.
    this.worker.addToRolePolicy(
      new PolicyStatement({
        actions: ['transcribe:GetTranscriptionJob'],
        resources: [`arn:${partition}:transcribe:${region}:${account}:transcription-job/${jobPrefix}*`],
      }),
    );
    if (settings.summarizer === 'bedrock' && settings.bedrockModelId) {
      for (const statement of bedrockInvokeStatements(settings.bedrockModelId, {
        account,
        region,
        partition,
      })) {
        this.worker.addToRolePolicy(statement);
      }
    }

    this.transcribeRule = new Rule(this, 'TranscribeCompletions', {
      description: 'Amazon Transcribe jobs of this stack that finished, back to the worker queue',
      eventPattern: {
        source: ['aws.transcribe'],
        detailType: ['Transcribe Job State Change'],
        detail: {
          TranscriptionJobName: [{ prefix: jobPrefix }],
          TranscriptionJobStatus: ['COMPLETED', 'FAILED'],
        },
      },
      targets: [new SqsQueue(queues.jobsQueue)],
    });

    this.deadLetterHandler = new ServiceFunction(this, 'DeadLetterHandler', {
      entry: 'functions/worker/dead-letter.ts',
      description: 'Puts the jobs of dead-lettered messages in error',
      timeout: Duration.seconds(30),
      serviceName: 'transcription-dead-letter',
      memorySize: 256,
      environment: { [ENV.transcribeJobPrefix]: jobPrefix },
    });
    bindJobMetrics(this.deadLetterHandler, settings.stackName);
    this.deadLetterHandler.addEventSource(
      new SqsEventSource(queues.deadLetterQueue, {
        batchSize: RESOURCES.deadLetterQueue.batchSize,
        reportBatchItemFailures: true,
      }),
    );
    bindTable(this.deadLetterHandler, ENV.jobsTable, data.jobsTable, ['dynamodb:UpdateItem']);
  }
}

/**
 * The whisper model baked into the worker image for `engine=whisper`: its name (the image build
 * downloads and verifies it), its path in the image, and the worker's memory: 4 GB (about 2.3 vCPUs)
 * up to base, then the model's memory while transcribing (whisper.cpp's README) plus 3 GB for the
 * runtime, ffmpeg and voice activity detection, rounded up to a GB, within Lambda's 10,240 MB.
 */
export function whisperImage(
  settings: Pick<DeploymentSettings, 'engine' | 'whisperModel'>,
): { name: string; file: string; memoryMb: number } | undefined {
  if (settings.engine !== 'whisper' || !settings.whisperModel) return undefined;
  const model = OFFICIAL_MODELS[settings.whisperModel];
  const memoryMb = Math.min(10_240, Math.max(4096, Math.ceil((model.memoryMb + 3072) / 1024) * 1024));
  return {
    name: settings.whisperModel,
    file: `${WORKER_IMAGE.taskRoot}/${WORKER_IMAGE.modelDir}/${model.file}`,
    memoryMb,
  };
}

/**
 * Converse needs bedrock:InvokeModel on what it is given. A foundation model id: that model in this
 * region. A cross-region inference profile id (`us.…`, `eu.…`, `global.…`): the profile, and its
 * foundation model in every region the profile may route to, as Bedrock's inference-profile
 * prerequisites require; the model's grant names every region (profiles gain regions over time) but
 * holds only for requests made through this profile (bedrock:InferenceProfileArn).
 * https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html
 */
export function bedrockInvokeStatements(
  modelId: string,
  stack: { account: string; region: string; partition: string },
): PolicyStatement[] {
  const { account, region, partition } = stack;
  const [geography = '', ...rest] = modelId.split('.');
  if (!(CROSS_REGION_PROFILE_PREFIXES as readonly string[]).includes(geography) || rest.length < 2) {
    return [
      new PolicyStatement({
        actions: ['bedrock:InvokeModel'],
        resources: [`arn:${partition}:bedrock:${region}::foundation-model/${modelId}`],
      }),
    ];
  }
  const profileArn = `arn:${partition}:bedrock:${region}:${account}:inference-profile/${modelId}`;
  return [
    new PolicyStatement({ actions: ['bedrock:InvokeModel'], resources: [profileArn] }),
    new PolicyStatement({
      actions: ['bedrock:InvokeModel'],
      resources: [`arn:${partition}:bedrock:*::foundation-model/${rest.join('.')}`],
      conditions: { StringEquals: { 'bedrock:InferenceProfileArn': profileArn } },
    }),
  ];
}
