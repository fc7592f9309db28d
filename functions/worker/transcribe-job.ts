import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { awsServices } from '#aws/services';
import { logger } from '#commons/logger';
import { decodeJobMessage } from '#core/messages';
import { type ProcessDeps, processJob } from '#core/process-job';
import { WORKER_TIMEOUT_SECONDS } from '#core/resources';
import { createTranscriber } from './transcriber.ts';

const processor = new BatchProcessor(EventType.SQS);
let deps: ProcessDeps | undefined;

function processDeps(): ProcessDeps {
  if (!deps) {
    const { jobs, media } = awsServices();
    deps = { jobs, media, transcriber: createTranscriber(), leaseMs: WORKER_TIMEOUT_SECONDS * 1000 };
  }
  return deps;
}

async function processRecord(record: SQSRecord): Promise<void> {
  const jobId = decodeJobMessage(record.body);
  try {
    const outcome = await processJob(processDeps(), jobId);
    logger.info('Job processed', { jobId, outcome });
  } catch (error) {
    logger.warn('Job processing failed; the message will be retried', {
      jobId,
      receiveCount: record.attributes.ApproximateReceiveCount,
      error,
    });
    throw error;
  }
}

/** SQS-triggered worker: each message names a job; failed messages are reported for redelivery. */
export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  return processPartialResponse(event, processRecord, processor, {
    ...(context ? { context } : {}),
    processInParallel: false,
    throwOnFullBatchFailure: false,
  });
}
