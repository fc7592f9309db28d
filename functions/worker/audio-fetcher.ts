import { pipeline, Transform } from 'node:stream';
import { MAX_UPLOAD_BYTES } from '#commons/contract';
import { type OutboundPolicy, OutboundRefused, openUrl } from '#commons/outbound-http';
import { JobFailure } from '#core/errors';
import type { AudioFetcher } from '#core/ports';

/** Attempts at one address before giving up, and the pause before each next one. */
const ATTEMPTS = 3;
const PAUSE_MS = [1_000, 4_000];

class TooLarge extends Error {}

/**
 * The worker's fetcher of `audio_url`s: https only (http too locally), public addresses only, five
 * redirects at most, each checked; a 2 GiB cap counted as the bytes arrive; failures that another try
 * may cure (no answer, a broken connection, 5xx, 408, 429) tried three times.
 */
export class UrlAudioFetcher implements AudioFetcher {
  private readonly policy: OutboundPolicy;

  constructor(
    local: boolean,
    policy: Partial<OutboundPolicy> = {},
    private readonly maxBytes = MAX_UPLOAD_BYTES,
  ) {
    this.policy = { local, maxRedirects: 5, headersTimeoutMs: 15_000, idleTimeoutMs: 30_000, ...policy };
  }

  async fetchInto(
    url: string,
    store: (body: NodeJS.ReadableStream) => Promise<{ bytes: number }>,
  ): Promise<{ bytes: number }> {
    let last = 'no answer';
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, PAUSE_MS[attempt - 2] ?? 4_000));
      let response: Awaited<ReturnType<typeof openUrl>>;
      try {
        response = await openUrl(url, this.policy);
      } catch (error) {
        if (error instanceof OutboundRefused)
          throw new JobFailure('download_failed', `audio_url: ${error.message}`);
        last = error instanceof Error ? error.message : String(error);
        continue;
      }
      const { status, body } = response;
      if (status < 200 || status >= 300) {
        body.resume();
        last = `the address answered ${status}`;
        if (status >= 500 || status === 408 || status === 429) continue;
        throw new JobFailure('download_failed', `audio_url: ${last}.`);
      }
      if (Number(body.headers['content-length']) > this.maxBytes) {
        body.destroy();
        throw tooLarge(this.maxBytes);
      }
      try {
        return await store(capped(body, this.maxBytes));
      } catch (error) {
        if (error instanceof TooLarge) throw tooLarge(this.maxBytes);
        last = error instanceof Error ? error.message : String(error);
      }
    }
    throw new JobFailure('download_failed', `audio_url could not be fetched: ${last}.`);
  }
}

function tooLarge(maxBytes: number): JobFailure {
  return new JobFailure('audio_too_large', `audio_url names a file over ${maxBytes} bytes.`);
}

/** The body as it arrives, failing (and so ending the upload) once it passes the size limit. */
function capped(body: NodeJS.ReadableStream, maxBytes: number): NodeJS.ReadableStream {
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      callback(bytes > maxBytes ? new TooLarge() : null, chunk);
    },
  });
  // The pipeline carries the body's own failures (a stall, a reset) to the reader of the counter.
  pipeline(body, counter, () => undefined);
  return counter;
}
