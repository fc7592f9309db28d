import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ENV } from '#commons/contract';
import type { StatusRecord } from '#core/job';
import { freePort } from '#local/emulators';
import { LOCAL_ENV } from '#local/settings';
import type { SubmitBody } from './submissions.ts';

const TSX = join('node_modules', '.bin', 'tsx');

export interface RuntimeProcess {
  baseUrl: string;
  apiKey: string;
  /** The emulators' endpoints as the runtime recorded them (`s3` is where presigned URLs point). */
  endpoints: { dynamodb: string; s3: string; sqs: string };
  /** An API address with the key in the query string, as SPEC 5 passes it. */
  url(path: string, query?: Record<string, string>, key?: string): string;
  /** POST /v1-beta/transcript with a file and form fields. */
  submit(
    file: Uint8Array,
    fields?: Record<string, string>,
    key?: string,
  ): Promise<{ status: number; body: SubmitBody }>;
  /** Polls the status endpoint as a client would, until the job is completed or in error. */
  finished(id: string, key?: string): Promise<StatusRecord>;
  /** Everything the runtime printed so far. */
  output(): string;
  /** Runs `local/keys.ts` against this runtime and answers what it printed. */
  keys(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts `local/start.ts` as `npm start` does, on a free port, and waits until /health answers.
 * `env` adds or overrides variables (a log level, more keys).
 */
export async function startRuntimeProcess(
  apiKey: string,
  env: Record<string, string> = {},
): Promise<RuntimeProcess> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const runtimeFile = join(mkdtempSync(join(tmpdir(), 'runtime-')), 'runtime.json');
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    [LOCAL_ENV.port]: String(port),
    [LOCAL_ENV.apiKey]: apiKey,
    [LOCAL_ENV.runtimeFile]: runtimeFile,
    [ENV.logLevel]: 'WARN',
    ...env,
  };
  // The runtime makes and names its own resources.
  for (const name of [
    ENV.jobsTable,
    ENV.apiKeysTable,
    ENV.idempotencyTable,
    ENV.tenantsTable,
    ENV.mediaBucket,
    ENV.jobsQueueUrl,
    ENV.webhookQueueUrl,
    ENV.publicApiUrl,
  ])
    delete childEnv[name];
  // node itself, not the tsx launcher, so that stopping it stops the runtime and its emulators.
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'local/start.ts'], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });

  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
  };
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline && child.exitCode === null) {
    const healthy = await fetch(`${baseUrl}/health`).then(
      (response) => response.ok,
      () => false,
    );
    if (healthy) {
      const url = (path: string, query: Record<string, string> = {}, key = apiKey) =>
        `${baseUrl}${path}?${new URLSearchParams({ 'x-api-key': key, ...query })}`;
      return {
        baseUrl,
        apiKey,
        endpoints: JSON.parse(readFileSync(runtimeFile, 'utf8')).endpoints,
        url,
        submit: async (file, fields = {}, key = apiKey) => {
          const form = new FormData();
          form.append('audio', new Blob([new Uint8Array(file)]), 'upload');
          for (const [name, value] of Object.entries(fields)) form.append(name, value);
          const response = await fetch(url('/v1-beta/transcript', {}, key), { method: 'POST', body: form });
          return { status: response.status, body: (await response.json()) as SubmitBody };
        },
        finished: async (id, key = apiKey) => {
          const deadline = Date.now() + 240_000;
          for (;;) {
            const response = await fetch(url('/v1-beta/transcript/status', { id }, key));
            const record = (await response.json()) as StatusRecord;
            if (
              !response.ok ||
              record.status === 'completed' ||
              record.status === 'error' ||
              Date.now() > deadline
            ) {
              return record;
            }
            await new Promise((resolve) => setTimeout(resolve, 300));
          }
        },
        output: () => output,
        keys: async (...args) =>
          (await promisify(execFile)(TSX, ['local/keys.ts', ...args, '--local'], { env: childEnv })).stdout,
        stop,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  await stop();
  throw new Error(`The local runtime did not become healthy:\n${output}`);
}
