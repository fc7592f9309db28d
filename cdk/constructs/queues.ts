import { Duration } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { RESOURCES } from '#commons/contract';

/** The jobs queue that triggers the worker, with its dead-letter queue. */
export class Queues extends Construct {
  readonly jobsQueue: Queue;
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const { jobsQueue, deadLetterQueue } = RESOURCES;
    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      retentionPeriod: Duration.seconds(deadLetterQueue.retentionSeconds),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.jobsQueue = new Queue(this, 'JobsQueue', {
      visibilityTimeout: Duration.seconds(jobsQueue.visibilityTimeoutSeconds),
      retentionPeriod: Duration.seconds(deadLetterQueue.retentionSeconds),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: deadLetterQueue.maxReceiveCount },
    });
  }
}
