/** Errors that cross the edge of the domain: HTTP errors for clients and permanent job failures. */

export type ApiErrorCode =
  | 'invalid_request'
  | 'invalid_option'
  | 'missing_audio'
  | 'unsupported_language'
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'not_found'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'internal';

/** An error answered to the client as `{error: {code, message, field?}}` with an HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toBody(): { error: { code: ApiErrorCode; message: string; field?: string } } {
    return {
      error: { code: this.code, message: this.message, ...(this.field ? { field: this.field } : {}) },
    };
  }
}

export const JOB_ERROR_CODES = [
  'unsupported_media',
  'no_audio',
  'not_dual_channel',
  'audio_too_long',
  'transcription_failed',
  'internal',
] as const;

export type JobErrorCode = (typeof JOB_ERROR_CODES)[number];

export interface JobError {
  code: JobErrorCode;
  message: string;
}

/**
 * A failure that retrying cannot fix (bad media, wrong channel count): the job ends in `error` at once.
 * Any other exception thrown while processing is treated as transient and retried by the queue.
 */
export class JobFailure extends Error {
  constructor(
    readonly code: JobErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'JobFailure';
  }

  toJobError(): JobError {
    return { code: this.code, message: this.message };
  }
}
