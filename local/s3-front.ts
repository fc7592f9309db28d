import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { EMULATOR_CREDENTIALS } from '#aws/clients';

/** Parts of a large PUT streamed into the emulator, which takes at most 11 MiB a request. */
const PART_BYTES = 8 * 1024 * 1024;

export interface S3Front {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * The local S3 endpoint: fauxqs behind a small front that makes it behave as S3 does where the service
 * depends on it. Presigned requests are checked as S3 checks them (signature over the signed headers,
 * expiry), which fauxqs does not; a presigned PUT of any size is streamed into fauxqs in parts (it takes
 * at most 11 MiB a request, S3 up to 5 GB); object tags are kept (fauxqs has none); browsers get the CORS
 * headers the stack's bucket rule gives. Everything else passes through untouched.
 */
export async function startS3Front(target: string, region: string): Promise<S3Front> {
  const tags = new Map<string, Record<string, string>>();
  const emulator = new S3Client({
    region,
    endpoint: target,
    forcePathStyle: true,
    credentials: EMULATOR_CREDENTIALS,
  });
  const signer = new SignatureV4({
    credentials: EMULATOR_CREDENTIALS,
    region,
    service: 's3',
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: false,
    applyChecksum: false,
  });

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) {
        s3Error(response, 500, 'InternalError', error instanceof Error ? error.message : String(error));
      } else response.destroy();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://local');
    allowBrowsers(request, response);
    if (request.method === 'OPTIONS') {
      response.writeHead(200).end();
      return;
    }
    const [, bucket = '', ...rest] = url.pathname.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const objectKey = `${bucket}/${key}`;

    if (url.searchParams.has('X-Amz-Signature')) {
      const refusal = await checkPresigned(signer, request, url);
      if (refusal) {
        request.resume();
        s3Error(response, 403, refusal.code, refusal.message);
        return;
      }
      if (request.method === 'PUT' && key && !url.searchParams.has('uploadId')) {
        await streamPut(emulator, request, response, bucket, key);
        recordTags(tags, objectKey, request.headers['x-amz-tagging']);
        return;
      }
    }
    if (key && url.searchParams.has('tagging')) {
      await tagging(emulator, tags, request, response, bucket, key);
      return;
    }
    if (request.method === 'PUT' && key && !url.searchParams.has('uploadId')) {
      recordTags(tags, objectKey, request.headers['x-amz-tagging']);
    }
    if (request.method === 'DELETE' && key && !url.searchParams.has('uploadId')) tags.delete(objectKey);
    await proxy(target, request, response);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      emulator.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The stack's bucket CORS rule, for the console's uploads and playback. */
function allowBrowsers(request: IncomingMessage, response: ServerResponse): void {
  response.setHeader('access-control-allow-origin', request.headers.origin ?? '*');
  response.setHeader('access-control-allow-methods', 'GET, PUT, HEAD');
  response.setHeader(
    'access-control-allow-headers',
    request.headers['access-control-request-headers'] ?? '*',
  );
  response.setHeader('access-control-expose-headers', 'ETag');
  response.setHeader('access-control-max-age', '3600');
}

/**
 * What S3 answers a presigned request whose time is over, or whose signature does not cover what was
 * sent (another length, another type, another tag, another key): the signature is computed again from
 * the request with the same signer settings as the presigner's and compared.
 */
async function checkPresigned(
  signer: SignatureV4,
  request: IncomingMessage,
  url: URL,
): Promise<{ code: string; message: string } | undefined> {
  const query = url.searchParams;
  const signedAt = parseAmzDate(query.get('X-Amz-Date') ?? '');
  const expiresIn = Number(query.get('X-Amz-Expires'));
  if (!signedAt || !Number.isFinite(expiresIn))
    return { code: 'AccessDenied', message: 'Malformed presigned URL.' };
  if (Date.now() > signedAt.getTime() + expiresIn * 1000) {
    return { code: 'AccessDenied', message: 'Request has expired' };
  }
  const signedHeaders = (query.get('X-Amz-SignedHeaders') ?? '').split(';').filter(Boolean);
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = request.headers[name];
    if (value === undefined)
      return { code: 'SignatureDoesNotMatch', message: `Signed header ${name} is missing.` };
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const remaining: Record<string, string> = {};
  for (const [name, value] of query) {
    if (!/^X-Amz-(Algorithm|Credential|Date|Expires|SignedHeaders|Signature|Security-Token)$/.test(name)) {
      remaining[name] = value;
    }
  }
  const [hostname = '', port] = (headers.host ?? '').split(':');
  // The payload hash the URL was signed for (UNSIGNED-PAYLOAD for uploads) is read from this header.
  const payloadHash = 'x-amz-content-sha256';
  const presigned = await signer.presign(
    {
      method: request.method ?? 'GET',
      protocol: 'http:',
      hostname,
      ...(port ? { port: Number(port) } : {}),
      path: url.pathname,
      query: remaining,
      headers: { ...headers, [payloadHash]: query.get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD' },
    },
    {
      signingDate: signedAt,
      expiresIn,
      unhoistableHeaders: new Set([...signedHeaders, payloadHash]),
      signableHeaders: new Set(signedHeaders),
      unsignableHeaders: new Set([payloadHash]),
    },
  );
  return presigned.query?.['X-Amz-Signature'] === query.get('X-Amz-Signature')
    ? undefined
    : {
        code: 'SignatureDoesNotMatch',
        message: 'The request signature we calculated does not match the signature you provided.',
      };
}

function parseAmzDate(value: string): Date | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second] = match;
  return new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}Z`);
}

/** A PUT of any length, streamed into the emulator in parts, answered as S3 answers a PUT. */
async function streamPut(
  emulator: S3Client,
  request: IncomingMessage,
  response: ServerResponse,
  bucket: string,
  key: string,
): Promise<void> {
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (name.startsWith('x-amz-meta-') && typeof value === 'string') metadata[name.slice(11)] = value;
  }
  const upload = new Upload({
    client: emulator,
    partSize: PART_BYTES,
    queueSize: 1,
    params: {
      Bucket: bucket,
      Key: key,
      Body: request,
      ContentType: request.headers['content-type'] ?? 'application/octet-stream',
      Metadata: metadata,
    },
  });
  const result = await upload.done();
  response.writeHead(200, { etag: result.ETag ?? '""', 'content-length': '0' }).end();
}

function recordTags(tags: Map<string, Record<string, string>>, objectKey: string, header: unknown): void {
  if (typeof header !== 'string') return;
  tags.set(objectKey, Object.fromEntries(new URLSearchParams(header)));
}

/** PutObjectTagging and GetObjectTagging, which fauxqs lacks, for objects that exist. */
async function tagging(
  emulator: S3Client,
  tags: Map<string, Record<string, string>>,
  request: IncomingMessage,
  response: ServerResponse,
  bucket: string,
  key: string,
): Promise<void> {
  const body = await readAll(request);
  const exists = await emulator.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
    () => true,
    () => false,
  );
  if (!exists) {
    s3Error(response, 404, 'NoSuchKey', 'The specified key does not exist.');
    return;
  }
  const objectKey = `${bucket}/${key}`;
  if (request.method === 'PUT') {
    const set: Record<string, string> = {};
    for (const match of body
      .toString('utf8')
      .matchAll(/<Tag>\s*<Key>([^<]*)<\/Key>\s*<Value>([^<]*)<\/Value>\s*<\/Tag>/g)) {
      set[xmlText(match[1] ?? '')] = xmlText(match[2] ?? '');
    }
    tags.set(objectKey, set);
    response.writeHead(200, { 'content-length': '0' }).end();
    return;
  }
  const tagSet = Object.entries(tags.get(objectKey) ?? {})
    .map(([name, value]) => `<Tag><Key>${xmlEscape(name)}</Key><Value>${xmlEscape(value)}</Value></Tag>`)
    .join('');
  const xml = `<?xml version="1.0" encoding="UTF-8"?><Tagging><TagSet>${tagSet}</TagSet></Tagging>`;
  response.writeHead(200, {
    'content-type': 'application/xml',
    'content-length': String(Buffer.byteLength(xml)),
  });
  response.end(xml);
}

/** Passes a request to the emulator and its answer back, both streamed. */
function proxy(target: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const destination = new URL(request.url ?? '/', target);
  return new Promise((resolve, reject) => {
    const forward = httpRequest(
      destination,
      { method: request.method, headers: { ...request.headers, host: destination.host } },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
        answer.on('end', resolve);
        answer.on('error', reject);
      },
    );
    forward.on('error', reject);
    request.pipe(forward);
  });
}

function readAll(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function s3Error(response: ServerResponse, status: number, code: string, message: string): void {
  const xml = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error>`;
  response.writeHead(status, {
    'content-type': 'application/xml',
    'content-length': String(Buffer.byteLength(xml)),
  });
  response.end(xml);
}

const xmlEscape = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const xmlText = (text: string) =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
