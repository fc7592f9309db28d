import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { recordWorkerFailures, withJobMetrics } from '#aws/job-metrics';
import { awsServices } from '#aws/services';
import { WORKER_TIMEOUT_SECONDS } from '#commons/contract';
import { logger } from '#commons/logger';
import { decodeWorkerMessage } from '#core/messages';
import { handleWorkerMessage, type ProcessDeps } from '#core/process-job';
import { createSummarizer, createTranscriber } from './transcribers.ts';

const processor = new BatchProcessor(EventType.SQS);
let deps: ProcessDeps | undefined;

function processDeps(): ProcessDeps {
  if (!deps) {
    const { config, jobs, media, queue } = awsServices();
    deps = {
      jobs: withJobMetrics(jobs, { engine: config.engine }),
      media,
      queue,
      transcriber: createTranscriber(config, media),
      summarizer: createSummarizer(config),
      leaseMs: WORKER_TIMEOUT_SECONDS * 1000,
      clock: () => new Date(),
    };
  }
  return deps;
}

async function processRecord(record: SQSRecord): Promise<void> {
  const message = decodeWorkerMessage(record.body, awsServices().config.transcribeJobPrefix);
  if (!message) return; // An Amazon Transcribe event about another deployment's job.
  try {
    const outcome = await handleWorkerMessage(processDeps(), message);
    logger.info('Message handled', { workerMessage: message, outcome });
  } catch (error) {
    logger.warn('Message failed; it will be retried', {
      workerMessage: message,
      receiveCount: record.attributes.ApproximateReceiveCount,
      error,
    });
    throw error;
  }
}

/**
 * SQS-triggered worker. Messages start jobs, check on jobs handed to Amazon Transcribe, or carry its
 * completion events; failed messages are reported for redelivery.
 */
export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  const response = await processPartialResponse(event, processRecord, processor, {
    ...(context ? { context } : {}),
    processInParallel: false,
    throwOnFullBatchFailure: false,
  });
  recordWorkerFailures(response.batchItemFailures.length);
  return response;
}
