import { awsServices } from '#aws/services';
import { listJobs } from '#core/list-jobs';
import { httpHandler, jsonResponse, queryParameters, tenantIdOf } from './http.ts';

/** GET /v1-beta/transcripts?limit=&cursor=&status=&q=: the tenant's jobs of the last 90 days, newest first. */
export const handler = httpHandler(async (event) => {
  const query = queryParameters(event, ['limit', 'cursor', 'status', 'q']);
  return jsonResponse(200, await listJobs(awsServices().jobs, tenantIdOf(event), query, new Date()));
});
