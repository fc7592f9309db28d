import { awsServices } from '#aws/services';
import { ApiError } from '#core/errors';
import { getJobStatus } from '#core/status';
import { httpHandler, jsonResponse, queryParameter, tenantIdOf } from './http.ts';

/** Longer ids are never issued; refusing them early keeps them out of the table query. */
const MAX_ID_LENGTH = 128;

/** GET /v1-beta/transcript/status?id=: the job, with its results once completed (SPEC 4.2). */
export const handler = httpHandler(async (event) => {
  const id = queryParameter(event, 'id')?.trim();
  if (!id) throw new ApiError(400, 'invalid_request', 'Pass the job id in the "id" query parameter.', 'id');
  if (id.length > MAX_ID_LENGTH) throw new ApiError(404, 'not_found', 'No job with that id.', 'id');
  return jsonResponse(200, await getJobStatus(awsServices(), tenantIdOf(event), id));
});
