import { createDocument } from 'zod-openapi';
import { API_ROUTES, type ApiHandlerName } from '#commons/contract';
import { operation as audio } from './audio.ts';
import { operation as consolePage } from './console.ts';
import { operation as deleteJob } from './delete.ts';
import { operation as exportTranscript } from './export.ts';
import { operation as list } from './list.ts';
import { operation as openapi } from './openapi.ts';
import { operation as reference } from './reference.ts';
import {
  API_KEY_SECURITY,
  jsonContent,
  type RouteOperation,
  SECURITY_SCHEMES,
  webhookEventSchema,
} from './schemas.ts';
import { operation as status } from './status.ts';
import { operation as submit } from './submit.ts';
import { operation as upload } from './upload.ts';

/** The version of the API the document describes. */
export const API_VERSION = '1.2.0';

/** Each route's operation, written beside its handler; a new route does not build without its own. */
const OPERATIONS: Record<ApiHandlerName, RouteOperation> = {
  submit,
  upload,
  status,
  export: exportTranscript,
  audio,
  delete: deleteJob,
  list,
  console: consolePage,
  openapi,
  reference,
};

/**
 * The OpenAPI 3.1 document of every route of the contract's API_ROUTES, from the zod schemas the
 * handlers parse with and answer in (zod-openapi). `npm run openapi` writes it to
 * `functions/api/openapi.json`, which the API serves; a test keeps the two equal.
 */
export function openApiDocument(): ReturnType<typeof createDocument> {
  const paths: Record<string, Record<string, RouteOperation>> = {};
  for (const route of API_ROUTES) {
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, RouteOperation>)[route.method.toLowerCase()] = {
      operationId: route.handler,
      ...OPERATIONS[route.handler],
      security: route.authorized ? API_KEY_SECURITY : [],
    };
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Transcription service',
      version: API_VERSION,
      description:
        'Asynchronous transcription: submit a file, get a job at once, follow it until it is completed or in ' +
        'error, or receive a signed webhook (Standard Webhooks: `webhook-id`, `webhook-timestamp`, ' +
        "`webhook-signature`, HMAC-SHA256 with your account's secret) when it ends. Errors are " +
        '`{"error": {"code", "message", "field"?}}`.',
    },
    // Relative to where this document is served: the API's `{base_url}`.
    servers: [{ url: '.' }],
    components: { securitySchemes: SECURITY_SCHEMES },
    paths,
    webhooks: {
      transcriptFinished: {
        post: {
          operationId: 'transcriptFinished',
          summary: 'A job has ended',
          description:
            'Sent to the `webhook_url` of a job once it is `completed` or in `error`; a 2xx within 10 s ' +
            'delivers it, anything else is retried for about 21 hours (see the README).',
          requestBody: { required: true, content: jsonContent(webhookEventSchema) },
          responses: { '200': { description: 'Any 2xx delivers the webhook.' } },
        },
      },
    },
  });
}
