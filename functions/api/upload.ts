import { awsServices } from '#aws/services';
import { RequestError } from '#core/errors';
import { createUpload } from '#core/upload';
import { headerValue, httpHandler, jsonResponse, queryParameters, tenantIdOf } from './http.ts';

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
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new RequestError('invalid_request', 'The body is not valid JSON.');
  }
  return jsonResponse(200, await createUpload(awsServices().media, tenantIdOf(event), body, new Date()));
});
