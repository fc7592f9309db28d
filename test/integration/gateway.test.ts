import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as authorizer } from '#api/authorizer';
import { jsonResponse } from '#api/http';
import { awsServices } from '#aws/services';
import { createApiKey } from '#core/api-keys';
import { createGateway } from '#local/gateway';
import { useFreshResources } from '#test/helpers/fresh-resources';

/**
 * The local stand-in for API Gateway over real sockets: every answer, protocol errors included, is
 * the API's JSON error shape; slow, lying and oversized requests are cut off; the authorizer's cache
 * behaves as the stack's does.
 */

const LIMIT = 1000;
const seen: APIGatewayProxyEvent[] = [];
const servers: Server[] = [];
let key: string;
let keyId: string;

beforeAll(async () => {
  await useFreshResources();
  ({
    key,
    record: { keyId },
  } = await createApiKey(awsServices().apiKeys, { tenantId: 'acme', now: new Date() }));
});

afterAll(async () => {
  for (const server of servers) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

async function gateway(authorizerCacheSeconds: number): Promise<string> {
  const server = createGateway({
    routes: [
      {
        method: 'POST',
        path: '/echo',
        authorized: true,
        handler: async (event) => {
          seen.push(event);
          return jsonResponse(200, {
            tenant: event.requestContext.authorizer?.tenantId,
            bytes: event.body?.length ?? 0,
          });
        },
      },
    ],
    authorizer,
    authorizerCacheSeconds,
    maxBodyBytes: LIMIT,
    health: () => true,
    log: () => undefined,
    timeouts: { headersMs: 1000, requestMs: 2000 },
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Writes raw bytes to the gateway (optionally in timed pieces) and answers the whole raw response. */
function raw(host: string, pieces: (string | Buffer)[], pauseMs = 0): Promise<string> {
  const [hostname, port] = host.split(':');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, async () => {
      for (const piece of pieces) {
        if (socket.destroyed) break;
        socket.write(piece);
        if (pauseMs) await new Promise((next) => setTimeout(next, pauseMs));
      }
    });
    let response = '';
    socket.on('data', (chunk) => {
      response += chunk.toString('utf8');
    });
    socket.on('close', () => resolve(response));
    socket.on('error', (error) => (response ? resolve(response) : reject(error)));
  });
}

function parse(response: string): { status: number; headers: string; body: { error?: { code: string } } } {
  const [head = '', body = ''] = response.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), headers: head, body: body ? JSON.parse(body) : {} };
}

const post = (host: string, path: string, body: string, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n${extra}\r\n${body}`;

describe('the local gateway', () => {
  let host: string;
  beforeAll(async () => {
    host = await gateway(300);
  });

  it('answers malformed requests, oversized headers and unknown routes in JSON', async () => {
    for (const [request, status] of [
      ['NONSENSE\r\n\r\n', 400],
      [`GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(11 * 1024)}\r\n\r\n`, 431],
      [`GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 404],
      [`GET /echo?x-api-key=${'k'.repeat(20)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 404],
    ] as const) {
      const response = parse(await raw(host, [request]));
      expect(response.status, request.slice(0, 30)).toBe(status);
      expect(response.headers).toMatch(/content-type: application\/json/i);
      expect(response.body.error?.code).toMatch(/^(invalid_request|not_found)$/);
    }
  });

  it('refuses a body over the limit with and without a length, and never passes it on', async () => {
    const before = seen.length;
    const big = 'x'.repeat(LIMIT + 1);
    const withLength = parse(await raw(host, [post(host, `/echo?x-api-key=${key}`, big)]));
    expect(withLength).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } });
    const chunked = parse(
      await raw(host, [
        `POST /echo?x-api-key=${key} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
        `${(600).toString(16)}\r\n${'y'.repeat(600)}\r\n`,
        `${(600).toString(16)}\r\n${'y'.repeat(600)}\r\n0\r\n\r\n`,
      ]),
    );
    expect(chunked).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } });
    expect(seen.length).toBe(before);
  });

  it('cuts off a client that trickles its headers, or never sends the body its length promised', async () => {
    const slow = parse(
      await raw(host, ['POST /echo HTTP/1.1\r\n', 'Host: x\r\n', 'X-A: 1\r\n', 'X-B: 2\r\n'], 600),
    );
    expect(slow).toMatchObject({ status: 408, body: { error: { code: 'invalid_request' } } });
    const lying = parse(
      await raw(host, [
        `POST /echo?x-api-key=${key} HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n`,
        'short',
      ]),
    );
    expect(lying).toMatchObject({ status: 408, body: { error: { code: 'invalid_request' } } });
  });

  it('keeps serving after a client goes away in the middle of its body', async () => {
    const [hostname, port] = host.split(':');
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          `POST /echo?x-api-key=${key} HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n${'z'.repeat(100)}`,
        );
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 100);
      });
    });
    const after = parse(await raw(host, [post(host, `/echo?x-api-key=${key}`, 'fine')]));
    expect(after).toMatchObject({ status: 200, body: { tenant: 'acme', bytes: 4 } });
  });

  it('passes repeated query parameters on as API Gateway does: every value, the last as the single one', async () => {
    await raw(host, [post(host, `/echo?x-api-key=${key}&id=a&id=b`, '')]);
    const event = seen.at(-1);
    expect(event?.multiValueQueryStringParameters?.id).toEqual(['a', 'b']);
    expect(event?.queryStringParameters?.id).toBe('b');
  });
});

describe('the authorizer cache, as on AWS', () => {
  it('needs the key in the query string while caching, and takes it from a header without a cache', async () => {
    const cached = await gateway(300);
    const uncached = await gateway(0);
    const headerOnly = (host: string) => raw(host, [post(host, '/echo', '', `x-api-key: ${key}\r\n`)]);
    expect(parse(await headerOnly(cached))).toMatchObject({
      status: 401,
      body: { error: { code: 'missing_api_key' } },
    });
    expect(parse(await headerOnly(uncached))).toMatchObject({ status: 200, body: { tenant: 'acme' } });
  });

  it('lets a revoked key work until its cached decision expires, then refuses it', async () => {
    const host = await gateway(2);
    const call = async () => parse(await raw(host, [post(host, `/echo?x-api-key=${key}`, '')]));
    expect((await call()).status).toBe(200);
    expect(await awsServices().apiKeys.revoke(keyId, new Date())).toBe(true);
    expect((await call()).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect(await call()).toMatchObject({ status: 401, body: { error: { code: 'invalid_api_key' } } });
  });
});
