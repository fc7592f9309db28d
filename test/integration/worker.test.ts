import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSqsClient } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import type { Job } from '#core/job';
import { encodeProcessMessage } from '#core/messages';
import { QueuePoller, type SqsHandler } from '#local/poller';
import type { LocalQueues } from '#local/provision';
import { sqsEvent } from '#test/helpers/events';
import { eventually } from '#test/helpers/eventually';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { testLease } from '#test/helpers/memory-ports';
import { findSample, type Sample } from '#test/helpers/samples';
import { submitSample } from '#test/helpers/submissions';
import { UrlAudioFetcher } from '#worker/audio-fetcher';
import { handler as deadLetter } from '#worker/dead-letter';
import { createWorkerHandler, handler as worker } from '#worker/handler';
import { createSummarizer, createTranscriber } from '#worker/transcribers';

let queues: LocalQueues;
beforeAll(async () => {
  // A short visibility timeout so that redelivery happens within the test.
  queues = await useFreshResources({ visibilityTimeoutSeconds: 1 });
});

const utterance = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);
const undecodable = findSample(
  (sample) => sample.kind === 'bad' && sample.expect === 'error' && (sample.size_bytes ?? 0) > 0,
);

async function submitted(sample: Sample, fields: Record<string, string> = {}): Promise<Job> {
  const job = await awsServices().jobs.get(await submitSample(sample, 'tenant-w', fields));
  if (!job) throw new Error('job not stored');
  return job;
}

function poller(queueUrl: string, handler: SqsHandler): QueuePoller {
  return new QueuePoller({
    sqs: createSqsClient(readServiceConfig()),
    queueUrl,
    handler,
    batchSize: 1,
    concurrency: 1,
    region: 'us-east-1',
  });
}

describe('worker', () => {
  it('transcribes a queued job, stores the result in S3 and completes the job', async () => {
    const job = await submitted(utterance, { punctuate: 'false' });
    const response = await worker(sqsEvent([encodeProcessMessage(job.id)]));
    expect(response.batchItemFailures).toEqual([]);

    const done = await awsServices().jobs.get(job.id);
    expect(done).toMatchObject({ status: 'completed', resultKey: `results/tenant-w/${job.id}.json` });
    expect(done).not.toHaveProperty('leaseExpiresAt');
    const result = await awsServices().media.getResult(done?.resultKey ?? '');
    expect(result.engine).toBe('sphinx');
    expect(result.words.length).toBeGreaterThan(3);
    expect(result.transcript).toBe(result.transcript.toLowerCase());
    expect(done?.audio_duration_ms).toBe(result.audio_duration_ms);
  });

  it('runs the whisper engine when configured with it: the job completes naming it', async () => {
    // whisper.cpp's test model: untrained weights, so no words (see test/speech/whisper.test.ts).
    const model = join(
      dirname(fileURLToPath(import.meta.url)),
      '..',
      '..',
      '..',
      'shared',
      'models',
      'for-tests-ggml-tiny.en.bin',
    );
    const { jobs, media, queue, config } = awsServices();
    const whisperConfig = { ...config, engine: 'whisper' as const, whisperModel: model };
    const whisperWorker = createWorkerHandler(() => ({
      jobs,
      media,
      queue,
      transcriber: createTranscriber(whisperConfig, media),
      summarizer: createSummarizer(whisperConfig),
      fetcher: new UrlAudioFetcher(true),
      clock: () => new Date(),
      timings: config.timings,
    }));
    const job = await submitted(utterance);
    expect((await whisperWorker(sqsEvent([encodeProcessMessage(job.id)]))).batchItemFailures).toEqual([]);
    const done = await awsServices().jobs.get(job.id);
    expect(done?.status).toBe('completed');
    const result = await awsServices().media.getResult(done?.resultKey ?? '');
    expect(result).toMatchObject({ engine: 'whisper', transcript: '', words: [] });
    expect(result.audio_duration_ms).toBe(done?.audio_duration_ms);
  });

  it('ends a job whose file cannot be decoded in error, without retrying', async () => {
    const job = await submitted(undecodable);
    const response = await worker(sqsEvent([encodeProcessMessage(job.id)]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await awsServices().jobs.get(job.id)).toMatchObject({
      status: 'error',
      error: { code: 'unsupported_media', message: expect.any(String) },
    });
  });

  it('never runs a finished job again when its message is delivered twice', async () => {
    const job = await submitted(utterance);
    await worker(sqsEvent([encodeProcessMessage(job.id)]));
    const first = await awsServices().jobs.get(job.id);
    const again = await worker(sqsEvent([encodeProcessMessage(job.id)], 2));
    expect(again.batchItemFailures).toEqual([]);
    expect(await awsServices().jobs.get(job.id)).toEqual(first);
  });

  it("drops a message for a job another live worker holds: that worker's own message covers the job", async () => {
    const job = await submitted(utterance);
    const { jobs } = awsServices();
    await jobs.claim(job.id, testLease(60_000));
    const busy = await worker(sqsEvent([encodeProcessMessage(job.id)]));
    expect(busy.batchItemFailures).toEqual([]);
    expect(await jobs.get(job.id)).toMatchObject({ status: 'processing', leaseOwner: 'test-worker' });
  });

  it('takes over a job whose worker died, once its lease has run out', async () => {
    const job = await submitted(utterance);
    const { jobs } = awsServices();
    // Claimed two hours ago for one minute by a worker that never finished.
    await jobs.claim(job.id, testLease(60_000, new Date(Date.now() - 7_200_000)));
    const response = await worker(sqsEvent([encodeProcessMessage(job.id)], 2));
    expect(response.batchItemFailures).toEqual([]);
    expect((await jobs.get(job.id))?.status).toBe('completed');
  });

  it('reports a message that is not a job message as failed, so that it is kept for the dead-letter queue', async () => {
    const response = await worker(sqsEvent(['{"hello":1}']));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'message-0' }]);
  });

  it('retries a transient failure through SQS redelivery and completes the job', async () => {
    const job = await submitted(utterance);
    let calls = 0;
    const flaky: SqsHandler = async (event) => {
      calls += 1;
      if (calls === 1) throw new Error('transient: connection reset');
      return worker(event);
    };
    const jobsPoller = poller(queues.jobsQueueUrl, flaky);
    await jobsPoller.start();
    try {
      const done = await eventually(
        () => awsServices().jobs.get(job.id),
        (value) => value?.status === 'completed',
      );
      expect(done?.status).toBe('completed');
      expect(calls).toBeGreaterThanOrEqual(2);
    } finally {
      await jobsPoller.stop();
    }
  });

  it('puts the job of a message that keeps failing in error through the dead-letter queue', async () => {
    const job = await submitted(utterance);
    const crashing: SqsHandler = async () => {
      throw new Error('worker crashed');
    };
    const jobsPoller = poller(queues.jobsQueueUrl, crashing);
    const deadLetterPoller = poller(queues.deadLetterQueueUrl, deadLetter);
    await jobsPoller.start();
    await deadLetterPoller.start();
    try {
      const failed = await eventually(
        () => awsServices().jobs.get(job.id),
        (value) => value?.status === 'error',
      );
      expect(failed).toMatchObject({ status: 'error', error: { code: 'transcription_failed' } });
    } finally {
      await jobsPoller.stop();
      await deadLetterPoller.stop();
    }
  });
});
