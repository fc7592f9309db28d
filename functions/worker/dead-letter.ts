import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { recordDeadLetteredMessage, withJobMetrics } from '#aws/job-metrics';
import { awsServices } from '#aws/services';
import { logger } from '#commons/logger';
import { decodeWorkerMessage } from '#core/messages';
import { failAbandonedJob } from '#core/process-job';

const processor = new BatchProcessor(EventType.SQS);

async function processRecord(record: SQSRecord): Promise<void> {
  recordDeadLetteredMessage();
  const { config, finishingJobs } = awsServices();
  let jobId: string | undefined;
  try {
    jobId = decodeWorkerMessage(record.body, config.transcribeJobPrefix)?.jobId;
  } catch {
    jobId = undefined;
  }
  if (!jobId) {
    // Not about one of our jobs: nothing to put in error. Logged for the operator, whom the DLQ alarm has called.
    logger.error('Dead-lettered message names no job of this deployment', { messageId: record.messageId });
    return;
  }
  const failed = await failAbandonedJob(withJobMetrics(finishingJobs), jobId);
  logger.error('Job given up after repeated failures', { jobId, markedError: failed });
}

/** Consumes the dead-letter queue: every job whose message ends there is put in `error`. */
export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  return processPartialResponse(event, processRecord, processor, {
    ...(context ? { context } : {}),
    throwOnFullBatchFailure: false,
  });
}
