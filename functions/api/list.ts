import { awsServices } from '#aws/services';
import { listJobs, listQuery } from '#core/list-jobs';
import { httpHandler, jsonResponse, queryParameters, tenantIdOf } from './http.ts';
import { errorResponses, jobListSchema, jsonContent, type RouteOperation } from './schemas.ts';

/** GET /v1-beta/transcripts?limit=&cursor=&status=&q=: the tenant's jobs of the last 90 days, newest first. */
export const handler = httpHandler(async (event) => {
  const query = queryParameters(event, ['limit', 'cursor', 'status', 'q']);
  return jsonResponse(200, await listJobs(awsServices().jobs, tenantIdOf(event), query, new Date()));
});

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'List jobs',
  description:
    "The account's jobs of the last 90 days (or their shorter retention), newest first, never the results.",
  requestParams: { query: listQuery },
  responses: {
    '200': { description: 'A page of jobs.', content: jsonContent(jobListSchema) },
    ...errorResponses([400]),
  },
};
