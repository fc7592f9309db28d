import { readFile } from 'node:fs/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { handler as exportTranscript } from '#api/export';
import { handler as list } from '#api/list';
import { handler as status } from '#api/status';
import { handler as submit } from '#api/submit';
import { createDocumentClient, createS3Client } from '#aws/clients';
import { awsServices } from '#aws/services';
import { ENV, MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import { encodeCursor } from '#core/cursor';
import { apiEvent, multipartBody } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { findSample, samplePath } from '#test/helpers/samples';
import { submitSample } from '#test/helpers/submissions';

/**
 * Hostile requests to the handlers as they run on Lambda (after API Gateway and the authorizer): every
 * one gets its 4xx JSON error, never a 5xx or a crash, and nothing of a refused submission is kept.
 */

const TENANT = 'tenant-hostile';
const sample = findSample((entry) => entry.kind === 'utterance' && (entry.duration_s ?? 0) < 4);

beforeAll(async () => {
  process.env[ENV.maxActiveJobsPerTenant] = '1000';
  await useFreshResources();
});

const bodyOf = (response: APIGatewayProxyResult) =>
  JSON.parse(response.body) as { error?: { code: string; field?: string }; id?: string };

async function post(body: Buffer, contentType: string, query: Record<string, string> = {}) {
  return submit(
    apiEvent({
      method: 'POST',
      path: '/v1-beta/transcript',
      tenantId: TENANT,
      headers: { 'content-type': contentType },
      body,
      query,
    }),
  );
}

function expectRefused(response: APIGatewayProxyResult, codes: RegExp = /^invalid_request$/) {
  expect(response.statusCode, response.body).toBeGreaterThanOrEqual(400);
  expect(response.statusCode, response.body).toBeLessThan(500);
  expect(bodyOf(response).error?.code).toMatch(codes);
}

async function storedAudio(): Promise<number> {
  const { config } = awsServices();
  const { KeyCount = 0 } = await createS3Client(config).send(
    new ListObjectsV2Command({ Bucket: config.mediaBucket, Prefix: `audio/${TENANT}/` }),
  );
  return KeyCount;
}

async function storedJobs(): Promise<number> {
  const { config } = awsServices();
  const { Items = [] } = await createDocumentClient(config).send(
    new ScanCommand({ TableName: config.jobsTable }),
  );
  return Items.filter((item) => item.tenantId === TENANT).length;
}

async function audioForm(
  fields: Record<string, string> = {},
): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('audio', new Blob([await readFile(samplePath(sample))]), 'a.wav');
  return multipartBody(form);
}

describe('hostile submissions', () => {
  it('refuses a form cut off at any point, keeps nothing of it, and stays up', async () => {
    const { body, contentType } = await audioForm({ custom: 'x' });
    const cuts = new Set<number>([1, 10, 60, 120, 200, 300]);
    for (let cut = 400; cut < body.length - 1; cut += Math.floor(body.length / 25)) cuts.add(cut);
    // Everything up to the closing delimiter `--boundary--` counts; only the CRLF after it may go.
    for (let back = 3; back <= 40; back += 3) cuts.add(body.length - back);
    for (const cut of cuts) {
      const response = await post(body.subarray(0, cut), contentType);
      expectRefused(response, /^(invalid_request|missing_audio)$/);
    }
    expect(await storedAudio()).toBe(0);
    expect(await storedJobs()).toBe(0);
    expect((await post(body, contentType)).statusCode).toBe(200);
  });

  it('refuses a missing boundary, a wrong content type and an oversized body', async () => {
    const { body } = await audioForm();
    expectRefused(await post(body, 'multipart/form-data'), /^invalid_request$/);
    expectRefused(await post(body, 'application/json'), /^unsupported_media_type$/);
    expectRefused(await post(body, 'text/plain; boundary=x'), /^unsupported_media_type$/);
    expectRefused(
      await post(Buffer.alloc(MAX_DIRECT_UPLOAD_BYTES + 1), 'multipart/form-data; boundary=x'),
      /^payload_too_large$/,
    );
  });

  it('refuses thousands of parts, huge fields, long names, repeated, unknown and prototype-named parts', async () => {
    const many = new FormData();
    for (let i = 0; i < 3000; i++) many.append(`f${i}`, 'v');
    const cases: [FormData, RegExp][] = [[many, /^invalid_request$/]];
    for (const [name, value, code] of [
      ['custom', 'x'.repeat(70_000), /^invalid_option$/],
      ['x'.repeat(200), 'v', /^invalid_request$/],
      ['__proto__', '{"polluted":true}', /^invalid_request$/],
      ['constructor', 'x', /^invalid_request$/],
      ['priority', 'high', /^invalid_request$/],
    ] as const) {
      const form = new FormData();
      form.append(name, value);
      form.append('audio', new Blob([Buffer.from('RIFF')]), 'a.wav');
      cases.push([form, code]);
    }
    const twice = new FormData();
    twice.append('custom', 'a');
    twice.append('custom', 'b');
    twice.append('audio', new Blob([Buffer.from('RIFF')]), 'a.wav');
    cases.push([twice, /^invalid_request$/]);
    for (const [form, code] of cases) {
      const { body, contentType } = await multipartBody(form);
      expectRefused(await post(body, contentType), code);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await storedJobs()).toBe(1);
  });

  it('accepts odd file names and content types without passing them on to storage', async () => {
    const audio = await readFile(samplePath(sample));
    for (const [name, type] of [
      ['../../etc/passwd', 'audio/wav'],
      ['a\u0000b.wav', 'audio/x-wav\r\nX-Injected: 1'],
      ['ünïcødé 🎙️.wav', ''],
      ['x'.repeat(5000), 'not a type'],
    ]) {
      const form = new FormData();
      form.append('audio', new Blob([audio], { type }), name);
      const { body, contentType } = await multipartBody(form);
      const response = await post(body, contentType);
      expect(response.statusCode, response.body).toBe(200);
    }
  });

  it('refuses a query parameter the route does not take', async () => {
    const { body, contentType } = await audioForm();
    expectRefused(await post(body, contentType, { debug: '1' }));
  });
});

describe('hostile ids, cursors and queries', () => {
  let jobId: string;
  beforeAll(async () => {
    jobId = await submitSample(sample, TENANT);
  });

  const get = (
    handler: typeof status,
    query: Record<string, string>,
    tenantId = TENANT,
    multi?: Record<string, string[]>,
  ) =>
    handler({
      ...apiEvent({ method: 'GET', path: '/', tenantId, query }),
      multiValueQueryStringParameters:
        multi ?? Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]])),
    });

  it('answers empty, huge, forged and foreign ids with 400 or 404, on status and export', async () => {
    for (const handler of [status, exportTranscript]) {
      const format: Record<string, string> = handler === exportTranscript ? { format: 'txt' } : {};
      expectRefused(await get(handler, { ...format }));
      expectRefused(await get(handler, { id: '   ', ...format }));
      for (const id of ['x'.repeat(10_000), 'not-a-job', "'; DROP TABLE jobs; --", jobId.toUpperCase()]) {
        expectRefused(await get(handler, { id, ...format }), /^not_found$/);
      }
      expectRefused(await get(handler, { id: jobId, ...format }, 'another-tenant'), /^not_found$/);
    }
  });

  it('answers unknown and repeated query parameters with a 400 naming them', async () => {
    const unknown = await get(status, { id: jobId, verbose: 'true' });
    expectRefused(unknown);
    expect(bodyOf(unknown).error?.field).toBe('verbose');
    const repeated = await get(status, { id: jobId }, TENANT, { id: [jobId, 'other'] });
    expectRefused(repeated);
    expect(bodyOf(repeated).error?.field).toBe('id');
  });

  it('answers empty, huge, forged, foreign and aged cursors with a 400 naming the cursor', async () => {
    const aged = encodeCursor(TENANT, { id: jobId, timestamp_submitted: '2020-01-01T00:00:00.000Z' });
    const foreign = encodeCursor('another-tenant', {
      id: jobId,
      timestamp_submitted: new Date().toISOString(),
    });
    const forged = Buffer.from(JSON.stringify({ t: TENANT, id: jobId, ts: 'zzz' })).toString('base64url');
    for (const cursor of ['', 'x'.repeat(5000), '!!!', forged, foreign, aged, 'eyJ0IjoxfQ']) {
      const response = await get(list, { cursor });
      expectRefused(response);
      expect(bodyOf(response).error?.field, cursor.slice(0, 20)).toBe('cursor');
    }
  });

  it('answers limits and statuses out of range with a 400 naming them', async () => {
    for (const [name, value] of [
      ['limit', '0'],
      ['limit', '101'],
      ['limit', 'ten'],
      ['status', 'done'],
      ['q', 'x'.repeat(201)],
    ]) {
      const response = await get(list, { [name as string]: value as string });
      expectRefused(response);
      expect(bodyOf(response).error?.field).toBe(name);
    }
  });
});
