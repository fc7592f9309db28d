import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import {
  GetTranscriptionJobCommand,
  StartTranscriptionJobCommand,
  TranscribeClient,
} from '@aws-sdk/client-transcribe';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmazonTranscribe } from '#aws/amazon-transcribe';
import { createS3Client, createSqsClient } from '#aws/clients';
import { awsServices } from '#aws/services';
import { audioKey, ENV, QUEUED_DUE_MS, transcribeOutputKey } from '#commons/contract';
import { type Job, newJobId } from '#core/job';
import { encodeProcessMessage } from '#core/messages';
import type { SyncTranscriber } from '#core/ports';
import { CHECK_DUE_MS, handleWorkerMessage, type ProcessDeps } from '#core/process-job';
import { submitJob } from '#core/submit';
import { sweepJobs } from '#core/sweep';
import { QueuePoller, type SqsHandler } from '#local/poller';
import type { LocalQueues } from '#local/provision';
import { LocalTranscriber } from '#speech/local-transcriber';
import { SphinxRecognizer } from '#speech/sphinx';
import { LocalSummarizer } from '#speech/summarizer';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { findSample, samplePath } from '#test/helpers/samples';
import { submitSample } from '#test/helpers/submissions';
import { UrlAudioFetcher } from '#worker/audio-fetcher';
import { handler as deadLetter } from '#worker/dead-letter';
import { createWorkerHandler, handler as worker } from '#worker/handler';

/**
 * At-least-once delivery done right, against the emulators: whatever dies, repeats or races, every
 * job is transcribed and completed once, or ends in error, within a bounded time.
 */

const HEARTBEAT_SECONDS = 3;
let queues: LocalQueues;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Short heartbeats and no backoff, so that what takes minutes on AWS takes seconds here.
  process.env[ENV.heartbeatVisibilitySeconds] = String(HEARTBEAT_SECONDS);
  process.env[ENV.retryBaseSeconds] = '0';
  queues = await useFreshResources({ visibilityTimeoutSeconds: 30 });
});

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

const conversation = findSample((sample) => sample.kind === 'conversation');
const utterance = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);

/** Runs `work` while pollers feed the handlers, as Lambda's event sources would, then stops them. */
async function polling<T>(
  feeds: { queueUrl: string; handler: SqsHandler; concurrency?: number }[],
  work: () => Promise<T>,
): Promise<T> {
  const pollers = feeds.map(
    (feed) =>
      new QueuePoller({
        sqs: createSqsClient(awsServices().config),
        queueUrl: feed.queueUrl,
        handler: feed.handler,
        batchSize: 1,
        concurrency: feed.concurrency ?? 1,
        region: 'us-east-1',
      }),
  );
  await Promise.all(pollers.map((poller) => poller.start()));
  try {
    return await work();
  } finally {
    await Promise.all(pollers.map((poller) => poller.stop()));
  }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const job = (id: string) => awsServices().jobs.get(id);
const finished = (id: string) =>
  until(
    () => job(id),
    (value) => value?.status === 'completed' || value?.status === 'error',
  );

async function queueIsEmpty(queueUrl: string): Promise<boolean> {
  const { Attributes = {} } = await createSqsClient(awsServices().config).send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(Attributes.ApproximateNumberOfMessages) +
      Number(Attributes.ApproximateNumberOfMessagesNotVisible) ===
    0
  );
}

/** The real adapters with a recognizer that counts its runs. */
function countingDeps(): { deps: () => ProcessDeps; transcriptions: () => number } {
  let count = 0;
  const local = new LocalTranscriber(new SphinxRecognizer());
  const transcriber: SyncTranscriber = {
    mode: 'sync',
    transcribe: (input) => {
      count += 1;
      return local.transcribe(input);
    },
  };
  const deps = (): ProcessDeps => {
    const { jobs, media, queue, config } = awsServices();
    return {
      jobs,
      media,
      queue,
      transcriber,
      summarizer: new LocalSummarizer(),
      fetcher: new UrlAudioFetcher(true),
      clock: () => new Date(),
      timings: config.timings,
    };
  };
  return { deps, transcriptions: () => count };
}

describe('at-least-once delivery', () => {
  it('completes a job whose worker process was killed mid-job, once its heartbeats stop', async () => {
    const id = await submitSample(conversation, 'tenant-killed');
    // node itself, not the tsx launcher: the signal must reach the process that does the work.
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/worker-process.ts'], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const claimed = await until(
      () => job(id),
      (value) => value?.status === 'processing',
    );
    expect(claimed?.leaseOwner).toBeDefined();
    // Mid-job: claimed, audio fetched, the recognizer running.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const orphaned = await job(id);
    expect(orphaned?.status).toBe('processing');
    // Nothing else holds the job: it stays processing until the dead worker's message comes back.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await job(id))?.leaseOwner).toBe(orphaned?.leaseOwner);

    const done = await polling([{ queueUrl: queues.jobsQueueUrl, handler: worker }], async () => {
      const result = await finished(id);
      await until(() => queueIsEmpty(queues.jobsQueueUrl), Boolean);
      return result;
    });
    expect(done?.status).toBe('completed');
    expect(done?.leaseOwner).toBeUndefined();
    expect((await awsServices().media.getResult(done?.resultKey ?? '')).words.length).toBeGreaterThan(10);
    expect(await queueIsEmpty(queues.jobsQueueUrl)).toBe(true);
  });

  it('transcribes once when the same start message is delivered twice to two workers at once', async () => {
    const { deps, transcriptions } = countingDeps();
    const id = await submitSample(utterance, 'tenant-twice');
    const sqs = createSqsClient(awsServices().config);
    // The submission sent one; a second copy arrives as a redelivery or a duplicate send would.
    await sqs.send(
      new SendMessageCommand({ QueueUrl: queues.jobsQueueUrl, MessageBody: encodeProcessMessage(id) }),
    );
    await polling(
      [{ queueUrl: queues.jobsQueueUrl, handler: createWorkerHandler(deps), concurrency: 2 }],
      async () => {
        expect((await finished(id))?.status).toBe('completed');
        expect(await until(() => queueIsEmpty(queues.jobsQueueUrl), Boolean)).toBe(true);
      },
    );
    expect(transcriptions()).toBe(1);
  });

  it('lets exactly one of two workers racing on one job transcribe it', async () => {
    const { deps, transcriptions } = countingDeps();
    const id = await submitSample(utterance, 'tenant-race');
    const delivery = { receiveCount: 1, hide: async () => undefined };
    const outcomes = await Promise.all([
      handleWorkerMessage(deps(), { kind: 'process', jobId: id }, delivery),
      handleWorkerMessage(deps(), { kind: 'process', jobId: id }, delivery),
    ]);
    expect(outcomes.map((result) => result.outcome).sort()).toEqual(['busy', 'completed']);
    expect(transcriptions()).toBe(1);
    expect((await job(id))?.status).toBe('completed');
    // The submission's own start message, delivered now, finds the job finished.
    await polling([{ queueUrl: queues.jobsQueueUrl, handler: worker }], () =>
      until(() => queueIsEmpty(queues.jobsQueueUrl), Boolean),
    );
  });
});

describe('a crash between two writes', () => {
  it('submit: a job recorded whose start message was never sent is started by the sweeper', async () => {
    const { jobs, media, queue } = awsServices();
    // The process stopped right after recording the job: its start message was never sent.
    const lostQueue = Object.assign(Object.create(queue), { enqueue: async () => undefined });
    const id = newJobId();
    const key = audioKey('tenant-lost', id);
    const { bytes } = await media.putAudio(key, Readable.from([readFileSync(samplePath(utterance))]));
    await submitJob(
      { jobs, media, queue: lostQueue },
      { id, tenantId: 'tenant-lost', fields: {}, audio: { key, bytes }, now: new Date() },
    );
    expect(await queueIsEmpty(queues.jobsQueueUrl)).toBe(true);
    const later = () => new Date(Date.now() + QUEUED_DUE_MS + 1);
    expect((await sweepJobs({ jobs, queue, clock: later })).requeued).toContain(id);
    await polling([{ queueUrl: queues.jobsQueueUrl, handler: worker }], async () => {
      expect((await finished(id))?.status).toBe('completed');
    });
  });

  it('completion: a result stored whose job was not yet completed is completed by the retry', async () => {
    const { deps } = countingDeps();
    let crashes = 1;
    const crashing = (): ProcessDeps => {
      const base = deps();
      return {
        ...base,
        jobs: Object.assign(Object.create(base.jobs), {
          complete: async (...args: Parameters<typeof base.jobs.complete>) => {
            if (crashes-- > 0) throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
            return base.jobs.complete(...args);
          },
        }),
      };
    };
    const id = await submitSample(utterance, 'tenant-complete');
    const done = await polling(
      [{ queueUrl: queues.jobsQueueUrl, handler: createWorkerHandler(crashing) }],
      () => finished(id),
    );
    expect(done?.status).toBe('completed');
    expect(crashes).toBeLessThan(0);
  });

  it('Transcribe: a job handed off whose first check was never scheduled is checked by the sweeper', async () => {
    const transcribe = mockClient(TranscribeClient);
    try {
      transcribe.on(StartTranscriptionJobCommand).resolves({});
      transcribe
        .on(GetTranscriptionJobCommand)
        .resolves({ TranscriptionJob: { TranscriptionJobStatus: 'COMPLETED' } });
      const { jobs, media, queue, config } = awsServices();
      const transcriber = new AmazonTranscribe(new TranscribeClient({ region: 'us-east-1' }), media, {
        bucket: config.mediaBucket,
        transcribeJobPrefix: 'AtLeastOnce-',
      });
      const deps = (): ProcessDeps => ({
        ...countingDeps().deps(),
        transcriber,
      });
      const id = await submitSample(utterance, 'tenant-transcribe');
      const crashingQueue = Object.assign(Object.create(queue), {
        scheduleCheck: async () => {
          throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
        },
      });
      const started = await handleWorkerMessage(
        { ...deps(), queue: crashingQueue },
        { kind: 'process', jobId: id },
        { receiveCount: 1, hide: async () => undefined },
      ).catch((error) => error);
      expect(started.name).toBe('RetryLater');
      const handedOff = (await job(id)) as Job;
      expect(handedOff).toMatchObject({ status: 'processing', handedOffAt: expect.any(String) });
      // The start message comes back and finds the job with Transcribe: nothing would check on it.
      expect(
        (
          await handleWorkerMessage(
            deps(),
            { kind: 'process', jobId: id },
            { receiveCount: 2, hide: async () => undefined },
          )
        ).outcome,
      ).toBe('busy');

      const document = readFileSync(new URL('../fixtures/transcribe/mono.json', import.meta.url), 'utf8');
      await createS3Client(config).send(
        new PutObjectCommand({
          Bucket: config.mediaBucket,
          Key: transcribeOutputKey(handedOff.tenantId, id),
          Body: document,
        }),
      );
      const later = () => new Date(Date.now() + CHECK_DUE_MS + 1);
      expect((await sweepJobs({ jobs, queue, clock: later })).checked).toContain(id);
      await polling([{ queueUrl: queues.jobsQueueUrl, handler: createWorkerHandler(deps) }], async () => {
        expect((await finished(id))?.status).toBe('completed');
      });
    } finally {
      transcribe.restore();
    }
  });
});

describe('a poison message', () => {
  it('ends its job in error through the dead-letter queue after its bounded retries', async () => {
    const { deps } = countingDeps();
    const failing = (): ProcessDeps => {
      const base = deps();
      return {
        ...base,
        media: Object.assign(Object.create(base.media), {
          downloadToFile: async () => {
            throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
          },
        }),
      };
    };
    const id = await submitSample(utterance, 'tenant-poison');
    const failed = await polling(
      [
        { queueUrl: queues.jobsQueueUrl, handler: createWorkerHandler(failing) },
        { queueUrl: queues.deadLetterQueueUrl, handler: deadLetter },
      ],
      () => finished(id),
    );
    expect(failed).toMatchObject({ status: 'error', error: { code: 'transcription_failed' } });
  });
});
