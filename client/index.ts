import { randomUUID } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import createFetchClient, { type Client } from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import { API_KEY_PARAMETER, MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import type { components, operations, paths } from './api-types.ts';
import { type JobOptions, optionsForm, uploadVia } from './submission.ts';

export type { JobOptions } from './submission.ts';

/**
 * A typed client of the transcription API. Every route's parameters and answers are the types
 * openapi-typescript generates from the OpenAPI document (`client/api-types.ts`, `npm run openapi`),
 * and the requests go through openapi-fetch, so that a change of the document that the client does not
 * follow fails the type check. Node.js 20 or later (global fetch, `fs.openAsBlob`).
 */

export type SubmissionRecord = components['schemas']['SubmissionRecord'];
export type StatusRecord = components['schemas']['StatusRecord'];
export type JobList = components['schemas']['JobList'];
export type JobSummary = components['schemas']['JobSummary'];
export type DeletionRecord = components['schemas']['DeletionRecord'];
export type UploadTicket = components['schemas']['UploadTicket'];
export type WebhookEvent = components['schemas']['WebhookEvent'];
export type ApiErrorBody = components['schemas']['Error'];
export type JobStatus = StatusRecord['status'];
export type ExportFormat = operations['export']['parameters']['query']['format'];
export type ListQuery = NonNullable<operations['list']['parameters']['query']>;

export interface UploadProgress {
  /** `direct`: the file inside the submission's form; `presigned`: a PUT to the upload URL. */
  via: 'direct' | 'presigned';
  bytesSent: number;
  bytesTotal: number;
}

export interface SubmitFileOptions extends JobOptions {
  /** Called as the file's bytes are sent (read by the HTTP client, about as they leave). */
  onProgress?: (progress: UploadProgress) => void;
  /** Sent as `Idempotency-Key`; by default a new UUID per call, so that retries never make two jobs. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** Called with every status read. */
  onStatus?: (record: StatusRecord) => void;
  /** First pause between reads (1 s); each next one is `factor` (1.25) times longer, up to `maxIntervalMs` (10 s). */
  intervalMs?: number;
  factor?: number;
  maxIntervalMs?: number;
  /** Give up (WaitTimeout) after this long; by default wait as long as it takes. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** The API's `{base_url}`, e.g. `https://abc.execute-api.us-east-1.amazonaws.com/prod/`. */
  baseUrl: string;
  apiKey: string;
  /** Tries of a request that failed for a reason a retry may cure (no connection, 429, 5xx). */
  attempts?: number;
  /** Pause before the second try (doubling each time), unless the answer says how long (`Retry-After`). */
  retryDelayMs?: number;
  fetch?: typeof fetch;
}

/** A refusal of the API: its HTTP status and the `{error: {code, message, field?}}` it answered. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** `wait` ran out of time; the job goes on. */
export class WaitTimeout extends Error {
  constructor(readonly last: StatusRecord) {
    super(`Job ${last.id} is still ${last.status}.`);
    this.name = 'WaitTimeout';
  }
}

/** Statuses a retry may cure: too many requests, and the service or its gateway failing. */
const RETRIED_STATUSES = new Set([429, 500, 502, 503, 504]);
/** Bytes read from a file per chunk of a streamed body, and so the step of the progress reports. */
const CHUNK_BYTES = 256 * 1024;

export class TranscriptionClient {
  private readonly api: Client<paths>;
  private readonly attempts: number;
  private readonly retryDelayMs: number;
  private readonly fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.attempts = options.attempts ?? 4;
    this.retryDelayMs = options.retryDelayMs ?? 1000;
    this.fetch = options.fetch ?? globalThis.fetch;
    this.api = createFetchClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      fetch: (request) => this.fetch(request),
    });
    // The key goes in the query string, where API Gateway's authorizer cache looks for it.
    this.api.use({
      onRequest({ request }) {
        const url = new URL(request.url);
        url.searchParams.set(API_KEY_PARAMETER, options.apiKey);
        return new Request(url, request);
      },
    });
  }

  /**
   * Submits a local file: inside the form when the submission fits the direct-upload limit, otherwise
   * by a presigned upload (`POST /v1-beta/upload`, a PUT of the file, then `audio_ref`). Progress is
   * reported for the file's bytes either way.
   */
  async submitFile(path: string, options: SubmitFileOptions = {}): Promise<SubmissionRecord> {
    // A missing file, a folder: an error with the file system's code, before anything is sent.
    if (!(await stat(path)).isFile()) {
      throw Object.assign(new Error(`${path} is not a file.`), { code: 'EISDIR' });
    }
    const file = await openAsBlob(path);
    const idempotencyKey = options.idempotencyKey ?? randomUUID();
    if (uploadVia(file.size, MAX_DIRECT_UPLOAD_BYTES) === 'direct') {
      const form = optionsForm(options);
      form.append('audio', new File([file], basename(path)));
      // The form as it goes on the wire: its length is known, and it is sent in chunks that are counted.
      const encoded = new Response(form);
      const type = encoded.headers.get('content-type') ?? 'multipart/form-data';
      const body = await encoded.blob();
      return this.retrying(() =>
        this.api.POST('/v1-beta/transcript', {
          params: { header: { 'Idempotency-Key': idempotencyKey } },
          body: {},
          bodySerializer: () => counted(body, file.size, 'direct', options),
          headers: { 'content-type': type, 'content-length': String(body.size) },
          duplex: 'half',
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      );
    }
    const ticket = await this.createUpload(file.size, idempotencyKey, options.signal);
    await this.putFile(ticket, file, options);
    return this.submitForm(withPart(optionsForm(options), 'audio_ref', ticket.audio_ref), idempotencyKey);
  }

  /** Submits audio the service fetches from a public https address. */
  async submitUrl(
    audioUrl: string,
    options: JobOptions & { idempotencyKey?: string } = {},
  ): Promise<SubmissionRecord> {
    const form = withPart(optionsForm(options), 'audio_url', audioUrl);
    return this.submitForm(form, options.idempotencyKey ?? randomUUID());
  }

  async status(id: string): Promise<StatusRecord> {
    return this.retrying(() => this.api.GET('/v1-beta/transcript/status', { params: { query: { id } } }));
  }

  /** Reads the status until the job is `completed` or in `error`, pausing longer each time. */
  async wait(id: string, options: WaitOptions = {}): Promise<StatusRecord> {
    const { factor = 1.25, maxIntervalMs = 10_000, timeoutMs } = options;
    const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
    let pause = options.intervalMs ?? 1000;
    for (;;) {
      const record = await this.status(id);
      options.onStatus?.(record);
      if (record.status === 'completed' || record.status === 'error') return record;
      if (Date.now() >= deadline) throw new WaitTimeout(record);
      await sleep(Math.min(pause, Math.max(0, deadline - Date.now())), options.signal);
      pause = Math.min(maxIntervalMs, pause * factor);
    }
  }

  /** One page of the account's jobs, newest first; pass `next_cursor` back as `cursor` for the next. */
  async list(query: ListQuery = {}): Promise<JobList> {
    return this.retrying(() => this.api.GET('/v1-beta/transcripts', { params: { query } }));
  }

  /** Every job of the account that matches, page by page. */
  async *listAll(query: Omit<ListQuery, 'cursor'> = {}): AsyncGenerator<JobSummary> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...query, ...(cursor ? { cursor } : {}) });
      yield* page.jobs;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** A completed job's transcript as a file: plain text, SubRip or WebVTT. */
  async export(id: string, format: ExportFormat): Promise<string> {
    return this.retrying(() =>
      this.api.GET('/v1-beta/transcript/export', { params: { query: { id, format } }, parseAs: 'text' }),
    );
  }

  /** Deletes a job's audio, result and record; the same answer however often it is asked. */
  async delete(id: string): Promise<DeletionRecord> {
    return this.retrying(() => this.api.DELETE('/v1-beta/transcript', { params: { query: { id } } }));
  }

  /** A presigned upload for a file of `size` bytes. */
  async createUpload(
    size: number,
    idempotencyKey: string = randomUUID(),
    signal?: AbortSignal,
  ): Promise<UploadTicket> {
    return this.retrying(() =>
      this.api.POST('/v1-beta/upload', {
        params: { header: { 'Idempotency-Key': idempotencyKey } },
        body: { size },
        ...(signal ? { signal } : {}),
      }),
    );
  }

  private async putFile(ticket: UploadTicket, file: Blob, options: SubmitFileOptions): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      try {
        response = await this.fetch(ticket.upload_url, {
          method: ticket.method,
          headers: ticket.headers,
          body: counted(file, file.size, 'presigned', options),
          duplex: 'half',
          ...(options.signal ? { signal: options.signal } : {}),
        } as RequestInit);
        await response.body?.cancel();
        if (response.ok) return;
      } catch (error) {
        if (attempt >= this.attempts || options.signal?.aborted) throw error;
      }
      if (response && (!RETRIED_STATUSES.has(response.status) || attempt >= this.attempts)) {
        throw new ApiError(
          response.status,
          'upload_failed',
          `The upload URL answered ${response.status}: the file was not stored.`,
        );
      }
      await sleep(this.retryDelayMs * 2 ** (attempt - 1), options.signal);
    }
  }

  private submitForm(form: FormData, idempotencyKey: string): Promise<SubmissionRecord> {
    return this.retrying(() =>
      this.api.POST('/v1-beta/transcript', {
        params: { header: { 'Idempotency-Key': idempotencyKey } },
        body: {},
        bodySerializer: () => form,
      }),
    );
  }

  /**
   * Makes a request until it succeeds, is refused for good, or has been tried `attempts` times:
   * a connection failure, 429 and 5xx are tried again (after `Retry-After` when the answer has one).
   * Every request the client makes may be repeated safely: reads, deletions, and submissions and
   * upload requests, which carry an `Idempotency-Key`.
   */
  private async retrying<Data>(
    request: () => Promise<{ data?: Data; error?: unknown; response: Response }>,
  ): Promise<Data> {
    for (let attempt = 1; ; attempt++) {
      let outcome: Awaited<ReturnType<typeof request>>;
      try {
        outcome = await request();
      } catch (error) {
        if (attempt >= this.attempts || (error as Error).name === 'AbortError') throw error;
        await sleep(this.retryDelayMs * 2 ** (attempt - 1));
        continue;
      }
      const { data, error, response } = outcome;
      if (response.ok) return data as Data;
      const failure = apiError(response, error);
      if (!RETRIED_STATUSES.has(response.status) || attempt >= this.attempts) throw failure;
      await sleep((failure.retryAfterSeconds ?? 0) * 1000 || this.retryDelayMs * 2 ** (attempt - 1));
    }
  }
}

/** Headers as Node's `IncomingMessage`, a fetch `Headers` or a plain object gives them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Verifies a webhook with the Standard Webhooks library and answers its event; throws when no secret
 * (the current one, or the one it replaced during the day after a rotation) signed this body, or the
 * timestamp is more than five minutes away. Pass the body exactly as received.
 */
export function verifyWebhook(
  body: string,
  headers: WebhookHeaders,
  secrets: string | string[],
): WebhookEvent {
  const flat: Record<string, string> = {};
  const entries = headers instanceof Headers ? headers.entries() : Object.entries(headers);
  for (const [name, value] of entries) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(' ') : value;
  }
  let failure: unknown = new Error('No webhook secret was given.');
  for (const secret of ([] as string[]).concat(secrets)) {
    try {
      return new Webhook(secret).verify(body, flat) as WebhookEvent;
    } catch (error) {
      failure = error;
    }
  }
  throw failure;
}

function withPart(form: FormData, name: 'audio_ref' | 'audio_url', value: string): FormData {
  form.append(name, value);
  return form;
}

/**
 * The bytes of a body as a stream read chunk by chunk on demand, reporting how much of the file has
 * been read: the HTTP client pulls a chunk when it can send it, so what was read is about what left.
 * `fileBytes` of the body are the file's (a form has a little more around it).
 */
function counted(
  body: Blob,
  fileBytes: number,
  via: UploadProgress['via'],
  options: SubmitFileOptions,
): ReadableStream<Uint8Array> {
  let offset = 0;
  const report = () =>
    options.onProgress?.({
      via,
      bytesSent: Math.min(fileBytes, Math.round((offset / body.size) * fileBytes)),
      bytesTotal: fileBytes,
    });
  return new ReadableStream(
    {
      start: report,
      async pull(controller) {
        if (offset >= body.size) {
          controller.close();
          return;
        }
        const end = Math.min(body.size, offset + CHUNK_BYTES);
        controller.enqueue(new Uint8Array(await body.slice(offset, end).arrayBuffer()));
        offset = end;
        report();
      },
    },
    { highWaterMark: 0 },
  );
}

function apiError(response: Response, body: unknown): ApiError {
  const error = (body as Partial<ApiErrorBody> | undefined)?.error;
  const retryAfter = Number(response.headers.get('retry-after'));
  return new ApiError(
    response.status,
    error?.code ?? `http_${response.status}`,
    error?.message ?? `The API answered ${response.status}.`,
    error?.field,
    Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
  );
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
