import type { operations } from './api-types.ts';

/**
 * What the typed client and the web console both need to submit a file, kept free of Node.js and of
 * the service's modules so that the console's browser bundle can take it as it is: the job's options
 * as form parts, and whether a file goes inside the form or by presigned upload.
 */

type SubmitForm = operations['submit']['requestBody']['content']['multipart/form-data'];
type OptionField = Exclude<keyof SubmitForm, 'audio' | 'audio_ref' | 'audio_url'>;

/** A job's options, typed; sent as the form's string parts. */
export interface JobOptions {
  dual_channel?: boolean;
  punctuate?: boolean;
  speaker_diarization?: boolean;
  tldr?: boolean;
  short_hand_notes?: boolean;
  language?: string;
  webhook_url?: string;
  custom?: string;
  speakers_expected?: number;
  retention_days?: number;
}

// Every option part of the document is one of JobOptions and the other way round: a new option in the
// document that the client does not know, or an option the document dropped, fails the type check.
type Missing = Exclude<OptionField, keyof JobOptions> | Exclude<keyof JobOptions, OptionField>;
const everyOptionKnown: [Missing] extends [never] ? true : Missing = true;
void everyOptionKnown;

/** Room in a direct submission for the form's other parts and its boundaries. */
export const FORM_OVERHEAD_BYTES = 16 * 1024;

/**
 * How a file of `bytes` is sent: inside the submission's form while the form fits the direct-upload
 * limit (`maxDirectUploadBytes` of request body), otherwise by presigned upload.
 */
export function uploadVia(bytes: number, maxDirectUploadBytes: number): 'direct' | 'presigned' {
  return bytes + FORM_OVERHEAD_BYTES <= maxDirectUploadBytes ? 'direct' : 'presigned';
}

/** The options that are set, as the form's text parts ("true"/"false" for the flags). */
export function optionsForm(options: JobOptions): FormData {
  const form = new FormData();
  const fields: Record<keyof JobOptions, unknown> = {
    dual_channel: options.dual_channel,
    punctuate: options.punctuate,
    speaker_diarization: options.speaker_diarization,
    tldr: options.tldr,
    short_hand_notes: options.short_hand_notes,
    language: options.language,
    webhook_url: options.webhook_url,
    custom: options.custom,
    speakers_expected: options.speakers_expected,
    retention_days: options.retention_days,
  };
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined) form.append(name, String(value));
  }
  return form;
}
