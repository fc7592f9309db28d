import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import type { WebhookAttempt, WebhookQueue } from '#core/ports';

/** SQS delays a message by at most 15 minutes. */
const MAX_DELAY_SECONDS = 900;

const attemptMessage = z
  .object({
    jobId: z.string().min(1).max(128),
    attempt: z.number().int().positive(),
    notBefore: z.iso.datetime().optional(),
  })
  .strict();

/** A webhook attempt as its queue message carries it; throws for anything else. */
export function decodeWebhookAttempt(body: string): WebhookAttempt {
  const { notBefore, ...attempt } = attemptMessage.parse(JSON.parse(body));
  return notBefore ? { ...attempt, notBefore } : attempt;
}

/** The SQS queue of webhook attempts, which triggers the webhook function. */
export class SqsWebhookQueue implements WebhookQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(attempt: WebhookAttempt, delaySeconds: number): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(attempt),
        DelaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.round(delaySeconds))),
      }),
    );
  }
}
