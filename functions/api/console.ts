import { z } from 'zod';
import { awsServices } from '#aws/services';
import {
  MAX_DIRECT_UPLOAD_BYTES,
  MAX_UPLOAD_BYTES,
  MIN_RETENTION_DAYS,
  RETENTION_DAYS,
} from '#commons/contract';
import { CONSOLE_SCRIPT, CONSOLE_STYLE } from '#console/generated/assets';
import { type ConsoleSettings, consolePage } from '#console/page';
import {
  LANGUAGES,
  MAX_CUSTOM_LENGTH,
  MAX_RETENTION_DAYS,
  MAX_SPEAKERS_EXPECTED,
  optionsSchema,
} from '#core/options';
import { httpHandler, pageResponse } from './http.ts';
import type { RouteOperation } from './schemas.ts';

/** The form's defaults are the API's: what the submission schema makes of a form without options. */
const defaults = optionsSchema(false).parse({});
const SETTINGS: ConsoleSettings = {
  defaults: {
    dual_channel: defaults.dual_channel,
    punctuate: defaults.punctuate,
    speaker_diarization: defaults.speaker_diarization,
    tldr: defaults.tldr,
    short_hand_notes: defaults.short_hand_notes,
    language: defaults.language,
  },
  languages: LANGUAGES,
  maxCustomLength: MAX_CUSTOM_LENGTH,
  maxSpeakersExpected: MAX_SPEAKERS_EXPECTED,
  retentionDays: { min: MIN_RETENTION_DAYS, max: MAX_RETENTION_DAYS, default: RETENTION_DAYS },
  maxDirectUploadBytes: MAX_DIRECT_UPLOAD_BYTES,
  maxUploadBytes: MAX_UPLOAD_BYTES,
};

/**
 * GET /console: the web console page. It holds no data; the page asks the API with the user's key, and
 * plays and uploads audio through the media bucket's presigned URLs, whose origin its policy allows.
 */
export const handler = httpHandler(async () =>
  pageResponse(
    (nonce) => consolePage({ script: CONSOLE_SCRIPT, style: CONSOLE_STYLE }, nonce, SETTINGS),
    await awsServices().mediaOrigin(),
  ),
);

/** The route in the OpenAPI document. */
export const operation: RouteOperation = {
  summary: 'Web console',
  description:
    'A page that lists, shows, plays, submits and deletes the jobs of the API key pasted into it. It holds no data.',
  responses: { '200': { description: 'The page.', content: { 'text/html': { schema: z.string() } } } },
};
