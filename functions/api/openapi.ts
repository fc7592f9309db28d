import { z } from 'zod';
import { httpHandler } from './http.ts';
import document from './openapi.json' with { type: 'json' };
import type { RouteOperation } from './schemas.ts';

const body = JSON.stringify(document);

/** GET /openapi.json: the OpenAPI document (written by `npm run openapi`, checked by the tests). */
export const handler = httpHandler(async () => ({
  statusCode: 200,
  headers: {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'public, max-age=300',
    // A published contract: any page may read it.
    'access-control-allow-origin': '*',
    'x-content-type-options': 'nosniff',
  },
  body,
}));

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'This document',
  description: 'The OpenAPI 3.1 document of the API.',
  responses: {
    '200': {
      description: 'The document.',
      content: { 'application/json': { schema: z.object({}).loose() } },
    },
  },
};
