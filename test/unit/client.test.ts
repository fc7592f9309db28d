import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { ApiError, type StatusRecord, TranscriptionClient, verifyWebhook, WaitTimeout } from '#client/index';
import { MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import { CLIENT_TYPES_FILE, clientTypes, OPENAPI_FILE } from '#local/openapi-files';

/** A fetch that answers from a script and keeps what it was asked, bodies read as the server would. */
function scriptedFetch(answers: ((request: Request) => Response | Promise<Response>)[]) {
  const requests: { method: string; url: URL; headers: Headers; body: Uint8Array }[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(input, init);
    requests.push({
      method: request.method,
      url: new URL(request.url),
      headers: request.headers,
      body: new Uint8Array(await request.arrayBuffer()),
    });
    const answer = answers[Math.min(requests.length, answers.length) - 1];
    if (!answer) throw new Error('No answer scripted.');
    return answer(request);
  };
  return { fetch: fetch as typeof globalThis.fetch, requests };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', ...headers },
    });

const record = (status: StatusRecord['status']): StatusRecord =>
  ({ id: 'job-1', status, webhook_url: '', custom: '' }) as unknown as StatusRecord;

function client(fetch: typeof globalThis.fetch) {
  return new TranscriptionClient({
    baseUrl: 'https://api.test/prod/',
    apiKey: 'key-123',
    fetch,
    retryDelayMs: 1,
  });
}

describe('the client types', () => {
  it('are what openapi-typescript generates from the committed OpenAPI document (run `npm run openapi`)', async () => {
    const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
    expect(await clientTypes(document)).toBe(readFileSync(CLIENT_TYPES_FILE, 'utf8'));
  });

  it('change when the document does: a route the client uses, renamed, is no longer in them', async () => {
    const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
    document.paths['/v1-beta/transcript/state'] = document.paths['/v1-beta/transcript/status'];
    delete document.paths['/v1-beta/transcript/status'];
    const drifted = await clientTypes(document);
    expect(drifted).not.toBe(readFileSync(CLIENT_TYPES_FILE, 'utf8'));
    expect(drifted).not.toContain("'/v1-beta/transcript/status'");
  });
});

describe('TranscriptionClient', () => {
  it('sends the key in the query string and answers the typed record', async () => {
    const { fetch, requests } = scriptedFetch([json(200, record('completed'))]);
    expect(await client(fetch).status('job-1')).toMatchObject({ id: 'job-1', status: 'completed' });
    expect(requests[0]?.url.href).toBe(
      'https://api.test/prod/v1-beta/transcript/status?id=job-1&x-api-key=key-123',
    );
  });

  it('retries a connection failure, a 503 and a 429 (after its Retry-After), and not a 400', async () => {
    let thrown = false;
    const { fetch, requests } = scriptedFetch([
      () => {
        thrown = true;
        throw new TypeError('fetch failed');
      },
      json(503, { error: { code: 'internal', message: 'down' } }),
      json(429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '0' }),
      json(200, record('queued')),
    ]);
    expect((await client(fetch).status('job-1')).status).toBe('queued');
    expect(thrown).toBe(true);
    expect(requests).toHaveLength(4);

    const refused = scriptedFetch([
      json(400, { error: { code: 'invalid_request', message: 'no', field: 'id' } }),
    ]);
    const error = await client(refused.fetch)
      .status('x')
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, code: 'invalid_request', field: 'id' });
    expect(refused.requests).toHaveLength(1);
  });

  it('gives up after its attempts with the last refusal', async () => {
    const { fetch, requests } = scriptedFetch([json(502, { message: 'Bad gateway' })]);
    await expect(client(fetch).list()).rejects.toMatchObject({ status: 502, code: 'http_502' });
    expect(requests).toHaveLength(4);
  });

  it('waits with growing pauses until the job is completed or in error, and no longer', async () => {
    for (const end of ['completed', 'error'] as const) {
      const { fetch, requests } = scriptedFetch([
        json(200, record('queued')),
        json(200, record('processing')),
        json(200, record(end)),
        json(200, record(end)),
      ]);
      const seen: string[] = [];
      const done = await client(fetch).wait('job-1', {
        intervalMs: 1,
        onStatus: (status) => seen.push(status.status),
      });
      expect(done.status).toBe(end);
      expect(seen).toEqual(['queued', 'processing', end]);
      expect(requests).toHaveLength(3);
    }
    const { fetch } = scriptedFetch([json(200, record('processing'))]);
    await expect(client(fetch).wait('job-1', { intervalMs: 5, timeoutMs: 30 })).rejects.toBeInstanceOf(
      WaitTimeout,
    );
  });

  it('submits a small file in the form with its options as string parts and an Idempotency-Key, reporting progress', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'client-'));
    const path = join(folder, 'call.wav');
    await writeFile(path, Buffer.alloc(700_000, 7));
    const { fetch, requests } = scriptedFetch([json(500, {}), json(200, { id: 'job-1', status: 'queued' })]);
    const progress: number[] = [];
    await client(fetch).submitFile(path, {
      speaker_diarization: true,
      punctuate: false,
      speakers_expected: 2,
      onProgress: ({ via, bytesSent, bytesTotal }) => {
        expect(via).toBe('direct');
        expect(bytesTotal).toBe(700_000);
        progress.push(bytesSent);
      },
    });
    // A retry sends the same body with the same key: the server makes one job of both.
    expect(requests).toHaveLength(2);
    const [first, second] = requests;
    expect(first?.headers.get('idempotency-key')).toMatch(/^[0-9a-f-]{36}$/);
    expect(second?.headers.get('idempotency-key')).toBe(first?.headers.get('idempotency-key'));
    expect(Buffer.from(second?.body ?? []).equals(Buffer.from(first?.body ?? []))).toBe(true);
    const form = await new Response(Buffer.from(second?.body ?? []), {
      headers: { 'content-type': second?.headers.get('content-type') ?? '' },
    }).formData();
    expect(form.get('speaker_diarization')).toBe('true');
    expect(form.get('punctuate')).toBe('false');
    expect(form.get('speakers_expected')).toBe('2');
    expect((form.get('audio') as File).size).toBe(700_000);
    expect(Number(second?.headers.get('content-length'))).toBe(second?.body.length);
    // Each attempt reports from 0 to the whole file, in order.
    const attempts = progress.reduce<number[][]>((runs, sent) => {
      if (sent === 0) runs.push([]);
      runs.at(-1)?.push(sent);
      return runs;
    }, []);
    expect(attempts).toHaveLength(2);
    for (const run of attempts) {
      expect(run.at(-1)).toBe(700_000);
      expect(run.length).toBeGreaterThan(2);
      expect([...run].sort((a, b) => a - b)).toEqual(run);
    }
  });

  it('uploads a file over the direct limit by presigned PUT, then submits its audio_ref', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'client-'));
    const path = join(folder, 'long.wav');
    const size = MAX_DIRECT_UPLOAD_BYTES + 1;
    await writeFile(path, Buffer.alloc(size, 1));
    const ticket = {
      audio_ref: 'up_x_y',
      upload_url: 'https://bucket.test/uploads/t/up_x_y?X-Amz-Signature=s',
      method: 'PUT',
      headers: { 'content-length': String(size), 'content-type': 'application/octet-stream' },
      expires_at: '2026-11-23T00:00:00.000Z',
      max_bytes: 2 ** 31,
    };
    const { fetch, requests } = scriptedFetch([
      json(200, ticket),
      () => new Response(null, { status: 200 }),
      json(200, { id: 'job-2', status: 'queued' }),
    ]);
    const progress: number[] = [];
    const submitted = await client(fetch).submitFile(path, {
      onProgress: ({ via, bytesSent }) => {
        expect(via).toBe('presigned');
        progress.push(bytesSent);
      },
    });
    expect(submitted.id).toBe('job-2');
    const [upload, put, submit] = requests;
    expect(JSON.parse(Buffer.from(upload?.body ?? []).toString())).toEqual({ size });
    expect(put?.method).toBe('PUT');
    expect(put?.url.href).toBe(ticket.upload_url);
    expect(put?.body.length).toBe(size);
    expect(put?.headers.get('content-length')).toBe(String(size));
    const form = await new Response(Buffer.from(submit?.body ?? []), {
      headers: { 'content-type': submit?.headers.get('content-type') ?? '' },
    }).formData();
    expect(form.get('audio_ref')).toBe('up_x_y');
    expect(form.get('audio')).toBeNull();
    // The upload request and the submission carry one key: a retried submission finds the same job.
    expect(submit?.headers.get('idempotency-key')).toBe(upload?.headers.get('idempotency-key'));
    expect(progress.at(-1)).toBe(size);
    expect(progress.length).toBeGreaterThan(10);
  });

  it('refuses an upload the storage refused, and a file that is not there', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'client-'));
    const path = join(folder, 'long.wav');
    await writeFile(path, Buffer.alloc(MAX_DIRECT_UPLOAD_BYTES + 1));
    const ticket = { audio_ref: 'r', upload_url: 'https://bucket.test/u', method: 'PUT', headers: {} };
    const { fetch } = scriptedFetch([json(200, ticket), () => new Response('<Error/>', { status: 403 })]);
    await expect(client(fetch).submitFile(path)).rejects.toMatchObject({
      status: 403,
      code: 'upload_failed',
    });
    await expect(client(fetch).submitFile(join(folder, 'missing.wav'))).rejects.toMatchObject({
      code: 'ENOENT',
    });
    await expect(client(fetch).submitFile(folder)).rejects.toMatchObject({ code: 'EISDIR' });
  });
});

describe('verifyWebhook', () => {
  const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
  const body = JSON.stringify({ type: 'transcript.completed', id: 'job-1', status: 'completed' });

  function signed(key: string, at = new Date()) {
    return {
      'webhook-id': 'msg_job-1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(key).sign('msg_job-1', at, body),
    };
  }

  it('answers the event of a body signed with the secret, or with either secret after a rotation', () => {
    expect(verifyWebhook(body, signed(secret), secret)).toMatchObject({ id: 'job-1' });
    const rotated = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;
    expect(verifyWebhook(body, new Headers(signed(secret)), [rotated, secret])).toMatchObject({
      id: 'job-1',
    });
  });

  it('throws for another secret, a changed body, an old timestamp or missing headers', () => {
    const other = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
    expect(() => verifyWebhook(body, signed(other), secret)).toThrow();
    expect(() => verifyWebhook(body.replace('completed', 'error'), signed(secret), secret)).toThrow();
    expect(() => verifyWebhook(body, signed(secret, new Date(Date.now() - 3_600_000)), secret)).toThrow();
    expect(() => verifyWebhook(body, {}, secret)).toThrow();
    expect(() => verifyWebhook(body, signed(secret), [])).toThrow();
  });
});
