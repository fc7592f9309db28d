import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { readServiceConfig } from '#aws/config';
import { recordWorkerFailures, withJobMetrics } from '#aws/job-metrics';
import { awsServices } from '#aws/services';
import { logger } from '#commons/logger';
import { decodeWorkerMessage } from '#core/messages';
import { handleWorkerMessage, type ProcessDeps, RetryLater, retryDelaySeconds } from '#core/process-job';
import { UrlAudioFetcher } from './audio-fetcher.ts';
import { checkEngineSetup, createSummarizer, createTranscriber } from './transcribers.ts';

// Lambda runs this once per container, before any message: a missing or corrupt whisper model fails
// the start with its message instead of every job (the environment is only read here; the AWS
// clients are made on the first message, after the local runtime has set their endpoints).
checkEngineSetup(readServiceConfig());

let deps: ProcessDeps | undefined;

function processDeps(): ProcessDeps {
  if (!deps) {
    const { config, finishingJobs, media, queue } = awsServices();
    deps = {
      jobs: withJobMetrics(finishingJobs, { engine: config.engine }),
      media,
      queue,
      transcriber: createTranscriber(config, media),
      summarizer: createSummarizer(config),
      fetcher: new UrlAudioFetcher(config.localMode),
      clock: () => new Date(),
      timings: config.timings,
    };
  }
  return deps;
}

async function processRecord(record: SQSRecord, deps: ProcessDeps): Promise<void> {
  const { config, queue } = awsServices();
  const receiveCount = Number(record.attributes.ApproximateReceiveCount) || 1;
  let message: ReturnType<typeof decodeWorkerMessage>;
  try {
    message = decodeWorkerMessage(record.body, config.transcribeJobPrefix);
  } catch (error) {
    // No attempt will understand it: it goes to the dead-letter queue, kept for the operator, after
    // the same bounded retries as any failure (never logged whole: it could hold anything).
    logger.error('A message is not a worker message', { messageId: record.messageId, receiveCount });
    await queue.hideMessage(record.receiptHandle, retryDelaySeconds(config.timings, receiveCount));
    throw error;
  }
  if (!message) return; // An Amazon Transcribe event about another deployment's job.
  const started = performance.now();
  try {
    const { outcome, bug, assemblyMs, transcriptionMs } = await handleWorkerMessage(deps, message, {
      receiveCount,
      hide: (seconds) => queue.hideMessage(record.receiptHandle, seconds),
    });
    if (bug) logger.error('An unexpected error ended the job', { workerMessage: message, error: bug });
    // The time is what the benchmark reads to cost a chunk; Lambda's REPORT line covers the whole batch.
    logger.info('Message handled', {
      workerMessage: message,
      outcome,
      ms: Math.round(performance.now() - started),
      ...(assemblyMs === undefined ? {} : { assemblyMs }),
      ...(transcriptionMs === undefined ? {} : { transcriptionMs }),
    });
  } catch (error) {
    const retry = error instanceof RetryLater ? error : undefined;
    logger.warn('Message failed; it will be retried', {
      workerMessage: message,
      receiveCount,
      retryInSeconds: retry?.delaySeconds,
      error: retry?.cause ?? error,
    });
    throw error;
  }
}

/** A worker over the given dependencies (tests give their own transcriber or faulty adapters). */
export function createWorkerHandler(
  dependencies: () => ProcessDeps,
): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  const processor = new BatchProcessor(EventType.SQS);
  return async (event, context) => {
    const response = await processPartialResponse(
      event,
      (record: SQSRecord) => processRecord(record, dependencies()),
      processor,
      { ...(context ? { context } : {}), processInParallel: false, throwOnFullBatchFailure: false },
    );
    recordWorkerFailures(response.batchItemFailures.length);
    return response;
  };
}

/**
 * SQS-triggered worker. Messages start jobs, check on jobs handed to Amazon Transcribe, or carry its
 * completion events; failed messages are reported for redelivery after the backoff they were given.
 */
export const handler = createWorkerHandler(processDeps);
