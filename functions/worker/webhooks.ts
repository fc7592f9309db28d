import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { awsServices } from '#aws/services';
import { decodeWebhookAttempt } from '#aws/webhook-queue';
import { WEBHOOK_TIMEOUT_MS } from '#commons/contract';
import { logger } from '#commons/logger';
import { deliverWebhook, type WebhookDeps } from '#core/webhooks';
import { HttpWebhookSender } from './webhook-sender.ts';

/** The adapters of this function's environment; public addresses only, outside local mode. */
export function defaultWebhookDeps(): WebhookDeps {
  const { config, jobs, webhooks, webhookSecrets } = awsServices();
  return {
    jobs,
    secrets: webhookSecrets,
    queue: webhooks,
    sender: new HttpWebhookSender(config.localMode, WEBHOOK_TIMEOUT_MS),
    clock: () => new Date(),
    statusUrl: (jobId) =>
      new URL(`v1-beta/transcript/status?${new URLSearchParams({ id: jobId })}`, config.publicApiUrl).href,
  };
}

let deps: WebhookDeps | undefined;

/** A webhook function over the given dependencies (tests give their own sender, clock or pacing). */
export function createWebhookHandler(
  dependencies: () => WebhookDeps,
): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  const processor = new BatchProcessor(EventType.SQS);
  const processRecord = async (record: SQSRecord) => {
    let attempt: ReturnType<typeof decodeWebhookAttempt>;
    try {
      attempt = decodeWebhookAttempt(record.body);
    } catch (error) {
      // Never sent by this service: retried, then kept in the dead-letter queue for the operator.
      logger.error('A message is not a webhook attempt', { messageId: record.messageId });
      throw error;
    }
    const outcome = await deliverWebhook(dependencies(), attempt);
    logger.info('Webhook attempt', { ...attempt, outcome });
  };
  return (event, context) =>
    processPartialResponse(event, processRecord, processor, {
      ...(context ? { context } : {}),
      throwOnFullBatchFailure: false,
    });
}

/**
 * SQS-triggered webhook delivery, a small function apart from the worker: one message per attempt;
 * a failed attempt sends the next one with its delay. Receivers' failures are recorded on the job, so
 * that a message fails only when the service itself does (then SQS retries it).
 */
export const handler = createWebhookHandler(() => {
  deps ??= defaultWebhookDeps();
  return deps;
});
