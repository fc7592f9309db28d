import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
} from 'aws-lambda';
import { errorResponse, jsonResponse } from '#api/http';
import { API_KEY_PARAMETER, BINARY_MEDIA_TYPES, STAGE_NAME } from '#commons/contract';
import { REQUEST_ERROR_CODES, RequestError } from '#core/errors';

export type ProxyHandler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;
export type AuthorizerHandler = (
  event: APIGatewayRequestAuthorizerEvent,
) => Promise<APIGatewayAuthorizerResult>;

export interface Route {
  method: string;
  path: string;
  handler: ProxyHandler;
  /** Routes behind the API key authorizer. */
  authorized: boolean;
}

export interface GatewayOptions {
  routes: Route[];
  authorizer: AuthorizerHandler;
  /**
   * Seconds a decision is cached per key, as the stack's authorizer does (0: none). With a cache, the
   * key must come in the query string, API Gateway's identity source: a header alone is refused.
   */
  authorizerCacheSeconds: number;
  /** Largest request body, as Lambda's payload limit imposes behind API Gateway. */
  maxBodyBytes: number;
  /** Answers GET /health; the service is ready when it resolves true. */
  health: () => boolean;
  log: (line: string) => void;
  /** Slow clients are cut off when their headers, or their whole request, take longer (tests shorten them). */
  timeouts?: { headersMs: number; requestMs: number };
}

/** API Gateway's own cap on a request; bodies over the Lambda limit are read and dropped up to it. */
const GATEWAY_MAX_BYTES = 10 * 1024 * 1024;
/** API Gateway's limit on the request line and headers together (REST API quotas). */
const MAX_HEADER_BYTES = 10 * 1024;
/** A client that has not sent its headers, or its whole request, by then is cut off (slow clients). */
const TIMEOUTS = { headersMs: 20_000, requestMs: 120_000 };

/** Whether API Gateway, given the stack's binary media types, passes this content type base64-encoded. */
function isBinary(contentType: string): boolean {
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return BINARY_MEDIA_TYPES.some((pattern) =>
    pattern.endsWith('/*') ? type.startsWith(pattern.slice(0, -1)) : type === pattern,
  );
}

/**
 * A local stand-in for API Gateway (REST, proxy integration): each request becomes the event the
 * Lambda handlers get on AWS, with the request authorizer run first (and its decisions cached). A Deny
 * is answered with 401 and the error the authorizer put in its context, as the stack's ACCESS_DENIED
 * gateway response does. Every answer, protocol errors included, is the API's JSON error shape.
 */
export function createGateway(options: GatewayOptions): Server {
  const decisions = new DecisionCache(options.authorizerCacheSeconds);
  const timeouts = options.timeouts ?? TIMEOUTS;
  const server = createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      // Node checks the timeouts this often; a tenth of the shorter one keeps them close to exact.
      connectionsCheckingInterval: Math.min(30_000, timeouts.headersMs / 10),
      keepAliveTimeout: 5_000,
    },
    (request, response) => {
      const started = Date.now();
      handle(options, decisions, request, response)
        .catch((error: unknown) => {
          options.log(`gateway error: ${error instanceof Error ? error.message : String(error)}`);
          if (!response.headersSent && response.writable) {
            send(response, errorResponse(new RequestError('internal', 'Internal error.')), true);
          }
        })
        .finally(() => {
          // The query string is left out: it carries the API key.
          const path = (request.url ?? '').split('?')[0];
          options.log(`${request.method} ${path} ${response.statusCode} ${Date.now() - started}ms`);
        });
    },
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
    answerProtocolError(error, socket),
  );
  return server;
}

/** Requests Node refuses before they reach a handler (malformed, oversized headers, too slow), in JSON. */
function answerProtocolError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) return;
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, `The request line and headers are limited to ${MAX_HEADER_BYTES} bytes.`]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request was not received in time.']
        : [400, 'The request is not valid HTTP.'];
  const body = JSON.stringify({ error: { code: 'invalid_request', message } });
  socket.end(
    `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\n` +
      `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Authorizer decisions by key, for the cache's lifetime (a revoked key works until its entry expires). */
class DecisionCache {
  private readonly entries = new Map<string, { decision: APIGatewayAuthorizerResult; expires: number }>();

  constructor(private readonly seconds: number) {}

  get enabled(): boolean {
    return this.seconds > 0;
  }

  async decide(
    key: string,
    ask: () => Promise<APIGatewayAuthorizerResult>,
  ): Promise<APIGatewayAuthorizerResult> {
    const now = Date.now();
    const cached = this.entries.get(key);
    if (this.enabled && cached && cached.expires > now) return cached.decision;
    const decision = await ask();
    if (this.enabled) {
      this.entries.set(key, { decision, expires: now + this.seconds * 1000 });
      for (const [entry, { expires }] of this.entries) if (expires <= now) this.entries.delete(entry);
    }
    return decision;
  }
}

async function handle(
  options: GatewayOptions,
  decisions: DecisionCache,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  if (request.method === 'GET' && url.pathname === '/health') {
    const ready = options.health();
    send(response, jsonResponse(ready ? 200 : 503, { status: ready ? 'ok' : 'starting' }));
    return;
  }
  const route = options.routes.find(
    (candidate) => candidate.path === url.pathname && candidate.method === request.method,
  );
  if (!route) {
    // As API Gateway: a path or method with no route is the MISSING_AUTHENTICATION_TOKEN response, a 404.
    request.resume();
    send(response, errorResponse(new RequestError('not_found', 'No such route.')));
    return;
  }

  const body = await readBody(request, options.maxBodyBytes);
  if (body === 'too_large') {
    send(
      response,
      errorResponse(
        new RequestError('payload_too_large', `Request bodies are limited to ${options.maxBodyBytes} bytes.`),
      ),
      true,
    );
    return;
  }

  const headers = singleHeaders(request);
  const query = queryParameters(url);
  const single = lastValues(query);
  let authorizerContext: Record<string, string | number | boolean> = {};
  if (route.authorized) {
    const key = single[API_KEY_PARAMETER];
    if (decisions.enabled && !key) {
      // API Gateway answers without calling a caching authorizer whose identity source is absent.
      send(
        response,
        errorResponse(
          new RequestError(
            'missing_api_key',
            `Pass your API key in the ${API_KEY_PARAMETER} query parameter.`,
          ),
        ),
      );
      return;
    }
    const decision = await decisions.decide(key ?? '', () =>
      options.authorizer({
        type: 'REQUEST',
        methodArn: `arn:aws:execute-api:us-east-1:000000000000:local/${STAGE_NAME}/${route.method}${route.path}`,
        resource: route.path,
        path: url.pathname,
        httpMethod: route.method,
        headers,
        multiValueHeaders: multiValue(headers),
        queryStringParameters: single,
        multiValueQueryStringParameters: query,
        pathParameters: {},
        stageVariables: {},
        requestContext: requestContext(route, {}) as APIGatewayRequestAuthorizerEvent['requestContext'],
      }),
    );
    const context = decision.context ?? {};
    const allowed = decision.policyDocument.Statement.every(
      (statement) => 'Effect' in statement && statement.Effect === 'Allow',
    );
    if (!allowed) {
      const code = REQUEST_ERROR_CODES.find((known) => known === context.errorCode) ?? 'invalid_api_key';
      send(response, errorResponse(new RequestError(code, String(context.errorMessage ?? 'Unauthorized.'))));
      return;
    }
    authorizerContext = { ...context, principalId: decision.principalId };
  }

  const contentType = headers['content-type'] ?? '';
  const binary = isBinary(contentType);
  const hasQuery = Object.keys(query).length > 0;
  const result = await route.handler({
    resource: route.path,
    path: url.pathname,
    httpMethod: route.method,
    headers,
    multiValueHeaders: multiValue(headers),
    queryStringParameters: hasQuery ? single : null,
    multiValueQueryStringParameters: hasQuery ? query : null,
    pathParameters: null,
    stageVariables: null,
    body: body.length === 0 ? null : body.toString(binary ? 'base64' : 'utf8'),
    isBase64Encoded: binary && body.length > 0,
    requestContext: requestContext(route, authorizerContext),
  });
  send(response, result);
}

/**
 * Reads the body whole, as API Gateway does before invoking, with or without a Content-Length. A body
 * over `limit` is drained, not kept, up to API Gateway's own cap; a client that goes away rejects.
 */
function readBody(request: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > GATEWAY_MAX_BYTES) {
        request.pause();
        resolve('too_large');
      }
    });
    request.on('end', () => resolve(size > limit ? 'too_large' : Buffer.concat(chunks)));
    request.on('aborted', () => reject(new Error('The client went away before sending its whole body.')));
    request.on('error', reject);
  });
}

function singleHeaders(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

/** Every value of every query parameter, as API Gateway's multiValueQueryStringParameters. */
function queryParameters(url: URL): Record<string, string[]> {
  const query: Record<string, string[]> = {};
  for (const [name, value] of url.searchParams) query[name] = [...(query[name] ?? []), value];
  return query;
}

/** The last value of each parameter, as API Gateway's queryStringParameters. */
function lastValues(query: Record<string, string[]>): Record<string, string> {
  return Object.fromEntries(Object.entries(query).map(([name, values]) => [name, values.at(-1) ?? '']));
}

function multiValue(values: Record<string, string>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, [value]]));
}

function requestContext(
  route: Route,
  authorizer: Record<string, string | number | boolean>,
): APIGatewayProxyEvent['requestContext'] {
  const now = new Date();
  return {
    accountId: '000000000000',
    apiId: 'local',
    authorizer,
    protocol: 'HTTP/1.1',
    httpMethod: route.method,
    path: `/${STAGE_NAME}${route.path}`,
    stage: STAGE_NAME,
    requestId: randomUUID(),
    requestTimeEpoch: now.getTime(),
    resourceId: 'local',
    resourcePath: route.path,
    identity: {
      accessKey: null,
      accountId: null,
      apiKey: null,
      apiKeyId: null,
      caller: null,
      clientCert: null,
      cognitoAuthenticationProvider: null,
      cognitoAuthenticationType: null,
      cognitoIdentityId: null,
      cognitoIdentityPoolId: null,
      principalOrgId: null,
      sourceIp: '127.0.0.1',
      user: null,
      userAgent: null,
      userArn: null,
    },
  };
}

function send(response: ServerResponse, result: APIGatewayProxyResult, closeConnection = false): void {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  headers['content-type'] ??= 'application/json; charset=utf-8';
  if (closeConnection) headers.connection = 'close';
  const body = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : Buffer.from(result.body, 'utf8');
  headers['content-length'] = String(body.length);
  response.writeHead(result.statusCode, headers);
  response.end(body);
}
