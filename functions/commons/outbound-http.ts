import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { useAgent } from 'request-filtering-agent';
import { type ClientUrlRules, clientUrlProblem } from './client-urls.ts';

/**
 * Requests to addresses a client gave us (an `audio_url`, a webhook): the one guard both go through.
 * Each address is checked by the rules of `client-urls.ts` (scheme, credentials, literal addresses),
 * then `request-filtering-agent` checks the address DNS gives for a name on every connection, and the
 * connection goes to that checked address (so a name that resolves to a private, loopback,
 * link-local or metadata address is refused, and so is DNS rebinding). Redirects are followed here,
 * each hop checked, or not at all; nothing waits for ever.
 */

export interface OutboundPolicy extends ClientUrlRules {
  /** Redirects `openUrl` follows at most; 0 follows none. */
  maxRedirects: number;
  /** Until the response's headers arrive, per hop (connecting, TLS and the receiver's work included). */
  headersTimeoutMs: number;
  /** Longest silence while the body streams. */
  idleTimeoutMs: number;
  /** Resolves names instead of the system's resolver (tests: a name that resolves where they say). */
  lookup?: LookupFunction;
}

/** A request the policy refuses: a scheme, an address or too many redirects. Retrying cannot help. */
export class OutboundRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

/** No response headers within the policy's time. */
export class OutboundTimeout extends Error {
  constructor(ms: number) {
    super(`No answer within ${ms / 1000} s.`);
    this.name = 'OutboundTimeout';
  }
}

export interface OutboundResponse {
  status: number;
  /** The address that answered, after redirects. */
  url: string;
  body: IncomingMessage;
}

export interface OutboundRequest {
  method: 'GET' | 'POST';
  headers?: OutgoingHttpHeaders;
  body?: string;
}

/** GETs an address under the policy, following redirects; the caller reads or drains the body. */
export async function openUrl(address: string, policy: OutboundPolicy): Promise<OutboundResponse> {
  let url = checkedUrl(address, policy);
  for (let hop = 0; ; hop++) {
    const response = await send(url, { method: 'GET' }, policy);
    const location = response.headers.location;
    if (response.statusCode && response.statusCode >= 300 && response.statusCode < 400 && location) {
      response.resume();
      if (hop >= policy.maxRedirects)
        throw new OutboundRefused(`More than ${policy.maxRedirects} redirects.`);
      url = checkedUrl(new URL(location, url).href, policy);
      continue;
    }
    return { status: response.statusCode ?? 0, url: url.href, body: response };
  }
}

/** One request under the policy; a redirect is an answer like any other, not followed. */
export async function sendOnce(
  address: string,
  request: OutboundRequest,
  policy: OutboundPolicy,
): Promise<OutboundResponse> {
  const url = checkedUrl(address, policy);
  const response = await send(url, request, policy);
  return { status: response.statusCode ?? 0, url: url.href, body: response };
}

function checkedUrl(address: string, policy: OutboundPolicy): URL {
  const problem = clientUrlProblem(address, policy);
  if (problem) throw new OutboundRefused(`The address ${problem}.`);
  return new URL(address);
}

function send(url: URL, outbound: OutboundRequest, policy: OutboundPolicy): Promise<IncomingMessage> {
  // A new agent per request: no pooled connection made for another address is ever reused.
  const agent = useAgent(url.href, {
    allowPrivateIPAddress: policy.local,
    allowMetaIPAddress: false,
    allowIPAddressList: policy.allowAddresses ?? [],
  });
  const headers: OutgoingHttpHeaders = { 'user-agent': 'transcription-service', ...outbound.headers };
  if (outbound.body !== undefined) headers['content-length'] = String(Buffer.byteLength(outbound.body));
  const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
    method: outbound.method,
    agent,
    headers,
    ...(policy.lookup ? { lookup: policy.lookup } : {}),
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => request.destroy(new OutboundTimeout(policy.headersTimeoutMs)),
      policy.headersTimeoutMs,
    );
    request.on('response', (response) => {
      clearTimeout(timer);
      // A body that stalls is cut off; the reader sees the error.
      response.setTimeout(policy.idleTimeoutMs, () =>
        response.destroy(new Error(`The body stalled for ${policy.idleTimeoutMs / 1000} s.`)),
      );
      resolve(response);
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      // The agent refuses a forbidden address with an error naming it.
      reject(
        /is not allowed/.test(error.message)
          ? new OutboundRefused(`${url.hostname} is not an address the service may reach: ${error.message}`)
          : error,
      );
    });
    request.end(outbound.body);
  });
}
