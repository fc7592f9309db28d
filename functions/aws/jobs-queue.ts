import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { encodeCheckMessage, encodeProcessMessage } from '#core/messages';
import type { JobQueue } from '#core/ports';

/** SQS allows a message to be delayed by at most 15 minutes. */
const MAX_DELAY_SECONDS = 900;

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
