import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { SQSBatchResponse } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqsClient } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import { ENV } from '#commons/contract';
import { QueuePoller } from '#local/poller';
import type { LocalQueues } from '#local/provision';
import { useFreshResources } from '#test/helpers/fresh-resources';
import {
  type InvocationResult,
  type LambdaRuntimeApi,
  startLambdaRuntimeApi,
} from '#test/helpers/lambda-runtime-api';
import { findSample, SAMPLES_DIR } from '#test/helpers/samples';
import { submitSample } from '#test/helpers/submissions';
import { buildWorkerTaskRoot, imageNodeBinDir } from '#test/helpers/worker-image';
import { WORKER_IMAGE } from '#worker/image-settings';

/**
 * The worker image without a Docker daemon: the image's build script builds a task root on this host
 * (Debian bookworm, like the image), which is then started as Lambda starts the image: its ENTRYPOINT
 * with its CMD, LAMBDA_TASK_ROOT set, the runtime client polling a stand-in for the Lambda Runtime
 * API, and the function's environment as the stack sets it.
 */

let queues: LocalQueues;
let taskRoot: string;
let nodeBin: string;
let runtimeApi: LambdaRuntimeApi;
let runtime: ChildProcess;
let runtimeOutput = '';

const utterance = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);

beforeAll(async () => {
  taskRoot = await buildWorkerTaskRoot();
  nodeBin = imageNodeBinDir();
  queues = await useFreshResources();
  runtimeApi = await startLambdaRuntimeApi();
  const functionName = 'transcription-worker';
  const environment: NodeJS.ProcessEnv = {
    PATH: `${nodeBin}:${process.env.PATH ?? ''}`,
    TZ: ':UTC',
    // What Lambda defines for every function (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime).
    AWS_LAMBDA_RUNTIME_API: runtimeApi.address,
    LAMBDA_TASK_ROOT: taskRoot,
    // Lambda may set the reserved _HANDLER empty for an image: the entry point must take CMD instead.
    _HANDLER: '',
    AWS_LAMBDA_FUNCTION_NAME: functionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '4096',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${functionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: 'worker-image-test',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    // The image's ENV.
    NODE_OPTIONS: '--enable-source-maps',
    // The function's environment, as the stack's bind* helpers set it, with the emulators' endpoints.
    [ENV.engine]: 'sphinx',
    [ENV.summarizer]: 'local',
    [ENV.serviceName]: functionName,
    [ENV.logLevel]: 'WARN',
    [ENV.metricsNamespace]: 'WorkerImageTest',
    ...Object.fromEntries(
      [
        ENV.jobsTable,
        ENV.apiKeysTable,
        ENV.mediaBucket,
        ENV.jobsQueueUrl,
        ENV.dynamodbEndpoint,
        ENV.s3Endpoint,
        ENV.sqsEndpoint,
      ].map((name) => [name, process.env[name]]),
    ),
  };
  runtime = spawn(join(taskRoot, WORKER_IMAGE.entrypoint), [WORKER_IMAGE.handler], {
    cwd: '/',
    env: environment,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  runtime.stdout?.on('data', (chunk) => {
    runtimeOutput += chunk;
  });
  runtime.stderr?.on('data', (chunk) => {
    runtimeOutput += chunk;
  });
}, 20 * 60_000);

afterAll(async () => {
  if (runtime && runtime.exitCode === null) {
    const exited = new Promise((resolve) => runtime.once('exit', resolve));
    runtime.kill('SIGTERM');
    await exited;
  }
  await runtimeApi?.close();
});

/** Receives the job's real message from the emulated queue and hands it to the runtime, as Lambda's poller does. */
async function deliverThroughRuntime(): Promise<InvocationResult[]> {
  const results: InvocationResult[] = [];
  const poller = new QueuePoller({
    sqs: createSqsClient(readServiceConfig()),
    queueUrl: queues.jobsQueueUrl,
    batchSize: 1,
    concurrency: 1,
    region: 'us-east-1',
    handler: async (event) => {
      const result = await runtimeApi.invoke(event, 180_000);
      results.push(result);
      if (result.outcome === 'error') throw new Error(JSON.stringify(result.payload));
      return result.payload as SQSBatchResponse;
    },
  });
  await poller.start();
  const deadline = Date.now() + 180_000;
  while (results.length === 0 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 200));
  await poller.stop();
  return results;
}

describe('the worker image, started as Lambda starts it', () => {
  it('loads the handler from CMD and completes a queued job from its real SQS event', async () => {
    // Speaker diarization loads Silero VAD through onnxruntime-node: the packages beside the bundle.
    const jobId = await submitSample(utterance, 'tenant-image', { speaker_diarization: 'true' });
    const [result] = await deliverThroughRuntime();

    expect(runtimeApi.initError(), runtimeOutput).toBeUndefined();
    expect(result, runtimeOutput).toEqual({ outcome: 'response', payload: { batchItemFailures: [] } });
    const job = await awsServices().jobs.get(jobId);
    expect(job?.status, runtimeOutput).toBe('completed');
    const transcript = await awsServices().media.getResult(job?.resultKey ?? '');
    expect(transcript.engine).toBe('sphinx');
    expect(transcript.words.length).toBeGreaterThan(3);
    expect(transcript.words.every((word) => word.speaker)).toBe(true);
    // The job's outcome metric, in CloudWatch's embedded metric format on the function's stdout.
    const emf = runtimeOutput
      .split('\n')
      .filter((line) => line.includes('"_aws"'))
      .map((line) => JSON.parse(line.slice(line.indexOf('{'))));
    expect(emf).toContainEqual(
      expect.objectContaining({ JobsEnded: 1, outcome: 'completed', service: 'transcription' }),
    );
  });

  it('starts with engine whisper: the bundle loads the whisper binding compiled for the image, and checks the model', () => {
    const start = (model: string) =>
      spawnSync(
        join(nodeBin, 'node'),
        ['--input-type=module', '-e', `await import(${JSON.stringify(join(taskRoot, 'handler.mjs'))})`],
        {
          env: { PATH: process.env.PATH, [ENV.engine]: 'whisper', [ENV.whisperModel]: model },
          encoding: 'utf8',
        },
      );
    const testModel = join(SAMPLES_DIR, '..', 'models', 'for-tests-ggml-tiny.en.bin');
    const good = start(testModel);
    expect(good.status, good.stderr).toBe(0);
    const missing = start(join(taskRoot, 'models', 'ggml-base.en.bin'));
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('does not exist');
  });

  it('reports an invocation error to the Runtime API for an event that is not an SQS batch', async () => {
    const result = await runtimeApi.invoke({ hello: 'world' }, 60_000);
    expect(result.outcome).toBe('error');
    expect(runtime.exitCode).toBeNull();
  });
});
