import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the receiver does with its n-th request (1-based): answer a status, after a pause, with headers. */
export type ReceiverScript = (n: number) => {
  status: number;
  delayMs?: number;
  headers?: Record<string, string>;
};

/** A webhook receiver on 127.0.0.1 that answers as scripted and keeps every request it got. */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private server: Server | undefined;
  private port = 0;

  constructor(public script: ReceiverScript = () => ({ status: 200 })) {}

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.received.push({
          path: request.url ?? '',
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const { status, delayMs = 0, headers = {} } = this.script(this.received.length);
        const timer = setTimeout(() => {
          if (!response.destroyed) response.writeHead(status, headers).end('ok');
        }, delayMs);
        response.on('close', () => clearTimeout(timer));
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  url(path = '/hook', host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** The headers of a request as a verifier takes them (one string each). */
  static headersOf(request: ReceivedWebhook): Record<string, string> {
    return Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
