import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as submit } from '#api/submit';
import { handler as upload } from '#api/upload';
import { awsServices } from '#aws/services';
import { ENV, MAX_DIRECT_UPLOAD_BYTES, MAX_UPLOAD_BYTES, UPLOAD_TAG, uploadKey } from '#commons/contract';
import { encodeProcessMessage } from '#core/messages';
import type { UploadTicket } from '#core/upload';
import { apiEvent, multipartBody, sqsEvent } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { findSample, samplePath } from '#test/helpers/samples';
import { handler as worker } from '#worker/handler';

/**
 * Presigned uploads against the local S3 endpoint, as a client does them: ask, PUT, submit the
 * reference; and every reference that must be refused.
 */

let dir: string;
let large: Buffer;

beforeAll(async () => {
  process.env[ENV.maxActiveJobsPerTenant] = '1000';
  await useFreshResources();
  dir = mkdtempSync(join(tmpdir(), 'upload-'));
  // Speech over the direct-upload limit: an utterance as 48 kHz stereo, then silence.
  const file = join(dir, 'large.wav');
  const speech = samplePath(findSample((entry) => entry.kind === 'utterance' && (entry.duration_s ?? 0) > 5));
  execFileSync('ffmpeg', [
    '-v',
    'error',
    '-i',
    speech,
    '-af',
    'apad=pad_dur=20',
    '-ar',
    '48000',
    '-ac',
    '2',
    file,
  ]);
  large = readFileSync(file);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const json = (response: APIGatewayProxyResult) => JSON.parse(response.body);

async function ask(
  tenantId: string,
  body: unknown,
  contentType = 'application/json',
): Promise<APIGatewayProxyResult> {
  return upload(
    apiEvent({
      method: 'POST',
      path: '/v1-beta/upload',
      tenantId,
      headers: { 'content-type': contentType },
      body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
      base64: false,
    }),
  );
}

async function ticketFor(tenantId: string, file: Buffer): Promise<UploadTicket> {
  const response = await ask(tenantId, { size: file.length, content_type: 'audio/wav' });
  expect(response.statusCode, response.body).toBe(200);
  return json(response) as UploadTicket;
}

const put = (ticket: UploadTicket, file: Uint8Array, headers: Record<string, string> = ticket.headers) =>
  fetch(ticket.upload_url, { method: 'PUT', headers, body: new Uint8Array(file) });

async function submitRef(tenantId: string, audioRef: string, extra: Record<string, string> = {}) {
  const form = new FormData();
  form.append('audio_ref', audioRef);
  for (const [name, value] of Object.entries(extra)) form.append(name, value);
  const { body, contentType } = await multipartBody(form);
  const response = await submit(
    apiEvent({
      method: 'POST',
      path: '/v1-beta/transcript',
      tenantId,
      headers: { 'content-type': contentType },
      body,
    }),
  );
  return { status: response.statusCode, body: json(response) };
}

describe('a presigned upload', () => {
  it('takes a file over the direct-upload limit and transcribes it', async () => {
    expect(large.length).toBeGreaterThan(MAX_DIRECT_UPLOAD_BYTES);
    const ticket = await ticketFor('tenant-up', large);
    expect(ticket).toMatchObject({
      method: 'PUT',
      max_bytes: MAX_UPLOAD_BYTES,
      audio_ref: expect.stringMatching(/^up_/),
    });
    expect(Date.parse(ticket.expires_at)).toBeGreaterThan(Date.now());
    expect((await put(ticket, large)).status).toBe(200);

    const submitted = await submitRef('tenant-up', ticket.audio_ref, { custom: 'large' });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
    const job = await awsServices().jobs.get(submitted.body.id);
    expect(job?.audioKey).toBe(uploadKey('tenant-up', ticket.audio_ref));
    expect(await awsServices().media.getTags(job?.audioKey ?? '')).toEqual({
      [UPLOAD_TAG.key]: UPLOAD_TAG.submitted,
    });
    await worker(sqsEvent([encodeProcessMessage(submitted.body.id)]));
    const done = await awsServices().jobs.get(submitted.body.id);
    expect(done?.status, JSON.stringify(done?.error)).toBe('completed');
    expect(done?.audio_duration_ms).toBeGreaterThan(20_000);
  });

  it('refuses a PUT whose length, type or tag differs from what was signed, or that comes too late', async () => {
    const file = Buffer.from(large.subarray(0, 100_000));
    const ticket = await ticketFor('tenant-up', file);
    for (const [changed, body] of [
      [{ ...ticket.headers, 'content-length': String(file.length - 1) }, new Uint8Array(file.subarray(1))],
      [{ ...ticket.headers, 'content-type': 'video/mp4' }, new Uint8Array(file)],
      [{ ...ticket.headers, 'x-amz-tagging': 'state=submitted' }, new Uint8Array(file)],
    ] as const) {
      const response = await put(ticket, body, changed);
      expect(response.status, JSON.stringify(changed)).toBe(403);
    }
    const tampered = {
      ...ticket,
      upload_url: ticket.upload_url.replace(ticket.audio_ref, `${ticket.audio_ref}x`),
    };
    expect((await put(tampered, file)).status).toBe(403);

    const brief = await awsServices().media.presignUpload(uploadKey('tenant-up', 'up_late'), {
      bytes: file.length,
      contentType: 'audio/wav',
      tags: { [UPLOAD_TAG.key]: UPLOAD_TAG.pending },
      expiresInSeconds: 1,
    });
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const late = await fetch(brief.url, { method: 'PUT', headers: brief.headers, body: file });
    expect(late.status).toBe(403);
    expect(await late.text()).toContain('expired');
  });

  it('refuses every reference that is unknown, expired, foreign, never uploaded, reused or malformed', async () => {
    const file = Buffer.from(large.subarray(0, 200_000));
    const foreign = await ticketFor('tenant-other', file);
    await put(foreign, file);
    const notUploaded = await ticketFor('tenant-up', file);
    const used = await ticketFor('tenant-up', file);
    await put(used, file);
    expect((await submitRef('tenant-up', used.audio_ref)).status).toBe(200);
    const dayAgo = (Date.now() - 25 * 3_600_000).toString(36);
    const refs: [string, RegExp][] = [
      [`up_${Date.now().toString(36)}_AAAAAAAAAAAAAAAAAAAAAA`, /names no uploaded file/],
      [`up_${dayAgo}_AAAAAAAAAAAAAAAAAAAAAA`, /expired/],
      [foreign.audio_ref, /names no uploaded file/],
      [notUploaded.audio_ref, /names no uploaded file/],
      [used.audio_ref, /already submitted/],
      ['../../audio/tenant-other/x', /not a reference/],
      ['', /not a reference/],
      ['x'.repeat(5000), /not a reference/],
    ];
    for (const [ref, message] of refs) {
      const { status, body } = await submitRef('tenant-up', ref);
      expect(status, ref.slice(0, 40)).toBe(400);
      expect(body.error).toMatchObject({
        code: 'invalid_request',
        field: 'audio_ref',
        message: expect.stringMatching(message),
      });
    }
    // The foreign upload is still its tenant's to submit.
    expect((await submitRef('tenant-other', foreign.audio_ref)).status).toBe(200);
  });

  it('refuses two sources at once, a second submission of one upload in a race, and bad upload requests', async () => {
    const file = Buffer.from(large.subarray(0, 100_000));
    const ticket = await ticketFor('tenant-up', file);
    await put(ticket, file);
    const both = new FormData();
    both.append('audio_ref', ticket.audio_ref);
    both.append('audio', new Blob([file]), 'a.wav');
    const body = await multipartBody(both);
    const twoSources = await submit(
      apiEvent({
        method: 'POST',
        path: '/',
        tenantId: 'tenant-up',
        headers: { 'content-type': body.contentType },
        body: body.body,
      }),
    );
    expect(twoSources.statusCode).toBe(400);

    const race = await Promise.all([
      submitRef('tenant-up', ticket.audio_ref),
      submitRef('tenant-up', ticket.audio_ref),
    ]);
    expect(race.map((result) => result.status).sort()).toEqual([200, 400]);

    for (const [request, status, field] of [
      [{}, 400, 'size'],
      [{ size: 0 }, 400, 'size'],
      [{ size: MAX_UPLOAD_BYTES + 1 }, 400, 'size'],
      [{ size: 1.5 }, 400, 'size'],
      [{ size: '10' }, 400, 'size'],
      [{ size: 10, content_type: 'audio/wav\r\nx: y' }, 400, 'content_type'],
      [{ size: 10, bucket: 'elsewhere' }, 400, 'bucket'],
    ] as const) {
      const response = await ask('tenant-up', request);
      expect(response.statusCode, JSON.stringify(request)).toBe(status);
      expect(json(response).error.field).toBe(field);
    }
    expect((await ask('tenant-up', 'not json')).statusCode).toBe(400);
    expect((await ask('tenant-up', { size: 10 }, 'text/plain')).statusCode).toBe(415);
  });
});
