import { mkdir, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { handler as authorizer } from '#api/authorizer';
import { handler as consolePage } from '#api/console';
import { handler as exportTranscript } from '#api/export';
import { handler as list } from '#api/list';
import { handler as status } from '#api/status';
import { handler as submit } from '#api/submit';
import { createSqsClient } from '#aws/clients';
import { readAwsConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import { createApiKey } from '#core/api-keys';
import { API_ROUTES, type ApiHandlerName, MAX_DIRECT_UPLOAD_BYTES, RESOURCES } from '#core/resources';
import { handler as deadLetter } from '#worker/dead-letter';
import { handler as transcribeJob } from '#worker/transcribe-job';
import { startEmulators } from './emulators.ts';
import { createGateway, type ProxyHandler } from './gateway.ts';
import { QueuePoller } from './poller.ts';
import { createResources } from './resources.ts';

export const LOCAL_TENANT = 'local';

const handlers: Record<ApiHandlerName, ProxyHandler> = {
  submit,
  status,
  export: exportTranscript,
  list,
  console: consolePage,
};
/**
 * Where a running local runtime tells other commands (`npm run keys -- --local`) its endpoints;
 * LOCAL_RUNTIME_FILE moves it, for runtimes side by side.
 */
export const RUNTIME_FILE =
  process.env.LOCAL_RUNTIME_FILE ??
  join(dirname(fileURLToPath(import.meta.url)), '..', '.local', 'runtime.json');

export interface LocalRuntimeOptions {
  port: number;
  apiKey?: string;
  /** Worker invocations at once; one per core by default. */
  workerConcurrency?: number;
  /** Overrides the queue's visibility timeout, so that retries can be seen locally. */
  visibilityTimeoutSeconds?: number;
  log?: (line: string) => void;
}

export interface LocalRuntime {
  url: string;
  apiKey: string;
  stop(): Promise<void>;
}

/**
 * Everything the stack runs, on this machine: emulators, resources, the API behind a local gateway,
 * and pollers that feed the worker and the dead-letter handler.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const log = options.log ?? ((line: string) => console.log(line));
  const emulators = await startEmulators();
  const stops: (() => Promise<void>)[] = [() => emulators.stop()];
  const stop = async () => {
    for (const step of stops.reverse()) await step().catch(() => undefined);
    await rm(RUNTIME_FILE, { force: true });
  };

  try {
    // The handlers read their configuration from the environment, as on Lambda.
    Object.assign(process.env, {
      DYNAMODB_ENDPOINT: emulators.endpoints.dynamodb,
      S3_ENDPOINT: emulators.endpoints.s3,
      SQS_ENDPOINT: emulators.endpoints.sqs,
      LOCAL_MODE: 'true',
    });
    const queues = await createResources(readAwsConfig(), {
      ...(options.visibilityTimeoutSeconds
        ? { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds }
        : {}),
    });
    process.env.JOBS_QUEUE_URL = queues.jobsQueueUrl;
    const config = readAwsConfig();

    const { key } = await createApiKey(awsServices().apiKeys, {
      tenantId: LOCAL_TENANT,
      label: 'local runtime',
      now: new Date(),
      ...(options.apiKey ? { key: options.apiKey } : {}),
    });

    const sqs = createSqsClient(config);
    const onError = (error: unknown) =>
      log(`poller: ${error instanceof Error ? error.message : String(error)}`);
    const workers = new QueuePoller({
      sqs,
      queueUrl: queues.jobsQueueUrl,
      handler: transcribeJob,
      batchSize: RESOURCES.jobsQueue.batchSize,
      concurrency: options.workerConcurrency ?? availableParallelism(),
      region: config.region,
      onError,
    });
    const deadLetters = new QueuePoller({
      sqs,
      queueUrl: queues.deadLetterQueueUrl,
      handler: deadLetter,
      batchSize: 10,
      concurrency: 1,
      region: config.region,
      onError,
    });
    await workers.start();
    stops.push(() => workers.stop());
    await deadLetters.start();
    stops.push(() => deadLetters.stop());

    let ready = false;
    const server = createGateway({
      routes: API_ROUTES.map((route) => ({ ...route, handler: handlers[route.handler] })),
      authorizer,
      maxBodyBytes: MAX_DIRECT_UPLOAD_BYTES,
      stage: 'v1-beta',
      health: () => ready,
      log,
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, '127.0.0.1', resolve);
    });
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    );
    const { port } = server.address() as AddressInfo;

    await mkdir(dirname(RUNTIME_FILE), { recursive: true });
    await writeFile(
      RUNTIME_FILE,
      JSON.stringify({ endpoints: emulators.endpoints, pid: process.pid }, null, 2),
    );
    ready = true;
    return { url: `http://localhost:${port}`, apiKey: key, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
