import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { encodeJobMessage } from '#core/messages';
import type { JobQueue } from '#core/ports';

/** The SQS queue that triggers the worker. */
export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(jobId: string): Promise<void> {
    await this.client.send(
      new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: encodeJobMessage(jobId) }),
    );
  }
}
