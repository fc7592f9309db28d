import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { API_KEY_PARAMETER } from '#commons/contract';
import { logger } from '#commons/logger';
import { contentSecurityPolicy } from '#console/page';
import { RequestError, type RequestErrorCode } from '#core/errors';
import { IDEMPOTENT_REPLAYED_HEADER } from '#core/idempotency';

export type HttpEvent = APIGatewayProxyEvent;
export type HttpResult = APIGatewayProxyResult;

/** The HTTP status of each refusal: the only place where the domain's errors meet HTTP. */
const HTTP_STATUS: Record<RequestErrorCode, number> = {
  invalid_request: 400,
  invalid_option: 400,
  missing_audio: 400,
  unsupported_language: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  not_found: 404,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  conflict: 409,
  internal: 500,
};

export function jsonResponse(statusCode: number, body: unknown): HttpResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
    body: JSON.stringify(body),
  };
}

/** The 200 answer an `Idempotency-Key` repeat gets: the first one's, with a header that tells it is a repeat. */
export function replayedResponse(body: unknown): HttpResult {
  const response = jsonResponse(200, body);
  response.headers = { ...response.headers, [IDEMPOTENT_REPLAYED_HEADER]: 'true' };
  return response;
}

/**
 * A page of the service (console, API reference): its inline script and style are allowed by a nonce
 * made for this response, and nothing else is (see contentSecurityPolicy), but for the media bucket's
 * presigned URLs on a page that plays and uploads audio.
 */
export function pageResponse(render: (nonce: string) => string, mediaOrigin?: string): HttpResult {
  const nonce = randomBytes(16).toString('base64');
  return {
    statusCode: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': contentSecurityPolicy(nonce, mediaOrigin),
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
    },
    body: render(nonce),
  };
}

/** A refusal as the API answers it: its status and `{error: {code, message, field?}}`. */
export function errorResponse(error: RequestError): HttpResult {
  const response = jsonResponse(HTTP_STATUS[error.code], {
    error: { code: error.code, message: error.message, ...(error.field ? { field: error.field } : {}) },
  });
  if (error.retryAfterSeconds !== undefined) {
    response.headers = { ...response.headers, 'retry-after': String(error.retryAfterSeconds) };
  }
  return response;
}

const INTERNAL_ERROR = new RequestError('internal', 'Internal error. Please retry later.');

/**
 * Wraps an API handler: RequestErrors become their JSON error response, anything else is logged and
 * answered as a bare 500 so that no internal detail reaches the client.
 */
export function httpHandler(
  handle: (event: HttpEvent) => Promise<HttpResult>,
): (event: HttpEvent) => Promise<HttpResult> {
  return async (event) => {
    try {
      return await handle(event);
    } catch (error) {
      if (error instanceof RequestError) return errorResponse(error);
      logger.error('Unhandled error', { error, path: event.path, method: event.httpMethod });
      return errorResponse(INTERNAL_ERROR);
    }
  };
}

export function headerValue(
  headers: Record<string, string | undefined> | null,
  name: string,
): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/** The tenant the authorizer resolved from the API key. */
export function tenantIdOf(event: HttpEvent): string {
  const tenantId = event.requestContext.authorizer?.tenantId;
  if (typeof tenantId !== 'string' || tenantId === '')
    throw new Error('The request reached a handler without a tenant.');
  return tenantId;
}

/**
 * The query parameters of a route, after refusing what the route does not take: an unknown parameter
 * or one sent twice is a 400 naming it, rather than silently ignored. The API key may always come.
 */
export function queryParameters<Name extends string>(
  event: HttpEvent,
  accepted: readonly Name[],
): Partial<Record<Name, string>> {
  const known = new Set<string>([...accepted, API_KEY_PARAMETER]);
  for (const [name, values] of Object.entries(event.multiValueQueryStringParameters ?? {})) {
    if (!known.has(name)) {
      throw new RequestError(
        'invalid_request',
        `Unknown query parameter "${name}". This route takes: ${accepted.join(', ') || 'none'}.`,
        name,
      );
    }
    if ((values?.length ?? 0) > 1) {
      throw new RequestError(
        'invalid_request',
        `The query parameter "${name}" is sent more than once.`,
        name,
      );
    }
  }
  const parameters: Partial<Record<Name, string>> = {};
  for (const name of accepted) {
    const value = event.queryStringParameters?.[name];
    if (value !== undefined) parameters[name] = value;
  }
  return parameters;
}

/** The `id` query parameter that names a job; a 400 naming the field when it is absent. */
export function requiredJobId(id: string | undefined): string {
  const trimmed = id?.trim();
  if (!trimmed)
    throw new RequestError('invalid_request', 'Pass the job id in the "id" query parameter.', 'id');
  return trimmed;
}

/** Size in bytes of the request body as the client sent it. */
export function bodyByteLength(event: HttpEvent): number {
  const body = event.body ?? '';
  if (!event.isBase64Encoded) return Buffer.byteLength(body, 'utf8');
  const padding = body.endsWith('==') ? 2 : body.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((body.length * 3) / 4) - padding);
}

/** Base64 characters decoded per chunk; a multiple of 4 so that chunks decode independently. */
const BASE64_CHUNK = 64 * 1024;

/** The body as a byte stream, decoded chunk by chunk so that it is never held twice. */
export function bodyStream(event: HttpEvent): Readable {
  const body = event.body ?? '';
  if (!event.isBase64Encoded) return Readable.from([Buffer.from(body, 'utf8')]);
  return Readable.from(
    (function* () {
      for (let offset = 0; offset < body.length; offset += BASE64_CHUNK) {
        yield Buffer.from(body.slice(offset, offset + BASE64_CHUNK), 'base64');
      }
    })(),
  );
}
