import { awsServices } from '#aws/services';
import { getJobStatus } from '#core/status';
import { httpHandler, jsonResponse, queryParameters, requiredJobId, tenantIdOf } from './http.ts';

/** GET /v1-beta/transcript/status?id=: the job, with its results once completed (SPEC 4.2). */
export const handler = httpHandler(async (event) => {
  const id = requiredJobId(queryParameters(event, ['id']).id);
  return jsonResponse(200, await getJobStatus(awsServices(), tenantIdOf(event), id));
});
