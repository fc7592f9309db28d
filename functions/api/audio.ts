import { awsServices } from '#aws/services';
import { AUDIO_DOWNLOAD_URL_EXPIRY_SECONDS } from '#commons/contract';
import { getAudioDownload } from '#core/audio-download';
import { httpHandler, jsonResponse, queryParameters, requiredJobId, tenantIdOf } from './http.ts';
import {
  audioDownloadSchema,
  errorResponses,
  jobIdQuery,
  jsonContent,
  type RouteOperation,
} from './schemas.ts';

/** GET /v1-beta/transcript/audio?id=: a short-lived presigned GET of the job's audio, for playing it. */
export const handler = httpHandler(async (event) => {
  const id = requiredJobId(queryParameters(event, ['id']).id);
  return jsonResponse(200, await getAudioDownload(awsServices(), tenantIdOf(event), id));
});

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: "Read a job's audio",
  description:
    `A presigned URL that GETs the job's audio as it was submitted, valid ${AUDIO_DOWNLOAD_URL_EXPIRY_SECONDS} ` +
    'seconds (ask again for a new one); it takes `Range` requests, so a player can seek. The bucket is never ' +
    "public. A deleted job, one past its retention, another account's job, and audio that is not stored (an " +
    '`audio_url` not fetched yet, or that failed) are a 404.',
  requestParams: { query: jobIdQuery },
  responses: {
    '200': { description: 'Where to read the audio.', content: jsonContent(audioDownloadSchema) },
    ...errorResponses([400, 404]),
  },
};
