import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { encodeCheckMessage, encodeProcessMessage } from '#core/messages';
import type { JobQueue } from '#core/ports';

/** SQS allows a message to be delayed by at most 15 minutes, and hidden by at most 12 hours. */
const MAX_DELAY_SECONDS = 900;
const MAX_VISIBILITY_SECONDS = 12 * 60 * 60;

/** The SQS queue that triggers the worker. */
export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(jobId: string): Promise<void> {
    await this.client.send(
      new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: encodeProcessMessage(jobId) }),
    );
  }

  /** Hides a received message for `seconds` from now: heartbeats while it is worked on, backoff after a failure. */
  async hideMessage(receiptHandle: string, seconds: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: Math.max(0, Math.min(MAX_VISIBILITY_SECONDS, Math.round(seconds))),
      }),
    );
  }

  async scheduleCheck(jobId: string, attempt: number, delaySeconds: number): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: encodeCheckMessage(jobId, attempt),
        DelaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.round(delaySeconds))),
      }),
    );
  }
}
