import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { recordDeadLetteredMessage, withJobMetrics } from '#aws/job-metrics';
import { awsServices } from '#aws/services';
import { logger } from '#commons/logger';
import { decodeWorkerMessage, type WorkerMessage } from '#core/messages';
import { failAbandonedJob } from '#core/process-job';

const processor = new BatchProcessor(EventType.SQS);

async function processRecord(record: SQSRecord): Promise<void> {
  recordDeadLetteredMessage();
  const { config, finishingJobs } = awsServices();
  let message: WorkerMessage | undefined;
  try {
    message = decodeWorkerMessage(record.body, config.transcribeJobPrefix);
  } catch {
    message = undefined;
  }
  if (!message) {
    // Not about one of our jobs: nothing to put in error. Logged for the operator, whom the DLQ alarm has called.
    logger.error('Dead-lettered message names no job of this deployment', { messageId: record.messageId });
    return;
  }
  const failed = await failAbandonedJob(withJobMetrics(finishingJobs), message);
  logger.error('Job given up after repeated failures', {
    jobId: message.jobId,
    ...(message.kind === 'chunk' ? { chunk: message.index } : {}),
    markedError: failed,
  });
}

/** Consumes the dead-letter queue: every job whose message ends there is put in `error`. */
export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  return processPartialResponse(event, processRecord, processor, {
    ...(context ? { context } : {}),
    throwOnFullBatchFailure: false,
  });
}
