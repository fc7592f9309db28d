import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { Alarms } from './constructs/alarms.ts';
import { Api } from './constructs/api.ts';
import { Data } from './constructs/data.ts';
import { Queues } from './constructs/queues.ts';
import { type EngineName, type SummarizerName, Worker } from './constructs/worker.ts';

/** The deployment's choices, from `cdk deploy -c name=value` (see the README's Deploy section). */
export interface ServiceSettings {
  engine: EngineName;
  summarizer: SummarizerName;
  bedrockModelId?: string;
  workerConcurrency: number;
  authorizerCacheSeconds: number;
  throttlingRateLimit: number;
  throttlingBurstLimit: number;
  corsAllowedOrigins: string[];
  alarmEmail?: string;
  maxQueueAgeSeconds: number;
}

export interface TranscriptionStackProps extends StackProps {
  settings: ServiceSettings;
}

/** The whole service: API, worker, data, queues and alarms. */
export class TranscriptionStack extends Stack {
  readonly api: Api;
  readonly worker: Worker;
  readonly data: Data;
  readonly queues: Queues;
  readonly alarms: Alarms;

  constructor(scope: Construct, id: string, props: TranscriptionStackProps) {
    super(scope, id, props);
    const { settings } = props;

    this.data = new Data(this, 'Data', { corsAllowedOrigins: settings.corsAllowedOrigins });
    this.queues = new Queues(this, 'Queues');
    this.api = new Api(this, 'Api', {
      data: this.data,
      queues: this.queues,
      authorizerCacheSeconds: settings.authorizerCacheSeconds,
      throttlingRateLimit: settings.throttlingRateLimit,
      throttlingBurstLimit: settings.throttlingBurstLimit,
    });
    this.worker = new Worker(this, 'Worker', {
      data: this.data,
      queues: this.queues,
      engine: settings.engine,
      summarizer: settings.summarizer,
      ...(settings.bedrockModelId ? { bedrockModelId: settings.bedrockModelId } : {}),
      reservedConcurrency: settings.workerConcurrency,
      transcribeJobPrefix: `${this.stackName}-`,
    });
    this.alarms = new Alarms(this, 'Alarms', {
      api: this.api.restApi,
      worker: this.worker.worker,
      jobsQueue: this.queues.jobsQueue,
      deadLetterQueue: this.queues.deadLetterQueue,
      maxQueueAgeSeconds: settings.maxQueueAgeSeconds,
      ...(settings.alarmEmail ? { alarmEmail: settings.alarmEmail } : {}),
    });

    const outputs: Record<string, string> = {
      ApiUrl: this.api.restApi.url,
      ConsoleUrl: this.api.restApi.urlForPath('/console'),
      JobsTableName: this.data.jobsTable.tableName,
      ApiKeysTableName: this.data.apiKeysTable.tableName,
      MediaBucketName: this.data.mediaBucket.bucketName,
      JobsQueueName: this.queues.jobsQueue.queueName,
      DeadLetterQueueName: this.queues.deadLetterQueue.queueName,
      AlarmTopicArn: this.alarms.topic.topicArn,
    };
    for (const [name, value] of Object.entries(outputs)) new CfnOutput(this, name, { value });
  }
}
