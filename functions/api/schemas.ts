import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import { API_KEY_PARAMETER, ENGINES } from '#commons/contract';
import type { AudioDownload } from '#core/audio-download';
import type { DeletionRecord } from '#core/delete-job';
import { JOB_ERROR_CODES, REQUEST_ERROR_CODES } from '#core/errors';
import { IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY_PATTERN } from '#core/idempotency';
import {
  JOB_STATUSES,
  type JobSummary,
  type StatusRecord,
  type SubmissionRecord,
  WEBHOOK_STATUSES,
} from '#core/job';
import type { JobList } from '#core/list-jobs';
import type { TranscriptResult } from '#core/result';
import type { UploadTicket } from '#core/upload';
import type { WebhookEvent } from '#core/webhooks';

/**
 * The zod schemas of what the API answers, for the OpenAPI document (`npm run openapi`). The records
 * are built by core as TypeScript types; the checks at the end of this file make the build fail when a
 * schema and its type part, and a test holds every route's real answers to the document.
 */

export const errorSchema = z
  .object({
    error: z.object({
      code: z.enum(REQUEST_ERROR_CODES),
      message: z.string(),
      field: z
        .string()
        .optional()
        .meta({ description: 'The form part, query parameter or header at fault.' }),
    }),
  })
  .meta({ id: 'Error', description: 'Every refusal: a code a client can act on, and a message.' });

const jobError = z
  .object({ code: z.enum(JOB_ERROR_CODES), message: z.string() })
  .meta({ id: 'JobError', description: 'Why a job ended in `error`.' });

const timestamp = z
  .string()
  .meta({ description: 'ISO 8601 UTC with milliseconds.', example: '2026-11-21T06:11:47.088Z' });
// Typed as a string by core (String(boolean)); the document says which two it is.
const flagString = z.string().meta({ enum: ['true', 'false'] });

export const submissionRecordSchema = z
  .object({
    id: z.string(),
    status: z.enum(JOB_STATUSES),
    dual_channel: flagString,
    punctuate: flagString,
    webhook_url: z.string(),
    custom: z.string(),
    speaker_diarization: flagString,
    language: z.string(),
    timestamp_submitted: timestamp,
    tldr: flagString,
    short_hand_notes: flagString,
    speakers_expected: z.string().optional().meta({ description: 'Only when sent.' }),
    retention_days: z.string().optional().meta({ description: 'Only when sent.' }),
  })
  .meta({
    id: 'SubmissionRecord',
    description: 'SPEC 2.1: the options echoed as the strings "true"/"false".',
  });

const jobDataShape = {
  id: z.string(),
  status: z.enum(JOB_STATUSES),
  dual_channel: z.boolean(),
  punctuate: z.boolean(),
  webhook_url: z.string(),
  custom: z.string(),
  speaker_diarization: z.boolean(),
  language: z.string(),
  timestamp_submitted: timestamp,
  speakers_expected: z.number().int().optional().meta({ description: 'Only when sent.' }),
  retention_days: z.number().int().optional().meta({ description: 'Only when sent.' }),
  webhook_status: z
    .enum(WEBHOOK_STATUSES)
    .optional()
    .meta({ description: 'Only with a webhook_url, once the job has finished.' }),
  webhook_attempts: z.number().int().optional(),
  webhook_response_code: z
    .number()
    .int()
    .optional()
    .meta({ description: "The HTTP status of the receiver's last answer." }),
  webhook_error: z
    .string()
    .optional()
    .meta({ description: 'Why the last attempt got no answer, or why delivery stopped.' }),
};

const jobDataSchema = z.object(jobDataShape).meta({ id: 'JobData' });

const wordSchema = z.object({
  startTime: z.number().int().meta({ description: 'Milliseconds from the start of the audio.' }),
  endTime: z.number().int(),
  word: z.string(),
  confidence: z.number().min(0).max(1),
  speaker: z.string().optional(),
  channel: z.number().int().optional(),
});

const utteranceSchema = z.object({
  startTime: z.number().int(),
  endTime: z.number().int(),
  text: z.string(),
  speaker: z.string().optional(),
  channel: z.number().int().optional(),
});

export const transcriptResultSchema = z
  .object({
    transcript: z.string(),
    words: z.array(wordSchema),
    utterances: z.array(utteranceSchema).optional(),
    tldr: z.string().optional(),
    short_hand_notes: z.string().optional(),
    audio_duration_ms: z.number().int(),
    engine: z.string().meta({ description: `What transcribed: ${ENGINES.join(' or ')}.` }),
    notes: z.array(z.string()).optional(),
  })
  .meta({ id: 'TranscriptResult' });

export const statusRecordSchema = z
  .object({
    ...jobDataShape,
    error: jobError.optional().meta({ description: 'Only when status is error.' }),
    progress: z
      .object({ chunks_done: z.number().int().min(0), chunks_total: z.number().int().min(1) })
      .optional()
      .meta({ description: "While a long job's chunks are transcribed: how many are done of how many." }),
    results: z
      .object({ job_data: jobDataSchema, results: transcriptResultSchema })
      .optional()
      .meta({ description: 'Only when status is completed.' }),
  })
  .meta({ id: 'StatusRecord', description: 'SPEC 2.2, with JSON booleans.' });

const jobSummarySchema = z
  .object({
    ...jobDataShape,
    tldr: z.boolean(),
    short_hand_notes: z.boolean(),
    audio_duration_ms: z.number().int().optional(),
    error: jobError.optional(),
  })
  .meta({ id: 'JobSummary' });

export const jobListSchema = z
  .object({ jobs: z.array(jobSummarySchema), next_cursor: z.string().nullable() })
  .meta({ id: 'JobList' });

export const deletionRecordSchema = z
  .object({ id: z.string(), status: z.literal('deleted'), deleted_at: timestamp })
  .meta({ id: 'DeletionRecord' });

export const uploadTicketSchema = z
  .object({
    audio_ref: z
      .string()
      .meta({ description: 'Send it as the `audio_ref` part of a submission once uploaded.' }),
    upload_url: z.string().meta({ description: 'Where to PUT the file, before `expires_at`.' }),
    method: z.literal('PUT'),
    headers: z
      .record(z.string(), z.string())
      .meta({ description: 'Send exactly these headers with the PUT: they are part of its signature.' }),
    expires_at: timestamp,
    max_bytes: z.number().int(),
  })
  .meta({ id: 'UploadTicket', description: 'A presigned upload for a file over the direct-upload limit.' });

export const audioDownloadSchema = z
  .object({
    download_url: z
      .string()
      .meta({ description: 'A presigned GET of the audio (it takes Range requests), until `expires_at`.' }),
    expires_at: timestamp,
  })
  .meta({ id: 'AudioDownload', description: "Where to read a job's audio, for a short time." });

export const webhookEventSchema = z
  .object({
    type: z.enum(['transcript.completed', 'transcript.failed']),
    timestamp: timestamp,
    id: z.string(),
    status: z.enum(['completed', 'error']),
    error: jobError.optional().meta({ description: 'Only when status is error.' }),
    status_url: z.string().meta({ description: "The job's status route, to read the rest." }),
  })
  .meta({
    id: 'WebhookEvent',
    description:
      'The body POSTed to `webhook_url` once a job has ended, signed with the Standard Webhooks headers ' +
      '`webhook-id`, `webhook-timestamp` and `webhook-signature`.',
  });

/** The `Idempotency-Key` request header of the routes that create something. */
export const idempotencyKeyHeader = z.object({
  [IDEMPOTENCY_HEADER]: z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN)
    .optional()
    .meta({ description: 'Makes the request idempotent for 24 hours (a UUID is typical).' }),
});

/** The `id` query parameter of the routes about one job. */
export const jobIdQuery = z.object({
  id: z.string().meta({ description: 'The job id from the submission.' }),
});

export function jsonContent(schema: z.ZodType) {
  return { 'application/json': { schema } };
}

/** The refusals every route behind the API key may answer, beside its own. */
export function errorResponses(statuses: number[]): ZodOpenApiResponsesObject {
  const described: Record<number, string> = {
    400: 'Invalid request: unknown or repeated query parameters, malformed values.',
    401: 'No API key, or one that is not valid.',
    404: 'No such job for this account (or no such route).',
    409: 'The Idempotency-Key was used for another request, or its first request is still running.',
    413: 'The request body is too large for the route.',
    415: 'Not the content type the route takes.',
    429: 'Too many jobs queued or processing, or too many requests.',
    500: 'Internal error.',
  };
  return Object.fromEntries(
    [...statuses, 401, 500].map((status) => [
      String(status),
      { description: described[status] ?? 'Refused.', content: jsonContent(errorSchema) },
    ]),
  );
}

/** What a route contributes to the OpenAPI document: its operation, written beside its handler. */
export type RouteOperation = ZodOpenApiOperationObject;

export const API_KEY_SECURITY: Record<string, string[]>[] = [{ apiKeyQuery: [] }, { apiKeyHeader: [] }];
export const SECURITY_SCHEMES = {
  apiKeyQuery: { type: 'apiKey', in: 'query', name: API_KEY_PARAMETER },
  apiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: API_KEY_PARAMETER,
    description: 'Only when the authorizer cache is off (`authorizerCacheSeconds=0`).',
  },
} as const;

// Build-time checks: each schema describes exactly the type core builds.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const typesMatch = {
  submission: true satisfies Same<z.infer<typeof submissionRecordSchema>, SubmissionRecord>,
  status: true satisfies Same<z.infer<typeof statusRecordSchema>, StatusRecord>,
  summary: true satisfies Same<z.infer<typeof jobListSchema>['jobs'][number], JobSummary>,
  list: true satisfies Same<z.infer<typeof jobListSchema>, JobList>,
  result: true satisfies Same<z.infer<typeof transcriptResultSchema>, TranscriptResult>,
  deletion: true satisfies Same<z.infer<typeof deletionRecordSchema>, DeletionRecord>,
  upload: true satisfies Same<z.infer<typeof uploadTicketSchema>, UploadTicket>,
  audio: true satisfies Same<z.infer<typeof audioDownloadSchema>, AudioDownload>,
  webhook: true satisfies Same<z.infer<typeof webhookEventSchema>, WebhookEvent>,
};
void typesMatch;
