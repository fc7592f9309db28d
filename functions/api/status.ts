import { awsServices } from '#aws/services';
import { getJobStatus } from '#core/status';
import { httpHandler, jsonResponse, queryParameters, requiredJobId, tenantIdOf } from './http.ts';
import {
  errorResponses,
  jobIdQuery,
  jsonContent,
  type RouteOperation,
  statusRecordSchema,
} from './schemas.ts';

/** GET /v1-beta/transcript/status?id=: the job, with its results once completed (SPEC 4.2). */
export const handler = httpHandler(async (event) => {
  const id = requiredJobId(queryParameters(event, ['id']).id);
  return jsonResponse(200, await getJobStatus(awsServices(), tenantIdOf(event), id));
});

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'Follow a job',
  description:
    '`results` only when completed, `error` only when in error. A deleted job, one past its retention and ' +
    "another account's job are a 404 like an unknown one.",
  requestParams: { query: jobIdQuery },
  responses: {
    '200': { description: 'The job (SPEC 2.2).', content: jsonContent(statusRecordSchema) },
    ...errorResponses([400, 404]),
  },
};
