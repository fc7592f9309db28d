import { z } from 'zod';
import { awsServices } from '#aws/services';
import { RequestError } from '#core/errors';
import { EXPORT_CONTENT_TYPES, EXPORT_FORMATS, exportTranscript, parseExportFormat } from '#core/export';
import { getJobStatus } from '#core/status';
import { httpHandler, queryParameters, requiredJobId, tenantIdOf } from './http.ts';
import { errorResponses, jobIdQuery, type RouteOperation } from './schemas.ts';

/** GET /v1-beta/transcript/export?id=&format=txt|srt|vtt: a completed transcript as a file. */
export const handler = httpHandler(async (event) => {
  const query = queryParameters(event, ['id', 'format']);
  const id = requiredJobId(query.id);
  const format = parseExportFormat(query.format);
  const record = await getJobStatus(awsServices(), tenantIdOf(event), id);
  if (!record.results) {
    throw new RequestError(
      'invalid_request',
      `The job is ${record.status}; only completed jobs can be exported.`,
      'id',
    );
  }
  return {
    statusCode: 200,
    headers: {
      'content-type': EXPORT_CONTENT_TYPES[format],
      'content-disposition': `attachment; filename="${id}.${format}"`,
      'cache-control': 'no-store',
    },
    body: exportTranscript(record.results.results, format),
  };
});

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'Download a transcript',
  description: 'A completed job as plain text (speaker turns when known), SRT or WebVTT subtitles.',
  requestParams: { query: jobIdQuery.extend({ format: z.enum(EXPORT_FORMATS) }) },
  responses: {
    '200': {
      description: 'The transcript as a file.',
      content: Object.fromEntries(
        EXPORT_FORMATS.map((format) => [EXPORT_CONTENT_TYPES[format].split(';')[0], { schema: z.string() }]),
      ),
    },
    ...errorResponses([400, 404]),
  },
};
