import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ENV, EXIT_CODES } from '#client/cli';
import { ApiError, TranscriptionClient, type UploadProgress, verifyWebhook } from '#client/index';
import { MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import { freePort } from '#local/emulators';
import { eventually } from '#test/helpers/eventually';
import { type RuntimeProcess, startRuntimeProcess } from '#test/helpers/runtime-process';
import { findSample, samplePath } from '#test/helpers/samples';
import { WebhookReceiver } from '#test/helpers/webhook-receiver';

/**
 * The typed client and the CLI against the local runtime (`local/start.ts`), over HTTP as a user's
 * program or shell would use them: direct and presigned uploads with their progress, waiting, every
 * route, a signed webhook verified with the client's helper, and the CLI's output and exit codes.
 */

const API_KEY = 'client-e2e-key-0123456789abcdef';
const utterance = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);
const undecodable = findSample(
  (sample) => sample.kind === 'bad' && sample.expect === 'error' && (sample.size_bytes ?? 0) > 0,
);

let runtime: RuntimeProcess;
let client: TranscriptionClient;
let receiver: WebhookReceiver;
let work: string;
/** A recording over the direct-upload limit, made at run time from a sample (never kept in the repo). */
let large: string;

beforeAll(async () => {
  runtime = await startRuntimeProcess(API_KEY);
  client = new TranscriptionClient({ baseUrl: `${runtime.baseUrl}/`, apiKey: API_KEY });
  receiver = new WebhookReceiver();
  await receiver.start();
  work = await mkdtemp(join(tmpdir(), 'client-e2e-'));
  large = join(work, 'large.wav');
  // 48 kHz stereo 16-bit is 192,000 bytes a second: a little over the limit, in seconds of audio.
  const seconds = Math.ceil(MAX_DIRECT_UPLOAD_BYTES / 192_000) + 1;
  await promisify(execFile)('ffmpeg', [
    '-v',
    'error',
    '-stream_loop',
    '-1',
    '-i',
    samplePath(utterance),
    '-t',
    String(seconds),
    '-ar',
    '48000',
    '-ac',
    '2',
    large,
  ]);
  expect((await stat(large)).size).toBeGreaterThan(MAX_DIRECT_UPLOAD_BYTES);
});

afterAll(async () => {
  await runtime?.stop();
  await receiver?.stop();
});

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a user would (`npm run cli -- …`), with the base URL and key in its environment. */
function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return run(process.execPath, ['--import', 'tsx', 'client/cli.ts', ...args], env);
}

function run(command: string, args: string[], env: Record<string, string>): Promise<CliRun> {
  const child = spawn(command, args, {
    env: {
      ...process.env,
      [CLI_ENV.baseUrl]: `${runtime.baseUrl}/`,
      [CLI_ENV.apiKey]: API_KEY,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('the typed client against the local runtime', () => {
  it('submits a small file in the form, waits, reads it every way, lists it and deletes it', async () => {
    const progress: UploadProgress[] = [];
    const submitted = await client.submitFile(samplePath(utterance), {
      punctuate: false,
      custom: 'client-e2e',
      retention_days: 3,
      onProgress: (report) => progress.push(report),
    });
    expect(submitted).toMatchObject({ status: 'queued', punctuate: 'false', retention_days: '3' });
    const size = (await stat(samplePath(utterance))).size;
    expect(progress.every(({ via, bytesTotal }) => via === 'direct' && bytesTotal === size)).toBe(true);
    expect(progress.at(-1)?.bytesSent).toBe(size);

    const seen: string[] = [];
    const done = await client.wait(submitted.id, { onStatus: (record) => seen.push(record.status) });
    expect(done.status).toBe('completed');
    expect(seen.at(-1)).toBe('completed');
    expect(done.results?.results.transcript).toBe(done.results?.results.transcript.toLowerCase());
    expect((await client.status(submitted.id)).status).toBe('completed');

    expect(await client.export(submitted.id, 'txt')).toContain(
      done.results?.results.transcript.split(' ')[0],
    );
    expect(await client.export(submitted.id, 'srt')).toMatch(/^1\r?\n00:00:/);
    expect(await client.export(submitted.id, 'vtt')).toMatch(/^WEBVTT/);

    const page = await client.list({ q: 'client-e2e', limit: 5 });
    expect(page.jobs.map((job) => job.id)).toContain(submitted.id);
    const all = [];
    for await (const job of client.listAll({ limit: 1 })) all.push(job.id);
    expect(all).toContain(submitted.id);

    expect(await client.delete(submitted.id)).toMatchObject({ id: submitted.id, status: 'deleted' });
    const gone = await client.status(submitted.id).catch((error: unknown) => error);
    expect(gone).toBeInstanceOf(ApiError);
    expect(gone).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('uploads a file over the direct limit by presigned URL with progress, and deletes it while it is processed', async () => {
    const progress: UploadProgress[] = [];
    const submitted = await client.submitFile(large, { onProgress: (report) => progress.push(report) });
    const size = (await stat(large)).size;
    expect(progress.every(({ via }) => via === 'presigned')).toBe(true);
    expect(progress.map(({ bytesSent }) => bytesSent)).toEqual(
      [...progress.map(({ bytesSent }) => bytesSent)].sort((a, b) => a - b),
    );
    expect(progress.at(-1)).toEqual({ via: 'presigned', bytesSent: size, bytesTotal: size });
    expect(progress.length).toBeGreaterThan(10);
    expect(['queued', 'processing']).toContain((await client.status(submitted.id)).status);
    // Not transcribed here (the CLI test does): the worker notices the deletion and stops.
    expect((await client.delete(submitted.id)).status).toBe('deleted');
  });

  it('stops waiting at a job in error; submits by address; refuses with the API error', async () => {
    const failed = await client.submitFile(samplePath(undecodable));
    expect((await client.wait(failed.id)).status).toBe('error');

    const audio = await readFile(samplePath(utterance));
    const server: Server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'audio/wav' }).end(audio);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const byUrl = await client.submitUrl(`http://127.0.0.1:${port}/call.wav`, { tldr: true });
      expect((await client.wait(byUrl.id)).status).toBe('completed');
    } finally {
      server.close();
    }

    await expect(client.submitFile(samplePath(utterance), { language: 'xx' })).rejects.toMatchObject({
      status: 400,
      code: 'unsupported_language',
      field: 'language',
    });
    const stranger = new TranscriptionClient({ baseUrl: runtime.baseUrl, apiKey: 'not-a-key-0000000000' });
    await expect(stranger.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it("verifies the job's signed webhook with the client's helper", async () => {
    const secret = /Webhook signing secret \(tenant "local"\): (whsec_\S+)/.exec(runtime.output())?.[1] ?? '';
    expect(secret).not.toBe('');
    const submitted = await client.submitFile(samplePath(undecodable), { webhook_url: receiver.url() });
    await client.wait(submitted.id);
    await eventually(
      async () => receiver.received.length,
      (count) => count > 0,
    );
    const [delivery] = receiver.received;
    if (!delivery) throw new Error('No webhook arrived.');
    const event = verifyWebhook(delivery.body, delivery.headers, secret);
    expect(event).toMatchObject({ id: submitted.id, type: 'transcript.failed', status: 'error' });
    expect(() => verifyWebhook(`${delivery.body} `, delivery.headers, secret)).toThrow();
  });
});

describe('the CLI against the local runtime', () => {
  it('transcribes a small file and waits: the transcript on stdout, progress and status lines on stderr', async () => {
    const { code, stdout, stderr } = await cli([
      'transcribe',
      samplePath(utterance),
      '--wait',
      '--format',
      'txt',
      '--no-punctuate',
    ]);
    expect(code, stderr).toBe(EXIT_CODES.ok);
    expect(stdout.trim().length).toBeGreaterThan(0);
    expect(stdout).toBe(stdout.toLowerCase());
    const size = (await stat(samplePath(utterance))).size;
    expect(stderr).toContain(`upload direct: 100% (${size} of ${size} bytes)`);
    expect(stderr).toMatch(/job [0-9a-f-]{36}: completed/);
  });

  it('uploads a file over the direct limit with a progress line per tenth, then writes the SRT to --out', async () => {
    const out = join(work, 'large.srt');
    const { code, stdout, stderr } = await cli([
      'transcribe',
      large,
      '--wait',
      '--format',
      'srt',
      '--out',
      out,
    ]);
    expect(code, stderr).toBe(EXIT_CODES.ok);
    expect(stdout).toBe('');
    const size = (await stat(large)).size;
    const lines = stderr.split('\n').filter((line) => line.startsWith('upload presigned: '));
    expect(lines[0]).toBe(`upload presigned: 0% (0 of ${size} bytes)`);
    expect(lines.at(-1)).toBe(`upload presigned: 100% (${size} of ${size} bytes)`);
    expect(lines.map((line) => Number(/: (\d+)%/.exec(line)?.[1]))).toEqual([
      0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100,
    ]);
    expect(readFileSync(out, 'utf8')).toMatch(/^1\r?\n00:00:\d\d,\d{3} --> /);
  });

  it('draws a progress bar on a terminal', async () => {
    // `script` gives the CLI a pseudo-terminal, as a user's shell would.
    const command = `${process.execPath} --import tsx client/cli.ts transcribe ${large}`;
    const { code, stdout } = await run('script', ['-qec', command, '/dev/null'], {});
    expect(code, stdout).toBe(EXIT_CODES.ok);
    expect(stdout).toMatch(/Uploading \(presigned\) \[[=-]+\] 100% 4\.\d\/4\.\d MB/);
    // The bar redraws in place (cursor to column 1), never line after line.
    expect(stdout).toContain('\u001b[1G');
    expect(stdout).not.toContain('upload presigned:');
    const id = /"id": "([0-9a-f-]{36})"/.exec(stdout)?.[1] ?? '';
    expect((await cli(['delete', id])).code).toBe(EXIT_CODES.ok);
  });

  it('status, list, export and delete', async () => {
    const submitted = await client.submitFile(samplePath(utterance), { custom: 'cli-commands' });
    await client.wait(submitted.id);
    const status = await cli(['status', submitted.id]);
    expect(status.code).toBe(EXIT_CODES.ok);
    expect(JSON.parse(status.stdout)).toMatchObject({ id: submitted.id, status: 'completed' });
    const list = await cli(['list', '--search', 'cli-commands']);
    expect(list.code).toBe(EXIT_CODES.ok);
    expect(list.stdout).toMatch(new RegExp(`^${submitted.id}\tcompleted\t\\S+\tcli-commands$`, 'm'));
    const listed = await cli(['list', '--all', '--json', '--status', 'completed']);
    expect(JSON.parse(listed.stdout).map((job: { id: string }) => job.id)).toContain(submitted.id);
    const vtt = await cli(['export', submitted.id, '--format', 'vtt']);
    expect(vtt.stdout).toMatch(/^WEBVTT/);
    const json = await cli(['export', submitted.id, '--format', 'json']);
    expect(JSON.parse(json.stdout).results.results.engine).toBe('sphinx');
    const deleted = await cli(['delete', submitted.id]);
    expect(JSON.parse(deleted.stdout)).toMatchObject({ id: submitted.id, status: 'deleted' });
  });

  it('exits with the documented code for each way a command can fail', async () => {
    const unused = await freePort();
    // One at a time: each is a Node process of its own.
    const failures: [number, () => Promise<CliRun>][] = [
      [EXIT_CODES.usage, () => cli(['transcribe', samplePath(utterance), '--bogus'])],
      [EXIT_CODES.usage, () => cli(['transcribe', samplePath(utterance), '--format', 'doc'])],
      [EXIT_CODES.usage, () => cli(['transcribe', join(work, 'missing.wav')])],
      [EXIT_CODES.usage, () => cli(['list'], { [CLI_ENV.apiKey]: '' })],
      [EXIT_CODES.jobFailed, () => cli(['transcribe', samplePath(undecodable), '--wait'])],
      [EXIT_CODES.refused, () => cli(['transcribe', samplePath(utterance), '--language', 'xx'])],
      [EXIT_CODES.unauthorized, () => cli(['list'], { [CLI_ENV.apiKey]: 'not-a-key-0000000000' })],
      [EXIT_CODES.notFound, () => cli(['status', '00000000-0000-4000-8000-000000000000'])],
      [EXIT_CODES.notFound, () => cli(['export', '00000000-0000-4000-8000-000000000000'])],
      [EXIT_CODES.unavailable, () => cli(['list'], { [CLI_ENV.baseUrl]: `http://127.0.0.1:${unused}/` })],
      [EXIT_CODES.timedOut, () => cli(['transcribe', samplePath(utterance), '--wait', '--timeout', '0'])],
    ];
    for (const [expected, running] of failures) {
      const { code, stderr, stdout } = await running();
      expect(code, `${stderr}\n${stdout}`).toBe(expected);
      expect(stderr.trim().length, 'a failure says why on stderr').toBeGreaterThan(0);
    }
  });
});
