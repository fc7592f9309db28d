import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { WebhookResponse, WebhookSender } from '#core/ports';
import {
  isAllowedAddress,
  literalAddress,
  refusedByName,
  type WebhookDestinations,
} from '#core/webhook-address';

/** Every address a name resolves to (the system resolver, as connections use). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

export interface SenderOptions {
  /** An answer must begin within this time. */
  timeoutMs: number;
  destinations: WebhookDestinations;
  /** Tests give names of their own; the system resolver otherwise. */
  resolve?: Resolver;
}

/**
 * POSTs webhooks with Node's HTTP client, which follows no redirects. The receiver's name is resolved
 * first and every address it gives is checked; the connection then goes to the checked address only
 * (the request's `lookup` answers it), so that DNS cannot point elsewhere between check and connect.
 * An answer is its status line: the body is not read.
 */
export class HttpWebhookSender implements WebhookSender {
  constructor(private readonly options: SenderOptions) {}

  async post(url: string, body: string, headers: Record<string, string>): Promise<WebhookResponse> {
    const target = new URL(url);
    const { destinations } = this.options;
    const secure = target.protocol === 'https:';
    if (!secure && !(target.protocol === 'http:' && destinations === 'loopback')) {
      return { outcome: 'refused', reason: `${target.protocol} addresses are not delivered to.` };
    }
    const hostname = target.hostname;
    if (refusedByName(hostname, destinations)) {
      return { outcome: 'refused', reason: `${hostname} is not an address webhooks may go to.` };
    }
    let addresses: LookupAddress[];
    const literal = literalAddress(hostname);
    if (literal !== undefined) {
      addresses = [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
    } else {
      try {
        addresses = await (this.options.resolve ?? systemResolver)(hostname);
      } catch (error) {
        return { outcome: 'unreachable', reason: `${hostname} does not resolve (${errorCode(error)}).` };
      }
    }
    const refused = addresses.find(({ address }) => !isAllowedAddress(address, destinations));
    const chosen = addresses[0];
    if (refused || !chosen) {
      const shown = refused?.address ?? 'nothing';
      return {
        outcome: 'refused',
        reason: `${hostname} resolves to ${shown}, not an address webhooks may go to.`,
      };
    }
    const lookup: LookupFunction = (_name, options, callback) => {
      if (options.all) (callback as (error: null, all: LookupAddress[]) => void)(null, [chosen]);
      else callback(null, chosen.address, chosen.family);
    };
    const request: RequestOptions = {
      method: 'POST',
      headers: {
        ...headers,
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'transcription-webhooks/1.1',
      },
      lookup,
      // A connection of its own each time: a pooled one could have been made for another address.
      agent: false,
    };
    return this.send(target, secure, request, body);
  }

  private send(
    target: URL,
    secure: boolean,
    options: RequestOptions,
    body: string,
  ): Promise<WebhookResponse> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (response: WebhookResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(response);
      };
      const request = (secure ? httpsRequest : httpRequest)(target, options, (response) => {
        settle({ outcome: 'answered', statusCode: response.statusCode ?? 0 });
        // Nothing of the body is wanted; the connection is not kept.
        response.destroy();
      });
      const timer = setTimeout(() => {
        settle({ outcome: 'timeout' });
        request.destroy();
      }, this.options.timeoutMs);
      request.on('error', (error) => settle({ outcome: 'unreachable', reason: errorCode(error) }));
      request.end(body);
    });
  }
}

function errorCode(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? code : String(message ?? error);
}
