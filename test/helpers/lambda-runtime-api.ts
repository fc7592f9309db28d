import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the Lambda Runtime API, the HTTP interface a runtime client polls inside Lambda
 * (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html): `GET …/invocation/next` waits for an
 * event and answers it with the documented headers; the runtime posts `…/invocation/{id}/response` or
 * `…/invocation/{id}/error`, or `…/init/error` when the handler cannot be loaded.
 */

const PREFIX = '/2018-06-01/runtime';
/** Lambda's cap on a synchronous response payload. */
const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;

export type InvocationResult =
  | { outcome: 'response'; payload: unknown }
  | { outcome: 'error'; errorType: string; payload: unknown };

export interface InitError {
  errorType: string;
  payload: unknown;
}

export interface LambdaRuntimeApi {
  /** `host:port`, the value of AWS_LAMBDA_RUNTIME_API. */
  address: string;
  functionArn: string;
  /** Queues an event, as Lambda does when invoked, and answers what the runtime posted back. */
  invoke(event: unknown, timeoutMs?: number): Promise<InvocationResult>;
  /** The runtime's init error, once it posted one. */
  initError(): InitError | undefined;
  close(): Promise<void>;
}

interface Pending {
  id: string;
  event: unknown;
  deadlineMs: number;
  settle: (result: InvocationResult) => void;
  fail: (error: Error) => void;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function parse(body: Buffer): unknown {
  const text = body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify(body));
}

export async function startLambdaRuntimeApi(
  functionName = 'transcription-worker',
): Promise<LambdaRuntimeApi> {
  const functionArn = `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`;
  const queued: Pending[] = [];
  const inFlight = new Map<string, Pending>();
  const waiting: ServerResponse[] = [];
  let initFailure: InitError | undefined;

  const deliver = (pending: Pending, response: ServerResponse) => {
    inFlight.set(pending.id, pending);
    response.writeHead(200, {
      'Content-Type': 'application/json',
      'Lambda-Runtime-Aws-Request-Id': pending.id,
      'Lambda-Runtime-Deadline-Ms': String(pending.deadlineMs),
      'Lambda-Runtime-Invoked-Function-Arn': functionArn,
      'Lambda-Runtime-Trace-Id': `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomUUID().replaceAll('-', '').slice(0, 24)};Sampled=0`,
    });
    response.end(JSON.stringify(pending.event));
  };

  const server = createServer(async (request, response) => {
    const path = request.url ?? '';
    const body = await readBody(request);
    if (request.method === 'GET' && path === `${PREFIX}/invocation/next`) {
      const next = queued.shift();
      if (next) deliver(next, response);
      else waiting.push(response); // Long poll: answered when an event arrives.
      return;
    }
    const invocation = path.match(/^\/2018-06-01\/runtime\/invocation\/([^/]+)\/(response|error)$/);
    if (request.method === 'POST' && invocation) {
      const [, id = '', kind] = invocation;
      const pending = inFlight.get(decodeURIComponent(id));
      if (!pending) {
        answer(response, 400, { errorMessage: `Unknown request id ${id}`, errorType: 'InvalidRequestID' });
        return;
      }
      if (kind === 'response' && body.length > MAX_RESPONSE_BYTES) {
        answer(response, 413, { errorMessage: 'Response payload too large', errorType: 'RequestTooLarge' });
        return;
      }
      inFlight.delete(pending.id);
      answer(response, 202, { status: 'OK' });
      pending.settle(
        kind === 'response'
          ? { outcome: 'response', payload: parse(body) }
          : {
              outcome: 'error',
              errorType: String(request.headers['lambda-runtime-function-error-type'] ?? ''),
              payload: parse(body),
            },
      );
      return;
    }
    if (request.method === 'POST' && path === `${PREFIX}/init/error`) {
      initFailure = {
        errorType: String(request.headers['lambda-runtime-function-error-type'] ?? ''),
        payload: parse(body),
      };
      answer(response, 202, { status: 'OK' });
      for (const pending of [...queued, ...inFlight.values()]) {
        pending.fail(new Error(`The runtime failed to start: ${JSON.stringify(initFailure)}`));
      }
      return;
    }
    answer(response, 404, { errorMessage: `No route ${request.method} ${path}`, errorType: 'NotFound' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    address: `127.0.0.1:${port}`,
    functionArn,
    invoke(event, timeoutMs = 120_000) {
      return new Promise<InvocationResult>((resolve, reject) => {
        if (initFailure) {
          reject(new Error(`The runtime failed to start: ${JSON.stringify(initFailure)}`));
          return;
        }
        const timer = setTimeout(() => reject(new Error('The invocation timed out.')), timeoutMs);
        const pending: Pending = {
          id: randomUUID(),
          event,
          deadlineMs: Date.now() + timeoutMs,
          settle: (result) => {
            clearTimeout(timer);
            resolve(result);
          },
          fail: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        const poller = waiting.shift();
        if (poller) deliver(pending, poller);
        else queued.push(pending);
      });
    },
    initError: () => initFailure,
    async close() {
      for (const response of waiting.splice(0)) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
