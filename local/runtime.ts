import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { handler as audio } from '#api/audio';
import { handler as authorizer } from '#api/authorizer';
import { handler as consolePage } from '#api/console';
import { handler as deleteJob } from '#api/delete';
import { handler as exportTranscript } from '#api/export';
import { handler as list } from '#api/list';
import { handler as openapi } from '#api/openapi';
import { handler as reference } from '#api/reference';
import { handler as status } from '#api/status';
import { handler as submit } from '#api/submit';
import { handler as upload } from '#api/upload';
import { createSqsClient } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import { API_ROUTES, type ApiHandlerName, ENV, MAX_DIRECT_UPLOAD_BYTES, RESOURCES } from '#commons/contract';
import { createApiKey } from '#core/api-keys';
import { createWebhookSecret } from '#core/webhooks';
import { handler as deadLetter } from '#worker/dead-letter';
import { handler as worker } from '#worker/handler';
import { handler as sweep } from '#worker/sweeper';
import { handler as webhooks } from '#worker/webhooks';
import { freePort, startEmulators } from './emulators.ts';
import { createGateway, type ProxyHandler } from './gateway.ts';
import { QueuePoller } from './poller.ts';
import { createResources } from './provision.ts';
import type { LocalSettings } from './settings.ts';

const LOCAL_TENANT = 'local';

const handlers: Record<ApiHandlerName, ProxyHandler> = {
  submit,
  upload,
  status,
  export: exportTranscript,
  audio,
  delete: deleteJob,
  list,
  console: consolePage,
  openapi,
  reference,
};

export interface LocalRuntime {
  url: string;
  apiKey: string;
  /** The webhook signing secret of tenant `local`. */
  webhookSecret: string;
  stop(): Promise<void>;
}

/**
 * Everything the stack runs, on this machine: emulators, resources, the API behind a local gateway,
 * and pollers that feed the worker and the dead-letter handler.
 */
export async function startLocalRuntime(
  settings: LocalSettings,
  log: (line: string) => void = console.log,
): Promise<LocalRuntime> {
  const emulators = await startEmulators();
  const stops: (() => Promise<void>)[] = [() => emulators.stop()];
  const stop = async () => {
    for (const step of stops.reverse()) await step().catch(() => undefined);
    await rm(settings.runtimeFile, { force: true });
  };

  try {
    // Known before the handlers read their configuration, for the status links of webhooks.
    const port = settings.port || (await freePort());
    // The handlers read their configuration from the environment, as on Lambda.
    Object.assign(process.env, {
      [ENV.dynamodbEndpoint]: emulators.endpoints.dynamodb,
      [ENV.s3Endpoint]: emulators.endpoints.s3,
      [ENV.sqsEndpoint]: emulators.endpoints.sqs,
      [ENV.localMode]: 'true',
      [ENV.publicApiUrl]: `http://localhost:${port}/`,
    });
    // Job metrics are CloudWatch's business; on this machine they would only fill the console.
    process.env[ENV.metricsDisabled] ??= 'true';
    const queues = await createResources(readServiceConfig(), {
      ...(settings.visibilityTimeoutSeconds
        ? { visibilityTimeoutSeconds: settings.visibilityTimeoutSeconds }
        : {}),
    });
    process.env[ENV.jobsQueueUrl] = queues.jobsQueueUrl;
    process.env[ENV.webhookQueueUrl] = queues.webhookQueueUrl;
    const { config, webhookSecrets } = awsServices();

    const { key } = await createApiKey(awsServices().apiKeys, {
      tenantId: LOCAL_TENANT,
      label: 'local runtime',
      now: new Date(),
      ...(settings.apiKey ? { key: settings.apiKey } : {}),
    });
    for (const extra of settings.apiKeys) {
      await createApiKey(awsServices().apiKeys, {
        tenantId: extra.tenantId,
        label: 'LOCAL_API_KEYS',
        key: extra.key,
        now: new Date(),
      });
    }
    // Every local tenant can receive webhooks at once; `npm run keys -- … --local` rotates them.
    const tenants = new Set(settings.apiKeys.map((extra) => extra.tenantId));
    tenants.delete(LOCAL_TENANT);
    const webhookSecret = await createWebhookSecret(webhookSecrets, LOCAL_TENANT, new Date());
    for (const tenantId of tenants) await createWebhookSecret(webhookSecrets, tenantId, new Date());

    const sqs = createSqsClient(config);
    const onError = (error: unknown) =>
      log(`poller: ${error instanceof Error ? error.message : String(error)}`);
    const workers = new QueuePoller({
      sqs,
      queueUrl: queues.jobsQueueUrl,
      handler: worker,
      batchSize: RESOURCES.jobsQueue.batchSize,
      concurrency: settings.workerConcurrency,
      region: config.region,
      onError,
    });
    const deadLetters = new QueuePoller({
      sqs,
      queueUrl: queues.deadLetterQueueUrl,
      handler: deadLetter,
      batchSize: RESOURCES.deadLetterQueue.batchSize,
      concurrency: 1,
      region: config.region,
      onError,
    });
    // None for a caller that runs its workers as processes of their own (the benchmark).
    if (settings.workerConcurrency > 0) {
      await workers.start();
      stops.push(() => workers.stop());
    }
    await deadLetters.start();
    stops.push(() => deadLetters.stop());
    const webhookDeliveries = new QueuePoller({
      sqs,
      queueUrl: queues.webhookQueueUrl,
      handler: webhooks,
      batchSize: RESOURCES.webhookQueue.batchSize,
      concurrency: 1,
      region: config.region,
      onError,
    });
    await webhookDeliveries.start();
    stops.push(() => webhookDeliveries.stop());
    // As the stack's schedule does: the sweeper runs every interval; a failed run waits for the next.
    const sweeps = setInterval(() => {
      sweep().catch((error: unknown) =>
        log(`sweeper: ${error instanceof Error ? error.message : String(error)}`),
      );
    }, settings.sweepIntervalSeconds * 1000);
    stops.push(async () => clearInterval(sweeps));

    let ready = false;
    const server = createGateway({
      routes: API_ROUTES.map((route) => ({ ...route, handler: handlers[route.handler] })),
      authorizer,
      authorizerCacheSeconds: settings.authorizerCacheSeconds,
      maxBodyBytes: MAX_DIRECT_UPLOAD_BYTES,
      health: () => ready,
      log,
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    );

    await mkdir(dirname(settings.runtimeFile), { recursive: true });
    await writeFile(
      settings.runtimeFile,
      JSON.stringify({ endpoints: emulators.endpoints, pid: process.pid }, null, 2),
    );
    ready = true;
    return { url: `http://localhost:${port}`, apiKey: key, webhookSecret, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
