import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { readAwsConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import { logger } from '#commons/logger';
import { decodeWorkerMessage } from '#core/messages';
import { handleWorkerMessage, type ProcessDeps } from '#core/process-job';
import { WORKER_TIMEOUT_SECONDS } from '#core/resources';
import { createSummarizer, createTranscriber } from './engines.ts';

const processor = new BatchProcessor(EventType.SQS);
let deps: ProcessDeps | undefined;

function processDeps(): ProcessDeps {
  if (!deps) {
    const config = readAwsConfig();
    const { jobs, media, queue } = awsServices();
    deps = {
      jobs,
      media,
      queue,
      transcriber: createTranscriber(config, media),
      summarizer: createSummarizer(config),
      leaseMs: WORKER_TIMEOUT_SECONDS * 1000,
      enginePrefix: config.transcribeJobPrefix,
    };
  }
  return deps;
}

async function processRecord(record: SQSRecord): Promise<void> {
  const message = decodeWorkerMessage(record.body);
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
 * SQS-triggered worker. Messages start jobs, check on jobs an engine has, or carry the engine's
 * completion events; failed messages are reported for redelivery.
 */
export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  return processPartialResponse(event, processRecord, processor, {
    ...(context ? { context } : {}),
    processInParallel: false,
    throwOnFullBatchFailure: false,
  });
}
