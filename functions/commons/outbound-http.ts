import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { useAgent } from 'request-filtering-agent';

/**
 * Requests to addresses a client gave us (an `audio_url`, a webhook): only to public addresses, checked
 * after DNS resolution on every connection by `request-filtering-agent` (so a name that resolves to a
 * private, loopback, link-local or metadata address is refused, and so is DNS rebinding), following
 * redirects ourselves so that every hop is checked, and never waiting for ever.
 */

export interface OutboundPolicy {
  /** Local mode: plain http and private addresses (the developer's own servers) are allowed too. */
  local: boolean;
  /** Addresses allowed although private (tests' own servers, outside local mode). */
  allowAddresses?: string[];
  /** Plain http although not local (tests' own servers). */
  allowHttp?: boolean;
  /** Redirects followed at most; 0 follows none. */
  maxRedirects: number;
  /** Until the response's headers arrive, per hop. */
  headersTimeoutMs: number;
  /** Longest silence while the body streams. */
  idleTimeoutMs: number;
}

/** A request the policy refuses: a scheme, an address or too many redirects. Retrying cannot help. */
export class OutboundRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

export interface OutboundResponse {
  status: number;
  /** The address that answered, after redirects. */
  url: string;
  body: IncomingMessage;
}

/** GETs an address under the policy; the caller reads or drains the body. */
export async function openUrl(address: string, policy: OutboundPolicy): Promise<OutboundResponse> {
  let url = checkScheme(address, policy);
  for (let hop = 0; ; hop++) {
    const response = await get(url, policy);
    const location = response.headers.location;
    if (response.statusCode && response.statusCode >= 300 && response.statusCode < 400 && location) {
      response.resume();
      if (hop >= policy.maxRedirects)
        throw new OutboundRefused(`More than ${policy.maxRedirects} redirects.`);
      url = checkScheme(new URL(location, url).href, policy);
      continue;
    }
    return { status: response.statusCode ?? 0, url: url.href, body: response };
  }
}

function checkScheme(address: string, policy: OutboundPolicy): URL {
  const url = URL.canParse(address) ? new URL(address) : undefined;
  const schemes = policy.local || policy.allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!url || !schemes.includes(url.protocol)) {
    throw new OutboundRefused(`Only ${schemes.join(' and ')} addresses are fetched.`);
  }
  if (url.username || url.password) throw new OutboundRefused('Addresses with credentials are not fetched.');
  return url;
}

function get(url: URL, policy: OutboundPolicy): Promise<IncomingMessage> {
  const agent = useAgent(url.href, {
    allowPrivateIPAddress: policy.local,
    allowMetaIPAddress: false,
    allowIPAddressList: policy.allowAddresses ?? [],
  });
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(url, { method: 'GET', agent, headers: { 'user-agent': 'transcription-service' } });
    const timer = setTimeout(
      () => request.destroy(new Error(`No answer within ${policy.headersTimeoutMs / 1000} s.`)),
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
      reject(/is not allowed/.test(error.message) ? new OutboundRefused(error.message) : error);
    });
    request.end();
  });
}
