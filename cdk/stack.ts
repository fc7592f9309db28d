import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { DeploymentSettings } from '#commons/contract';
import { Alarms } from './constructs/alarms.ts';
import { Api } from './constructs/api.ts';
import { Data } from './constructs/data.ts';
import { Queues } from './constructs/queues.ts';
import { Sweeper } from './constructs/sweeper.ts';
import { Webhooks } from './constructs/webhooks.ts';
import { Worker } from './constructs/worker.ts';

export interface TranscriptionStackProps extends StackProps {
  settings: DeploymentSettings;
}

/** The whole service: API, worker, data, queues and alarms. */
export class TranscriptionStack extends Stack {
  readonly api: Api;
  readonly worker: Worker;
  readonly data: Data;
  readonly queues: Queues;
  readonly alarms: Alarms;
  readonly sweeper: Sweeper;
  readonly webhooks: Webhooks;
  readonly settings: DeploymentSettings;

  constructor(scope: Construct, props: TranscriptionStackProps) {
    const { settings } = props;
    super(scope, settings.stackName, props);
    this.settings = settings;

    this.data = new Data(this, 'Data', { corsAllowedOrigins: settings.corsAllowedOrigins });
    this.queues = new Queues(this, 'Queues');
    this.api = new Api(this, 'Api', {
      data: this.data,
      queues: this.queues,
      authorizerCacheSeconds: settings.authorizerCacheSeconds,
      throttlingRateLimit: settings.throttlingRateLimit,
      throttlingBurstLimit: settings.throttlingBurstLimit,
      maxActiveJobsPerTenant: settings.maxActiveJobsPerTenant,
    });
    this.worker = new Worker(this, 'Worker', { data: this.data, queues: this.queues, settings });
    this.sweeper = new Sweeper(this, 'Sweeper', { data: this.data, queues: this.queues });
    this.alarms = new Alarms(this, 'Alarms', {
      api: this.api.restApi,
      worker: this.worker.worker,
      deadLetterHandler: this.worker.deadLetterHandler,
      metricsNamespace: settings.stackName,
      jobsQueue: this.queues.jobsQueue,
      deadLetterQueue: this.queues.deadLetterQueue,
      maxQueueAgeSeconds: settings.maxQueueAgeSeconds,
      ...(settings.alarmEmail ? { alarmEmail: settings.alarmEmail } : {}),
    });

    this.webhooks = new Webhooks(this, 'Webhooks', {
      data: this.data,
      api: this.api.restApi,
      finishers: [this.worker.worker, this.worker.deadLetterHandler, this.sweeper.function],
      alarmTopic: this.alarms.topic,
    });

    const outputs: Record<string, string> = {
      ApiUrl: this.api.restApi.url,
      ConsoleUrl: this.api.restApi.urlForPath('/console'),
      JobsTableName: this.data.jobsTable.tableName,
      ApiKeysTableName: this.data.apiKeysTable.tableName,
      TenantsTableName: this.data.tenantsTable.tableName,
      ApiReferenceUrl: this.api.restApi.urlForPath('/reference'),
      MediaBucketName: this.data.mediaBucket.bucketName,
      JobsQueueName: this.queues.jobsQueue.queueName,
      DeadLetterQueueName: this.queues.deadLetterQueue.queueName,
      WebhookQueueName: this.webhooks.queue.queueName,
      AlarmTopicArn: this.alarms.topic.topicArn,
      DashboardName: this.alarms.dashboard.dashboardName,
    };
    for (const [name, value] of Object.entries(outputs)) new CfnOutput(this, name, { value });
  }
}
