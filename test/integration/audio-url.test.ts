import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsServices } from '#aws/services';
import { ENV } from '#commons/contract';
import { JobFailure } from '#core/errors';
import { encodeProcessMessage } from '#core/messages';
import { sqsEvent } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { findSample, samplePath } from '#test/helpers/samples';
import { submitForm } from '#test/helpers/submissions';
import { UrlAudioFetcher } from '#worker/audio-fetcher';
import { handler as worker } from '#worker/handler';

/**
 * Audio submitted by address: fetched by the worker from a local HTTP server into S3, and every address
 * that must not be fetched, refused with a precise code.
 */

const audio = readFileSync(
  samplePath(findSample((entry) => entry.kind === 'utterance' && (entry.duration_s ?? 0) > 3)),
);
let server: Server;
let base: string;

beforeAll(async () => {
  process.env[ENV.localMode] = 'true';
  process.env[ENV.maxActiveJobsPerTenant] = '1000';
  await useFreshResources();
  server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    switch (url.pathname) {
      case '/audio.wav':
        response
          .writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(audio.length) })
          .end(audio);
        return;
      case '/moved':
        response.writeHead(302, { location: '/audio.wav' }).end();
        return;
      case '/to':
        response.writeHead(302, { location: url.searchParams.get('target') ?? '/' }).end();
        return;
      case '/loop':
        response.writeHead(302, { location: '/loop' }).end();
        return;
      case '/gone':
        response.writeHead(410).end();
        return;
      case '/huge':
        // Claims 3 GiB; sends a little, then goes away.
        response.writeHead(200, { 'content-length': String(3 * 1024 ** 3) });
        response.write(audio.subarray(0, 1000));
        setTimeout(() => response.destroy(), 200);
        return;
      case '/endless':
        response.writeHead(200, { 'content-type': 'audio/wav' });
        for (let i = 0; i < 20; i++) response.write(audio);
        response.end();
        return;
      case '/stall':
        response.writeHead(200, { 'content-type': 'audio/wav' });
        response.write(audio.subarray(0, 1000));
        return;
      case '/silent':
        return;
      default:
        response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

/** What the fetcher stored, or the JobFailure code it ended with. */
async function fetchWith(fetcher: UrlAudioFetcher, url: string): Promise<string> {
  try {
    let bytes = 0;
    await fetcher.fetchInto(url, async (body) => {
      await pipeline(
        body,
        new Writable({
          write(chunk: Buffer, _encoding, callback) {
            bytes += chunk.length;
            callback();
          },
        }),
      );
      return { bytes };
    });
    return `stored ${bytes}`;
  } catch (error) {
    if (error instanceof JobFailure) return error.code;
    throw error;
  }
}

describe('audio_url', () => {
  it('is fetched by the worker into the store, through a redirect, and transcribed', async () => {
    const form = new FormData();
    form.append('audio_url', `${base}/moved`);
    const { status, body } = await submitForm(form, 'tenant-url');
    expect(status, JSON.stringify(body)).toBe(200);
    const response = await worker(sqsEvent([encodeProcessMessage(body.id ?? '')]));
    expect(response.batchItemFailures).toEqual([]);
    const job = await awsServices().jobs.get(body.id ?? '');
    expect(job?.status, JSON.stringify(job?.error)).toBe('completed');
    expect((await awsServices().media.describe(job?.audioKey ?? ''))?.bytes).toBe(audio.length);
  });

  it('ends the job in download_failed when the address answers an error, with no retry', async () => {
    const form = new FormData();
    form.append('audio_url', `${base}/gone`);
    const { body } = await submitForm(form, 'tenant-url');
    const response = await worker(sqsEvent([encodeProcessMessage(body.id ?? '')]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await awsServices().jobs.get(body.id ?? '')).toMatchObject({
      status: 'error',
      error: { code: 'download_failed', message: expect.stringContaining('410') },
    });
  });

  it('refuses loopback, private, link-local and metadata addresses outside local mode, after DNS and on every redirect', async () => {
    // The test's own server is allowed; where it redirects is not.
    const strict = new UrlAudioFetcher(false, { allowHttp: true, allowAddresses: ['127.0.0.1'] });
    expect(await fetchWith(strict, `${base}/audio.wav`)).toBe(`stored ${audio.length}`);
    for (const target of [
      'http://169.254.169.254/latest/meta-data/',
      'http://10.1.2.3/audio.wav',
      'http://192.168.0.1/audio.wav',
      'http://[::1]/audio.wav',
      'http://0.0.0.0/audio.wav',
    ]) {
      expect(await fetchWith(strict, `${base}/to?target=${encodeURIComponent(target)}`), target).toBe(
        'download_failed',
      );
    }
    // A name that resolves to loopback, with no allowance at all.
    const port = new URL(base).port;
    const bare = new UrlAudioFetcher(false, { allowHttp: true });
    expect(await fetchWith(bare, `http://localhost:${port}/audio.wav`)).toBe('download_failed');
    expect(await fetchWith(new UrlAudioFetcher(false), `${base}/audio.wav`)).toBe('download_failed');
  });

  it('gives up after five redirects, and on a body too large, declared or not', async () => {
    const local = new UrlAudioFetcher(true);
    expect(await fetchWith(local, `${base}/loop`)).toBe('download_failed');
    expect(await fetchWith(local, `${base}/huge`), 'huge').toBe('audio_too_large');
    const small = new UrlAudioFetcher(true, {}, audio.length * 3);
    expect(await fetchWith(small, `${base}/endless`), 'endless').toBe('audio_too_large');
  });

  it('stops waiting for an address that does not answer or stalls, after its tries', async () => {
    const impatient = new UrlAudioFetcher(true, { headersTimeoutMs: 300, idleTimeoutMs: 300 });
    expect(await fetchWith(impatient, `${base}/silent`)).toBe('download_failed');
    expect(await fetchWith(impatient, `${base}/stall`)).toBe('download_failed');
  }, 30_000);

  it('refuses addresses that are not http(s) or carry credentials, at submission', async () => {
    for (const address of [
      'ftp://example.com/a.wav',
      'file:///etc/passwd',
      'not a url',
      'https://user:pass@example.com/a',
    ]) {
      const form = new FormData();
      form.append('audio_url', address);
      const { status, body } = await submitForm(form, 'tenant-url');
      expect(status, address).toBe(400);
      expect(body.error).toMatchObject({ code: 'invalid_option', field: 'audio_url' });
    }
  });
});
