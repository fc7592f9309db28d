import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '#api/openapi-document';
import { API_ROUTES, MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import type { StatusRecord } from '#core/job';
import { eventually } from '#test/helpers/eventually';
import { type RuntimeProcess, startRuntimeProcess } from '#test/helpers/runtime-process';
import { findSample, samplePath } from '#test/helpers/samples';
import { WebhookReceiver } from '#test/helpers/webhook-receiver';

const API_KEY = 'openapi-key-0123456789abcdef';
const FILE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'functions', 'api', 'openapi.json');
const committed = JSON.parse(readFileSync(FILE, 'utf8'));

type Operation = { responses: Record<string, { content?: Record<string, { schema: unknown }> }> };

let runtime: RuntimeProcess;
let receiver: WebhookReceiver;
const utterance = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);
const undecodable = findSample(
  (sample) => sample.kind === 'bad' && sample.expect === 'error' && (sample.size_bytes ?? 0) > 0,
);

beforeAll(async () => {
  runtime = await startRuntimeProcess(API_KEY);
  receiver = new WebhookReceiver();
  await receiver.start();
});

afterAll(async () => {
  await runtime?.stop();
  await receiver?.stop();
});

// The document as a JSON Schema resource, so that each response schema is compiled with its references.
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(committed, 'openapi.json');
const pointer = (...parts: string[]) =>
  parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Every (method, path, status) the test has seen answered, held to the document. */
const checked = new Set<string>();

/**
 * Sends a request and holds its answer to the document: the status must be documented for the route,
 * the content type too, and a JSON body must match its schema.
 */
async function conforming(
  method: string,
  path: string,
  init: RequestInit & { query?: Record<string, string>; key?: string } = {},
) {
  const { query = {}, key, ...request } = init;
  const response = await fetch(runtime.url(path, query, key), { ...request, method });
  const text = await response.text();
  const operation = committed.paths[path]?.[method.toLowerCase()] as Operation | undefined;
  expect(operation, `${method} ${path} is not in the document`).toBeDefined();
  const documented = operation?.responses[String(response.status)];
  expect(
    documented,
    `${method} ${path} answered ${response.status}, which the document does not list`,
  ).toBeDefined();
  const type = (response.headers.get('content-type') ?? '').split(';')[0] ?? '';
  expect(Object.keys(documented?.content ?? {}), `${method} ${path} ${response.status}`).toContain(type);
  if (type === 'application/json') {
    const validate = ajv.getSchema(
      `openapi.json#/${pointer('paths', path, method.toLowerCase(), 'responses', String(response.status), 'content', type, 'schema')}`,
    );
    const body = JSON.parse(text);
    expect(
      validate?.(body),
      `${method} ${path} ${response.status}: ${ajv.errorsText(validate?.errors)}\n${text.slice(0, 500)}`,
    ).toBe(true);
    checked.add(`${method} ${path} ${response.status}`);
    return { status: response.status, headers: response.headers, body };
  }
  checked.add(`${method} ${path} ${response.status}`);
  return { status: response.status, headers: response.headers, body: text };
}

function form(file: Uint8Array, fields: Record<string, string>): FormData {
  const body = new FormData();
  body.append('audio', new Blob([new Uint8Array(file)]), 'upload.wav');
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  return body;
}

async function finished(id: string): Promise<StatusRecord> {
  return eventually(
    async () =>
      (await conforming('GET', '/v1-beta/transcript/status', { query: { id } })).body as StatusRecord,
    (record) => record.status === 'completed' || record.status === 'error',
    120_000,
  );
}

describe('the OpenAPI document', () => {
  it('is what the zod schemas of the handlers give (run `npm run openapi` after changing them)', () => {
    expect(openApiDocument()).toEqual(committed);
  });

  it('is served at /openapi.json, and describes every route of the API', async () => {
    const { body } = await conforming('GET', '/openapi.json');
    expect(body).toEqual(committed);
    for (const route of API_ROUTES) {
      expect(
        committed.paths[route.path]?.[route.method.toLowerCase()],
        `${route.method} ${route.path}`,
      ).toBeDefined();
    }
    expect(committed.openapi).toBe('3.1.0');
  });
});

describe("every route's real answers conform to the document", () => {
  it('a client that sends every option as a string part, with punctuate "false", through to export and delete', async () => {
    const audio = await readFile(samplePath(utterance));
    const submitted = await conforming('POST', '/v1-beta/transcript', {
      body: form(audio, {
        dual_channel: 'false',
        punctuate: 'false',
        speaker_diarization: 'false',
        language: 'enUs',
        webhook_url: '',
        custom: 'client-7',
        tldr: 'false',
        short_hand_notes: 'false',
      }),
    });
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ status: 'queued', punctuate: 'false', custom: 'client-7' });
    const record = await finished(submitted.body.id);
    expect(record.status).toBe('completed');
    expect(record.results?.results.transcript).toBe(record.results?.results.transcript.toLowerCase());
    expect(record).not.toHaveProperty('webhook_status');
    for (const format of ['txt', 'srt', 'vtt']) {
      const exported = await conforming('GET', '/v1-beta/transcript/export', {
        query: { id: submitted.body.id, format },
      });
      expect(exported.status).toBe(200);
    }
    const listed = await conforming('GET', '/v1-beta/transcripts', { query: { limit: '5' } });
    expect(listed.body.jobs.map((job: { id: string }) => job.id)).toContain(submitted.body.id);
    // The audio as submitted, through a presigned GET that takes ranges (a player seeks with them).
    const download = await conforming('GET', '/v1-beta/transcript/audio', {
      query: { id: submitted.body.id },
    });
    expect(download.status).toBe(200);
    expect(Date.parse(download.body.expires_at) - Date.now()).toBeGreaterThan(60_000);
    expect(Buffer.from(await (await fetch(download.body.download_url)).arrayBuffer())).toEqual(audio);
    const range = await fetch(download.body.download_url, { headers: { range: 'bytes=100-199' } });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer())).toEqual(audio.subarray(100, 200));
    const deleted = await conforming('DELETE', '/v1-beta/transcript', { query: { id: submitted.body.id } });
    expect(deleted.body).toMatchObject({ id: submitted.body.id, status: 'deleted' });
    expect(
      (await conforming('GET', '/v1-beta/transcript/status', { query: { id: submitted.body.id } })).status,
    ).toBe(404);
    expect(
      (await conforming('DELETE', '/v1-beta/transcript', { query: { id: submitted.body.id } })).status,
    ).toBe(200);
    // Deleted: no URL, and the one given before reads nothing any more.
    expect(
      (await conforming('GET', '/v1-beta/transcript/audio', { query: { id: submitted.body.id } })).status,
    ).toBe(404);
    expect((await fetch(download.body.download_url)).status).toBe(404);
  });

  it('a job in error, a delivered webhook with its attempts, and the retention echoed', async () => {
    const secret = /Webhook signing secret \(tenant "local"\): (whsec_\S+)/.exec(runtime.output())?.[1] ?? '';
    expect(secret).not.toBe('');
    const submitted = await conforming('POST', '/v1-beta/transcript', {
      body: form(await readFile(samplePath(undecodable)), {
        webhook_url: receiver.url(),
        retention_days: '7',
      }),
    });
    expect(submitted.body.retention_days).toBe('7');
    const failed = await finished(submitted.body.id);
    expect(failed).toMatchObject({ status: 'error', retention_days: 7 });
    const delivered = await eventually(
      async () =>
        (await conforming('GET', '/v1-beta/transcript/status', { query: { id: submitted.body.id } })).body,
      (record) => record.webhook_status === 'delivered',
    );
    expect(delivered).toMatchObject({
      webhook_status: 'delivered',
      webhook_attempts: 1,
      webhook_response_code: 200,
    });
    const [request] = receiver.received;
    if (!request) throw new Error('The receiver got nothing.');
    expect(new Webhook(secret).verify(request.body, WebhookReceiver.headersOf(request))).toMatchObject({
      id: submitted.body.id,
      status: 'error',
      status_url: `${runtime.baseUrl.replace('127.0.0.1', 'localhost')}/v1-beta/transcript/status?id=${submitted.body.id}`,
    });

    // A rotated secret: the next webhook verifies with the new secret and, for a day, the old one.
    const rotated =
      /(whsec_\S+)/.exec(await runtime.keys('rotate-webhook-secret', '--tenant', 'local'))?.[1] ?? '';
    const next = await conforming('POST', '/v1-beta/transcript', {
      body: form(await readFile(samplePath(undecodable)), { webhook_url: receiver.url() }),
    });
    await eventually(
      async () => receiver.received.length,
      (count) => count === 2,
    );
    const second = receiver.received[1];
    if (!second) throw new Error('No second webhook.');
    for (const key of [rotated, secret]) {
      expect(new Webhook(key).verify(second.body, WebhookReceiver.headersOf(second))).toMatchObject({
        id: next.body.id,
      });
    }
  });

  it('refusals: 400, 401, 404, 409, 413 and 415, each in the error shape', async () => {
    const audio = await readFile(samplePath(utterance));
    expect(
      (await conforming('POST', '/v1-beta/transcript', { body: form(audio, { punctuate: 'maybe' }) })).status,
    ).toBe(400);
    expect(
      (
        await conforming('POST', '/v1-beta/transcript', {
          body: 'x',
          headers: { 'content-type': 'text/plain' },
        })
      ).status,
    ).toBe(415);
    const huge = new Uint8Array(MAX_DIRECT_UPLOAD_BYTES + 1);
    expect((await conforming('POST', '/v1-beta/transcript', { body: form(huge, {}) })).status).toBe(413);
    const key = { 'Idempotency-Key': 'openapi-conflict' };
    expect(
      (await conforming('POST', '/v1-beta/transcript', { body: form(audio, {}), headers: key })).status,
    ).toBe(200);
    const conflict = await conforming('POST', '/v1-beta/transcript', {
      body: form(audio, { custom: 'other' }),
      headers: key,
    });
    expect(conflict).toMatchObject({ status: 409, body: { error: { code: 'conflict' } } });
    expect((await conforming('GET', '/v1-beta/transcript/status', { query: { id: 'nope' } })).status).toBe(
      404,
    );
    expect(
      (await conforming('GET', '/v1-beta/transcript/status', { query: { id: 'x', extra: '1' } })).status,
    ).toBe(400);
    expect((await conforming('GET', '/v1-beta/transcripts', { query: { limit: '0' } })).status).toBe(400);
    expect(
      (await conforming('GET', '/v1-beta/transcript/export', { query: { id: 'nope', format: 'doc' } }))
        .status,
    ).toBe(400);
    expect((await conforming('DELETE', '/v1-beta/transcript', { query: { id: 'nope' } })).status).toBe(404);
    expect((await conforming('GET', '/v1-beta/transcript/audio', { query: { id: 'nope' } })).status).toBe(
      404,
    );
    expect((await conforming('GET', '/v1-beta/transcript/audio', { query: {} })).status).toBe(400);
    const unauthorized = await conforming('GET', '/v1-beta/transcripts', { key: 'not-a-key-000000000' });
    expect(unauthorized).toMatchObject({ status: 401, body: { error: { code: 'invalid_api_key' } } });
  });

  it('a presigned upload (idempotent), submitted by audio_ref, and a submission by audio_url', async () => {
    const audio = await readFile(samplePath(utterance));
    const request = {
      body: JSON.stringify({ size: audio.length, content_type: 'audio/wav' }),
      headers: { 'content-type': 'application/json', 'Idempotency-Key': 'openapi-upload' },
    };
    const ticket = await conforming('POST', '/v1-beta/upload', request);
    expect(ticket.status).toBe(200);
    const again = await conforming('POST', '/v1-beta/upload', request);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(ticket.body);
    const other = await conforming('POST', '/v1-beta/upload', {
      ...request,
      body: JSON.stringify({ size: audio.length + 1 }),
    });
    expect(other).toMatchObject({ status: 409, body: { error: { code: 'conflict' } } });
    const put = await fetch(ticket.body.upload_url, {
      method: 'PUT',
      headers: ticket.body.headers,
      body: audio,
    });
    expect(put.status).toBe(200);
    const body = new FormData();
    body.append('audio_ref', ticket.body.audio_ref);
    const byRef = await conforming('POST', '/v1-beta/transcript', { body });
    expect(byRef.status).toBe(200);
    expect((await finished(byRef.body.id)).status).toBe('completed');
    // An uploaded file is the job's audio, read from where it was uploaded.
    const uploaded = await conforming('GET', '/v1-beta/transcript/audio', { query: { id: byRef.body.id } });
    expect(new URL(uploaded.body.download_url).pathname).toContain(`/uploads/`);
    expect(Buffer.from(await (await fetch(uploaded.body.download_url)).arrayBuffer())).toEqual(audio);

    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'audio/wav' }).end(audio);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const byUrl = new FormData();
      byUrl.append('audio_url', `http://127.0.0.1:${(server.address() as AddressInfo).port}/a.wav`);
      const submitted = await conforming('POST', '/v1-beta/transcript', { body: byUrl });
      expect(submitted.status).toBe(200);
      expect((await finished(submitted.body.id)).status).toBe('completed');
    } finally {
      server.close();
    }

    const json = { 'content-type': 'application/json' };
    for (const [status, refused] of [
      [415, { body: 'x', headers: { 'content-type': 'text/plain' } }],
      [400, { body: '{"size": 0}', headers: json }],
      [413, { body: JSON.stringify({ size: 1, pad: 'x'.repeat(5000) }), headers: json }],
    ] as const) {
      expect((await conforming('POST', '/v1-beta/upload', refused)).status).toBe(status);
    }
  });

  it('the pages: the console and the API reference', async () => {
    for (const path of ['/console', '/reference']) {
      const page = await conforming('GET', path);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    }
  });

  it('covered every route with a success', () => {
    for (const route of API_ROUTES) {
      expect(checked, `${route.method} ${route.path}`).toContain(`${route.method} ${route.path} 200`);
    }
  });
});
