import {
  ChangeMessageVisibilityCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { encodeCheckMessage, encodeChunkMessage, encodeProcessMessage } from '#core/messages';
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

  /** Ten messages a request, SQS's batch limit; a batch entry that failed is an error, so that the caller retries. */
  async enqueueChunks(jobId: string, indexes: number[]): Promise<void> {
    for (let from = 0; from < indexes.length; from += 10) {
      const batch = indexes.slice(from, from + 10);
      const { Failed = [] } = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((index) => ({
            Id: String(index),
            MessageBody: encodeChunkMessage(jobId, index),
          })),
        }),
      );
      if (Failed.length > 0) {
        throw new Error(
          `${Failed.length} chunk messages of job ${jobId} were not sent: ${Failed[0]?.Message}`,
        );
      }
    }
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
