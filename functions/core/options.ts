import { z } from 'zod';
import { clientUrlProblem } from '#commons/client-urls';
import { MIN_RETENTION_DAYS, RETENTION_DAYS } from '#commons/contract';
import { RequestError } from './errors.ts';

/** The options a client sets per job (SPEC 4.1), after defaults (DESIGN 3). */
export interface JobOptions {
  dual_channel: boolean;
  punctuate: boolean;
  speaker_diarization: boolean;
  tldr: boolean;
  short_hand_notes: boolean;
  language: Language;
  webhook_url: string;
  custom: string;
  /** How many speakers the client expects (a hint to diarization); absent when not sent. */
  speakers_expected?: number;
  /** Days to keep the job, its audio and its result, when fewer than the 90 days of every job. */
  retention_days?: number;
}

export const LANGUAGES = ['enUs'] as const;
export type Language = (typeof LANGUAGES)[number];

export const MAX_CUSTOM_LENGTH = 4096;
export const MAX_SPEAKERS_EXPECTED = 10;

const flag = (name: string, fallback: boolean) =>
  z
    .stringbool({
      truthy: ['true'],
      falsy: ['false'],
      case: 'insensitive',
      error: `${name} must be "true" or "false".`,
    })
    .default(fallback);

const webhookUrl = (localMode: boolean) =>
  z
    .string()
    .trim()
    .default('')
    .superRefine((value, ctx) => {
      const problem = value === '' ? undefined : clientUrlProblem(value, { local: localMode });
      if (problem) ctx.addIssue({ code: 'custom', message: `webhook_url must be empty or ${problem}.` });
    });

/** The option parts of a submission form, as the submit handler parses them (and the OpenAPI document describes). */
export function optionsSchema(localMode: boolean) {
  return z.strictObject({
    dual_channel: flag('dual_channel', false),
    punctuate: flag('punctuate', true),
    speaker_diarization: flag('speaker_diarization', false),
    tldr: flag('tldr', false),
    short_hand_notes: flag('short_hand_notes', false),
    language: z
      .string()
      .trim()
      .default('enUs')
      .transform((value, ctx) => {
        const known = LANGUAGES.find((code) => code.toLowerCase() === value.toLowerCase());
        if (known) return known;
        ctx.addIssue({
          code: 'custom',
          message: `Language "${value}" is not supported. Accepted codes: ${LANGUAGES.join(', ')}.`,
        });
        return z.NEVER;
      }),
    webhook_url: webhookUrl(localMode),
    custom: z
      .string()
      .default('')
      .refine((value) => value.length <= MAX_CUSTOM_LENGTH, {
        error: `custom must be at most ${MAX_CUSTOM_LENGTH} characters.`,
      }),
    speakers_expected: z
      .string()
      .trim()
      .regex(/^\d{1,2}$/, { error: speakersExpectedError })
      .transform(Number)
      .refine((value) => value >= 1 && value <= MAX_SPEAKERS_EXPECTED, { error: speakersExpectedError })
      .optional(),
    retention_days: z
      .string()
      .trim()
      .regex(/^\d{1,2}$/, { error: retentionDaysError })
      .transform(Number)
      .refine((value) => value >= MIN_RETENTION_DAYS && value <= MAX_RETENTION_DAYS, {
        error: retentionDaysError,
      })
      .optional(),
  });
}

const speakersExpectedError = `speakers_expected must be a whole number from 1 to ${MAX_SPEAKERS_EXPECTED}.`;
/** Shorter than the retention of every job: asking for the default is asking for nothing. */
export const MAX_RETENTION_DAYS = RETENTION_DAYS - 1;
const retentionDaysError = `retention_days must be a whole number from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS}.`;

/** The text parts of a submission that are options; `audio`, `file` and `audio_ref` are not. */
export const OPTION_FIELDS = [
  'dual_channel',
  'punctuate',
  'speaker_diarization',
  'tldr',
  'short_hand_notes',
  'language',
  'webhook_url',
  'custom',
  'speakers_expected',
  'retention_days',
] as const;

export interface ParseOptionsSettings {
  /** Local mode accepts http:// and private addresses for webhooks (DESIGN 3). */
  localMode?: boolean;
}

/**
 * Parses the text parts of a submission into job options, applying defaults.
 * Throws a RequestError that names the first offending field.
 */
export function parseJobOptions(
  fields: Record<string, string>,
  settings: ParseOptionsSettings = {},
): JobOptions {
  const parsed = optionsSchema(settings.localMode ?? false).safeParse(fields);
  if (parsed.success) {
    const { speakers_expected, retention_days, ...parsedOptions } = parsed.data;
    const options: JobOptions =
      retention_days === undefined ? parsedOptions : { ...parsedOptions, retention_days };
    // A hint about speakers means nothing unless speakers are told apart.
    if (speakers_expected !== undefined && !options.speaker_diarization) {
      throw new RequestError(
        'invalid_option',
        'speakers_expected needs speaker_diarization=true.',
        'speakers_expected',
      );
    }
    return speakers_expected === undefined ? options : { ...options, speakers_expected };
  }

  const issue = parsed.error.issues[0];
  if (issue?.code === 'unrecognized_keys') {
    const field = issue.keys[0] ?? '';
    throw new RequestError(
      'invalid_request',
      `Unknown form field "${field}". Accepted fields: audio (or file), audio_ref, audio_url, ${OPTION_FIELDS.join(', ')}.`,
      field,
    );
  }
  const field = String(issue?.path[0] ?? '');
  const code = field === 'language' ? 'unsupported_language' : 'invalid_option';
  throw new RequestError(code, issue?.message ?? 'Invalid option.', field);
}
