import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { Topic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV, RESOURCES } from '#commons/contract';
import { bindQueue, bindTable } from './bind.ts';
import type { Data } from './data.ts';
import { ServiceFunction } from './service-function.ts';

export interface WebhooksProps {
  data: Data;
  api: RestApi;
  /** The functions that finish jobs (worker, dead-letter handler, sweeper): they queue first attempts. */
  finishers: LambdaFunction[];
  alarmTopic: Topic;
}

/**
 * Webhook delivery apart from the worker: a queue of attempts (a failed attempt sends the next one
 * with its delay), a small function that signs and POSTs them, its dead-letter queue with an alarm.
 */
export class Webhooks extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly function: ServiceFunction;

  constructor(scope: Construct, id: string, props: WebhooksProps) {
    super(scope, id);
    const { webhookQueue, webhookDeadLetterQueue } = RESOURCES;
    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      retentionPeriod: Duration.seconds(webhookDeadLetterQueue.retentionSeconds),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.queue = new Queue(this, 'Queue', {
      visibilityTimeout: Duration.seconds(webhookQueue.visibilityTimeoutSeconds),
      retentionPeriod: Duration.seconds(webhookDeadLetterQueue.retentionSeconds),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: {
        queue: this.deadLetterQueue,
        maxReceiveCount: webhookDeadLetterQueue.maxReceiveCount,
      },
    });

    this.function = new ServiceFunction(this, 'Function', {
      entry: 'functions/worker/webhooks.ts',
      description: 'Delivers signed webhooks of finished jobs',
      serviceName: 'transcription-webhooks',
      timeout: Duration.seconds(webhookQueue.functionTimeoutSeconds),
      memorySize: 256,
      // The status link in each webhook.
      environment: { [ENV.publicApiUrl]: props.api.url },
    });
    this.function.addEventSource(
      new SqsEventSource(this.queue, { batchSize: webhookQueue.batchSize, reportBatchItemFailures: true }),
    );
    bindTable(this.function, ENV.jobsTable, props.data.jobsTable, [
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
    ]);
    bindTable(this.function, ENV.tenantsTable, props.data.tenantsTable, ['dynamodb:GetItem']);
    // The next attempt of a failed one.
    bindQueue(this.function, ENV.webhookQueueUrl, this.queue);

    for (const finisher of props.finishers) {
      bindQueue(finisher, ENV.webhookQueueUrl, this.queue);
      // A finished job is read to see whether it has a webhook_url.
      bindTable(finisher, ENV.jobsTable, props.data.jobsTable, ['dynamodb:GetItem']);
    }

    new Alarm(this, 'DeadLetters', {
      alarmDescription: 'Webhook attempts failed in the webhook function itself (not at the receivers).',
      metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    }).addAlarmAction(new SnsAction(props.alarmTopic));
  }
}
