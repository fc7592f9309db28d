import { awsServices } from '#aws/services';
import { MAX_DIRECT_UPLOAD_BYTES, MAX_UPLOAD_BYTES } from '#commons/contract';
import { RequestError } from '#core/errors';
import { IDEMPOTENCY_HEADER, parseIdempotencyKey } from '#core/idempotency';
import { createUpload, uploadRequestSchema } from '#core/upload';
import {
  headerValue,
  httpHandler,
  jsonResponse,
  queryParameters,
  replayedResponse,
  tenantIdOf,
} from './http.ts';
import {
  errorResponses,
  idempotencyKeyHeader,
  jsonContent,
  type RouteOperation,
  uploadTicketSchema,
} from './schemas.ts';

/** Longer bodies are not upload requests; refusing them early keeps junk out of parsing. */
const MAX_BODY_BYTES = 4096;

/**
 * POST /v1-beta/upload with `{"size": bytes, "content_type"?: type}`: a presigned URL for a file over the
 * direct-upload limit (up to 2 GiB), and the `audio_ref` to submit once it is uploaded.
 */
export const handler = httpHandler(async (event) => {
  queryParameters(event, []);
  const contentType = headerValue(event.headers, 'content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(contentType)) {
    throw new RequestError(
      'unsupported_media_type',
      'Send the request as application/json: {"size": <bytes>, "content_type": "<type>"}.',
    );
  }
  const text = event.isBase64Encoded
    ? Buffer.from(event.body ?? '', 'base64').toString('utf8')
    : (event.body ?? '');
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) {
    throw new RequestError(
      'payload_too_large',
      `An upload request is at most ${MAX_BODY_BYTES} bytes of JSON.`,
    );
  }
  const idempotencyKey = parseIdempotencyKey(headerValue(event.headers, IDEMPOTENCY_HEADER));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new RequestError('invalid_request', 'The body is not valid JSON.');
  }
  const { media, idempotency } = awsServices();
  const { ticket, replayed } = await createUpload(
    { media, idempotency },
    {
      tenantId: tenantIdOf(event),
      body,
      ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
      now: new Date(),
    },
  );
  return replayed ? replayedResponse(ticket) : jsonResponse(200, ticket);
});

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'Get a presigned upload',
  description:
    `For files over the direct-upload limit (${MAX_DIRECT_UPLOAD_BYTES} bytes of request body), up to ` +
    `${MAX_UPLOAD_BYTES} bytes: PUT the file to \`upload_url\` with exactly the \`headers\` given, before ` +
    '`expires_at`, then submit `audio_ref` in a form part of that name instead of `audio`. An unsubmitted ' +
    `upload is removed after a day. With an \`${IDEMPOTENCY_HEADER}\` header, the same key with the same body ` +
    'within 24 hours answers the first ticket (with `idempotent-replayed: true`), and a 409 for another body.',
  requestParams: { header: idempotencyKeyHeader },
  requestBody: {
    required: true,
    content: { 'application/json': { schema: uploadRequestSchema } },
  },
  responses: {
    '200': { description: 'Where and how to upload the file.', content: jsonContent(uploadTicketSchema) },
    ...errorResponses([400, 409, 413, 415]),
  },
};
