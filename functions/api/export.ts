import { awsServices } from '#aws/services';
import { RequestError } from '#core/errors';
import { EXPORT_CONTENT_TYPES, exportTranscript, parseExportFormat } from '#core/export';
import { getJobStatus } from '#core/status';
import { httpHandler, queryParameters, requiredJobId, tenantIdOf } from './http.ts';

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
