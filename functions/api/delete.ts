import { awsServices } from '#aws/services';
import { deleteJob } from '#core/delete-job';
import { httpHandler, jsonResponse, queryParameters, requiredJobId, tenantIdOf } from './http.ts';
import {
  deletionRecordSchema,
  errorResponses,
  jobIdQuery,
  jsonContent,
  type RouteOperation,
} from './schemas.ts';

/**
 * DELETE /v1-beta/transcript?id=: removes a job's audio, result and engine output and leaves a
 * tombstone; the job is a 404 from then on. Deleting again answers the same.
 */
export const handler = httpHandler(async (event) => {
  const id = requiredJobId(queryParameters(event, ['id']).id);
  const { jobs, media } = awsServices();
  return jsonResponse(200, await deleteJob({ jobs, media, clock: () => new Date() }, tenantIdOf(event), id));
});

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'Delete a job',
  description:
    "Removes the audio, the result and any engine output, and the job record's content (a tombstone with the " +
    'id, the account and the deletion time stays). From then on the job is a 404 on every route. Idempotent: ' +
    'deleting again answers the same record. A job being transcribed is never completed afterwards.',
  requestParams: { query: jobIdQuery },
  responses: {
    '200': { description: 'The job is deleted.', content: jsonContent(deletionRecordSchema) },
    ...errorResponses([400, 404]),
  },
};
