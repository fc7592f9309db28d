import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

export type SqsHandler = (event: SQSEvent) => Promise<SQSBatchResponse | undefined>;

export interface PollerOptions {
  sqs: SQSClient;
  queueUrl: string;
  handler: SqsHandler;
  batchSize: number;
  /** Handler invocations running at once, like Lambda's concurrency for the event source. */
  concurrency: number;
  region: string;
  onError?: (error: unknown) => void;
}

/**
 * What Lambda's SQS event source mapping does: receive batches, invoke the handler with an SQS event,
 * delete the messages it did not report as failed. Failed messages reappear after the visibility
 * timeout, and the queue's redrive policy moves them to the dead-letter queue.
 */
export class QueuePoller {
  private running = false;
  private loops: Promise<void>[] = [];
  private queueArn = '';

  constructor(private readonly options: PollerOptions) {}

  async start(): Promise<void> {
    const { Attributes } = await this.options.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: this.options.queueUrl, AttributeNames: ['QueueArn'] }),
    );
    this.queueArn = Attributes?.QueueArn ?? '';
    this.running = true;
    this.loops = Array.from({ length: this.options.concurrency }, () => this.loop());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        await this.pollOnce();
      } catch (error) {
        this.options.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  private async pollOnce(): Promise<void> {
    const { sqs, queueUrl, batchSize, handler } = this.options;
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: batchSize,
        // Short waits so that stop() returns promptly.
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return;

    const records = Messages.map((message) => this.toRecord(message));
    let failed: Set<string>;
    try {
      const response = await handler({ Records: records });
      failed = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
    } catch (error) {
      // A handler that throws fails the whole batch, as on Lambda.
      this.options.onError?.(error);
      failed = new Set(records.map((record) => record.messageId));
    }
    const done = records.filter((record) => !failed.has(record.messageId));
    if (done.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: done.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
        }),
      );
    }
  }

  private toRecord(message: Message): SQSRecord {
    const attributes = message.Attributes ?? {};
    return {
      messageId: message.MessageId ?? '',
      receiptHandle: message.ReceiptHandle ?? '',
      body: message.Body ?? '',
      attributes: {
        ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
        SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
        SenderId: attributes.SenderId ?? 'local',
        ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: message.MD5OfBody ?? '',
      eventSource: 'aws:sqs',
      eventSourceARN: this.queueArn,
      awsRegion: this.options.region,
    };
  }
}
