import { awsServices } from '#aws/services';
import { audioKey, MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import { RequestError } from '#core/errors';
import { newJobId, toSubmissionRecord } from '#core/job';
import { ensureCapacity, submitJob } from '#core/submit';
import {
  bodyByteLength,
  bodyStream,
  headerValue,
  httpHandler,
  jsonResponse,
  queryParameters,
  tenantIdOf,
} from './http.ts';
import { parseMultipartForm } from './multipart.ts';

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
  const { config, jobs, media, queue } = awsServices();
  const tenantId = tenantIdOf(event);
  await ensureCapacity(jobs, tenantId, config.maxActiveJobsPerTenant);
  const id = newJobId();
  const key = audioKey(tenantId, id);
  const form = await parseMultipartForm({
    body: bodyStream(event),
    contentType,
    receiveFile: (stream, info) => media.putAudio(key, stream, info.mimeType),
  });
  const job = await submitJob(
    { jobs, media, queue },
    {
      id,
      tenantId,
      fields: form.fields,
      ...(form.file ? { audio: { key, bytes: form.file.bytes } } : {}),
      ...(form.problem ? { problem: form.problem } : {}),
      now: new Date(),
    },
    { allowHttpWebhooks: config.localMode, allowHttpUrls: config.localMode },
  );
  return jsonResponse(200, toSubmissionRecord(job));
});
