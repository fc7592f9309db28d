import { Duration, IgnoreMode, Size, Stack } from 'aws-cdk-lib';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import { Rule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { DockerImageCode, DockerImageFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { RESOURCES, WORKER_TIMEOUT_SECONDS } from '#core/resources';
import { type Data, MEDIA_PREFIXES } from './data.ts';
import type { Queues } from './queues.ts';
import { FUNCTION_DEFAULTS, REPO_ROOT, ServiceFunction } from './service-function.ts';

export type EngineName = 'transcribe' | 'sphinx';
export type SummarizerName = 'local' | 'bedrock';

export interface WorkerProps {
  data: Data;
  queues: Queues;
  engine: EngineName;
  summarizer: SummarizerName;
  bedrockModelId?: string;
  /** Reserved concurrency of the worker: an upper bound on parallel jobs, and on cost. */
  reservedConcurrency: number;
  /** Prefix of the Amazon Transcribe job names of this stack, so that its rule sees only its own jobs. */
  transcribeJobPrefix: string;
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

  constructor(scope: Construct, id: string, props: WorkerProps) {
    super(scope, id);
    const { data, queues } = props;
    const environment = {
      JOBS_TABLE: data.jobsTable.tableName,
      MEDIA_BUCKET: data.mediaBucket.bucketName,
      JOBS_QUEUE_URL: queues.jobsQueue.queueUrl,
      ENGINE: props.engine,
      SUMMARIZER: props.summarizer,
      ...(props.bedrockModelId ? { BEDROCK_MODEL_ID: props.bedrockModelId } : {}),
      TRANSCRIBE_JOB_PREFIX: props.transcribeJobPrefix,
      TRANSCRIBE_OUTPUT_PREFIX: MEDIA_PREFIXES.transcribeOutput,
      POWERTOOLS_SERVICE_NAME: 'transcription-worker',
      POWERTOOLS_LOG_LEVEL: 'INFO',
    };

    this.worker = new DockerImageFunction(this, 'Function', {
      description: 'Transcribes queued jobs',
      code: DockerImageCode.fromImageAsset(REPO_ROOT, {
        file: 'functions/worker/Dockerfile',
        platform: Platform.LINUX_ARM64,
        // The image needs only the functions and the lock file; anything else would change its hash for nothing.
        ignoreMode: IgnoreMode.DOCKER,
        exclude: ['*', '!package.json', '!package-lock.json', '!functions'],
      }),
      architecture: FUNCTION_DEFAULTS.architecture,
      timeout: Duration.seconds(WORKER_TIMEOUT_SECONDS),
      // About 2.3 vCPUs: decoding and recognition are CPU-bound.
      memorySize: 4096,
      ephemeralStorageSize: Size.gibibytes(10),
      reservedConcurrentExecutions: props.reservedConcurrency,
      loggingFormat: FUNCTION_DEFAULTS.loggingFormat,
      logGroup: new LogGroup(this, 'FunctionLogs', { retention: FUNCTION_DEFAULTS.logRetention }),
      environment,
    });
    this.worker.addEventSource(
      new SqsEventSource(queues.jobsQueue, {
        batchSize: RESOURCES.jobsQueue.batchSize,
        reportBatchItemFailures: true,
      }),
    );
    data.grantItems(this.worker, data.jobsTable, 'dynamodb:GetItem', 'dynamodb:UpdateItem');
    // Checks on jobs an asynchronous engine has are delayed messages to the same queue.
    queues.jobsQueue.grantSendMessages(this.worker);
    data.grantObjects(this.worker, MEDIA_PREFIXES.audio, 's3:GetObject');
    data.grantObjects(this.worker, MEDIA_PREFIXES.results, 's3:PutObject');
    data.grantObjects(this.worker, MEDIA_PREFIXES.transcribeOutput, 's3:GetObject', 's3:PutObject');

    const { account, region, partition } = Stack.of(this);
    this.worker.addToRolePolicy(
      new PolicyStatement({
        actions: ['transcribe:StartTranscriptionJob', 'transcribe:GetTranscriptionJob'],
        resources: [
          `arn:${partition}:transcribe:${region}:${account}:transcription-job/${props.transcribeJobPrefix}*`,
        ],
      }),
    );
    if (props.summarizer === 'bedrock' && props.bedrockModelId) {
      this.worker.addToRolePolicy(
        new PolicyStatement({
          actions: ['bedrock:InvokeModel'],
          resources: [
            `arn:${partition}:bedrock:${region}::foundation-model/${props.bedrockModelId}`,
            `arn:${partition}:bedrock:${region}:${account}:inference-profile/${props.bedrockModelId}`,
          ],
        }),
      );
    }

    this.transcribeRule = new Rule(this, 'TranscribeCompletions', {
      description: 'Amazon Transcribe jobs of this stack that finished, back to the worker queue',
      eventPattern: {
        source: ['aws.transcribe'],
        detailType: ['Transcribe Job State Change'],
        detail: {
          TranscriptionJobName: [{ prefix: props.transcribeJobPrefix }],
          TranscriptionJobStatus: ['COMPLETED', 'FAILED'],
        },
      },
      targets: [new SqsQueue(queues.jobsQueue)],
    });

    this.deadLetterHandler = new ServiceFunction(this, 'DeadLetterHandler', {
      entry: 'functions/worker/dead-letter.ts',
      description: 'Puts the jobs of dead-lettered messages in error',
      timeout: Duration.seconds(30),
      memorySize: 256,
      environment: {
        JOBS_TABLE: data.jobsTable.tableName,
        TRANSCRIBE_JOB_PREFIX: props.transcribeJobPrefix,
        POWERTOOLS_SERVICE_NAME: 'transcription-dead-letter',
      },
    });
    this.deadLetterHandler.addEventSource(
      new SqsEventSource(queues.deadLetterQueue, { batchSize: 10, reportBatchItemFailures: true }),
    );
    data.grantItems(this.deadLetterHandler, data.jobsTable, 'dynamodb:UpdateItem');
  }
}
