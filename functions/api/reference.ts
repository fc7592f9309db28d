import { z } from 'zod';
import { REFERENCE_SCRIPT, REFERENCE_STYLE } from '#console/generated/reference-assets';
import { referencePage } from '#console/reference-page';
import { httpHandler, pageResponse } from './http.ts';
import document from './openapi.json' with { type: 'json' };
import type { RouteOperation } from './schemas.ts';

/** GET /reference: the API reference, rendered in the browser from the OpenAPI document by Swagger UI. */
export const handler = httpHandler(async () =>
  pageResponse((nonce) =>
    referencePage({ script: REFERENCE_SCRIPT, style: REFERENCE_STYLE }, document, nonce),
  ),
);

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'API reference',
  description: 'A readable page of this document, served with everything it needs (no other origin).',
  responses: { '200': { description: 'The page.', content: { 'text/html': { schema: z.string() } } } },
};
