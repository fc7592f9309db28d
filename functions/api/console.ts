import { z } from 'zod';
import { CONSOLE_SCRIPT, CONSOLE_STYLE } from '#console/generated/assets';
import { consolePage } from '#console/page';
import { httpHandler, pageResponse } from './http.ts';
import type { RouteOperation } from './schemas.ts';

/** GET /console: the web console page. It holds no data; the page asks the API with the user's key. */
export const handler = httpHandler(async () =>
  pageResponse((nonce) => consolePage({ script: CONSOLE_SCRIPT, style: CONSOLE_STYLE }, nonce)),
);

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'Web console',
  description: 'A page that lists and shows the jobs of the API key pasted into it. It holds no data.',
  responses: { '200': { description: 'The page.', content: { 'text/html': { schema: z.string() } } } },
};
