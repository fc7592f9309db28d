import { createSqsClient } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { RESOURCES } from '#commons/contract';
import { QueuePoller } from '#local/poller';
import { handler } from '#worker/handler';

/**
 * A worker as its own process, polling the jobs queue named by the environment (as a Lambda container
 * would be fed): the benchmark runs several, each on a core of its own, and tests kill one mid-job with
 * a real signal. Prints `ready` once polling.
 */
const config = readServiceConfig();
const poller = new QueuePoller({
  sqs: createSqsClient(config),
  queueUrl: config.jobsQueueUrl,
  handler,
  batchSize: RESOURCES.jobsQueue.batchSize,
  concurrency: 1,
  region: config.region,
});
await poller.start();
console.log('ready');
process.on('SIGTERM', () => poller.stop().then(() => process.exit(0)));
