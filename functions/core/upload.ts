import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  MAX_UPLOAD_BYTES,
  UPLOAD_REF_TTL_MS,
  UPLOAD_TAG,
  UPLOAD_URL_EXPIRY_SECONDS,
  uploadKey,
} from '#commons/contract';
import { RequestError } from './errors.ts';
import { onceForKey } from './idempotency.ts';
import type { IdempotentRequests, MediaStore } from './ports.ts';

/** What `POST /v1-beta/upload` answers: where to PUT the file, the headers to send, and its reference. */
export interface UploadTicket {
  audio_ref: string;
  upload_url: string;
  method: 'PUT';
  /** Send exactly these headers with the PUT: they are part of its signature. */
  headers: Record<string, string>;
  expires_at: string;
  max_bytes: number;
}

/** A media type as `type/subtype`, the only shape signed into an upload. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/i;

export const uploadRequestSchema = z.strictObject({
  size: z
    .number({ error: `size must be the file's length in bytes, from 1 to ${MAX_UPLOAD_BYTES}.` })
    .int({ error: 'size must be a whole number of bytes.' })
    .min(1, { error: 'size must be at least 1 byte.' })
    .max(MAX_UPLOAD_BYTES, { error: `Files are accepted up to ${MAX_UPLOAD_BYTES} bytes (2 GiB).` }),
  content_type: z
    .string()
    .regex(MEDIA_TYPE, { error: 'content_type must be a media type such as audio/mpeg.' })
    .optional(),
});

/** `up_` + the issue time (milliseconds, base 36) + 128 random bits: unguessable, and dated without a store. */
const UPLOAD_REF = /^up_([0-9a-z]{1,11})_([A-Za-z0-9_-]{22})$/;

function parseUploadRequest(body: unknown): z.infer<typeof uploadRequestSchema> {
  const parsed = uploadRequestSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field =
    issue?.code === 'unrecognized_keys' ? (issue.keys[0] ?? '') : String(issue?.path[0] ?? 'size');
  const message =
    issue?.code === 'unrecognized_keys'
      ? `Unknown field "${field}"; send size and, optionally, content_type.`
      : issue?.message;
  throw new RequestError('invalid_request', message ?? 'Invalid upload request.', field);
}

export interface UploadRequest {
  tenantId: string;
  /** The JSON body as the client sent it. */
  body: unknown;
  /** The client's `Idempotency-Key`, already checked by parseIdempotencyKey. */
  idempotencyKey?: string;
  now: Date;
}

/**
 * Issues a presigned upload: a key the server makes under the tenant, a URL valid for a short time that
 * accepts exactly the declared number of bytes (the length is signed), and the reference to submit.
 * With an `Idempotency-Key`, the same key and request within 24 hours answer the first ticket (its URL
 * still valid until `expires_at`), and another request with the key is a `conflict`.
 */
export async function createUpload(
  deps: { media: MediaStore; idempotency: IdempotentRequests },
  { tenantId, body, idempotencyKey, now }: UploadRequest,
): Promise<{ ticket: UploadTicket; replayed: boolean }> {
  const request = parseUploadRequest(body);
  const { result, replayed } = await onceForKey(deps.idempotency, {
    scope: 'upload',
    tenantId,
    key: idempotencyKey,
    fingerprint: () =>
      createHash('sha256')
        .update(JSON.stringify([request.size, request.content_type ?? null]))
        .digest('hex'),
    work: () => issueUpload(deps.media, tenantId, request, now),
  });
  return { ticket: result, replayed };
}

async function issueUpload(
  media: MediaStore,
  tenantId: string,
  request: z.infer<typeof uploadRequestSchema>,
  now: Date,
): Promise<UploadTicket> {
  const audioRef = `up_${now.getTime().toString(36)}_${randomBytes(16).toString('base64url')}`;
  const presigned = await media.presignUpload(uploadKey(tenantId, audioRef), {
    bytes: request.size,
    contentType: request.content_type ?? 'application/octet-stream',
    tags: { [UPLOAD_TAG.key]: UPLOAD_TAG.pending },
    expiresInSeconds: UPLOAD_URL_EXPIRY_SECONDS,
  });
  return {
    audio_ref: audioRef,
    upload_url: presigned.url,
    method: 'PUT',
    headers: presigned.headers,
    expires_at: new Date(now.getTime() + UPLOAD_URL_EXPIRY_SECONDS * 1000).toISOString(),
    max_bytes: MAX_UPLOAD_BYTES,
  };
}

/** An uploaded file a submission may use. */
export interface ResolvedUpload {
  key: string;
  bytes: number;
  /** The job's id: one per upload, so that submitting a reference twice is refused by the store. */
  jobId: string;
}

/**
 * The upload a submission names, checked: a reference this service issued, not older than a day, whose
 * file was uploaded under the caller's own tenant and not yet submitted. Anything else is a 400 naming
 * `audio_ref`: unknown, expired, another tenant's, never uploaded, or already used look alike from
 * outside, each with its own message.
 */
export async function resolveUpload(
  media: MediaStore,
  tenantId: string,
  audioRef: string,
  now: Date,
): Promise<ResolvedUpload> {
  const refuse = (why: string): never => {
    throw new RequestError('invalid_request', `audio_ref ${why}`, 'audio_ref');
  };
  const match = UPLOAD_REF.exec(audioRef.trim());
  if (!match) refuse('is not a reference from POST /v1-beta/upload.');
  const issuedAt = Number.parseInt(match?.[1] ?? '', 36);
  if (!(issuedAt <= now.getTime() + 60_000)) refuse('is not a reference from POST /v1-beta/upload.');
  if (now.getTime() - issuedAt > UPLOAD_REF_TTL_MS) refuse('has expired; upload the file again.');
  const key = uploadKey(tenantId, audioRef.trim());
  const object = await media.describe(key);
  if (!object) refuse('names no uploaded file of yours: upload it with the URL you were given first.');
  if ((await media.getTags(key))[UPLOAD_TAG.key] !== UPLOAD_TAG.pending) refuse('was already submitted.');
  if ((object?.bytes ?? 0) === 0) refuse('names an empty file.');
  if ((object?.bytes ?? 0) > MAX_UPLOAD_BYTES) refuse(`names a file over ${MAX_UPLOAD_BYTES} bytes.`);
  return { key, bytes: object?.bytes ?? 0, jobId: jobIdOfUpload(tenantId, audioRef.trim()) };
}

/** A UUID-shaped id derived from the upload: the same upload always gives the same job id. */
function jobIdOfUpload(tenantId: string, audioRef: string): string {
  const hex = createHash('sha256').update(`${tenantId}\n${audioRef}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
