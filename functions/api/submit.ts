import { z } from 'zod';
import { awsServices } from '#aws/services';
import { audioKey, MAX_DIRECT_UPLOAD_BYTES, MAX_UPLOAD_BYTES } from '#commons/contract';
import { RequestError } from '#core/errors';
import { IDEMPOTENCY_HEADER, parseIdempotencyKey } from '#core/idempotency';
import { newJobId } from '#core/job';
import { optionsSchema } from '#core/options';
import { ensureCapacity, submitOnce } from '#core/submit';
import {
  bodyByteLength,
  bodyStream,
  headerValue,
  httpHandler,
  jsonResponse,
  queryParameters,
  replayedResponse,
  tenantIdOf,
} from './http.ts';
import { parseMultipartForm } from './multipart.ts';
import {
  errorResponses,
  idempotencyKeyHeader,
  jsonContent,
  type RouteOperation,
  submissionRecordSchema,
} from './schemas.ts';

/** POST /v1-beta/transcript: multipart upload of the audio with the job's options (SPEC 4.1). */
export const handler = httpHandler(async (event) => {
  const contentType = headerValue(event.headers, 'content-type') ?? '';
  if (!/^multipart\/form-data\s*(;|$)/i.test(contentType)) {
    throw new RequestError(
      'unsupported_media_type',
      'Send the request as multipart/form-data with the audio file in a part named "audio".',
    );
  }
  const size = bodyByteLength(event);
  if (size > MAX_DIRECT_UPLOAD_BYTES) {
    throw new RequestError(
      'payload_too_large',
      `The request body is ${size} bytes; direct uploads are limited to ${MAX_DIRECT_UPLOAD_BYTES} bytes.`,
    );
  }

  queryParameters(event, []);
  const idempotencyKey = parseIdempotencyKey(headerValue(event.headers, IDEMPOTENCY_HEADER));
  const { config, jobs, media, queue, idempotency } = awsServices();
  const tenantId = tenantIdOf(event);
  await ensureCapacity(jobs, tenantId, config.maxActiveJobsPerTenant);
  const id = newJobId();
  const key = audioKey(tenantId, id);
  const form = await parseMultipartForm({
    body: bodyStream(event),
    contentType,
    receiveFile: (stream, info) => media.putAudio(key, stream, info.mimeType),
  });
  const { record, replayed } = await submitOnce(
    { jobs, media, queue, idempotency },
    {
      id,
      tenantId,
      fields: form.fields,
      ...(form.file ? { audio: { key, ...form.file } } : {}),
      ...(form.problem ? { problem: form.problem } : {}),
      ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
      now: new Date(),
    },
    { localMode: config.localMode },
  );
  return replayed ? replayedResponse(record) : jsonResponse(200, record);
});

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'Submit a file',
  description:
    'multipart/form-data with the options as text parts and the audio as exactly one of: the file in the part ' +
    `\`audio\` (\`file\` is an alias), with bodies up to ${MAX_DIRECT_UPLOAD_BYTES} bytes; \`audio_ref\`, a ` +
    'presigned upload from `POST /v1-beta/upload` (larger files); or `audio_url`, a public https address the ' +
    `service fetches (up to ${MAX_UPLOAD_BYTES} bytes). With an \`${IDEMPOTENCY_HEADER}\` header, the same ` +
    'key with the same parts and audio within 24 hours answers the first job (with `idempotent-replayed: true`), ' +
    'and a 409 for another request.',
  requestParams: { header: idempotencyKeyHeader },
  requestBody: {
    required: true,
    content: {
      'multipart/form-data': {
        schema: optionsSchema(false).extend({
          audio: z.string().optional().meta({
            format: 'binary',
            description: 'The audio or video file (or send audio_ref or audio_url).',
          }),
          audio_ref: z
            .string()
            .optional()
            .meta({ description: 'The `audio_ref` of a presigned upload whose file was PUT.' }),
          audio_url: z
            .string()
            .optional()
            .meta({ format: 'uri', description: 'A public https address to fetch the audio from.' }),
        }),
      },
    },
  },
  responses: {
    '200': { description: 'The job, queued (SPEC 2.1).', content: jsonContent(submissionRecordSchema) },
    ...errorResponses([400, 409, 413, 415, 429]),
  },
};
