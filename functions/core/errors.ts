import { z } from 'zod';
/** Errors that cross the edge of the domain: refused requests and permanent job failures. */

export const REQUEST_ERROR_CODES = [
  'invalid_request',
  'invalid_option',
  'missing_audio',
  'unsupported_language',
  'missing_api_key',
  'invalid_api_key',
  'not_found',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'conflict',
  'internal',
] as const;
export type RequestErrorCode = (typeof REQUEST_ERROR_CODES)[number];

/**
 * A request the service refuses, with a code a client can act on and the field at fault. Only the API's
 * edge (`functions/api`) turns it into an HTTP status and the body `{error: {code, message, field?}}`.
 */
export class RequestError extends Error {
  constructor(
    readonly code: RequestErrorCode,
    message: string,
    readonly field?: string,
    /** For `rate_limited` and `conflict`: when trying again may succeed. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

export const JOB_ERROR_CODES = [
  'unsupported_media',
  'no_audio',
  'not_dual_channel',
  'audio_too_long',
  'audio_too_large',
  'download_failed',
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

/**
 * What an error thrown while working on a job means. `input`: the job can never succeed (a JobFailure),
 * it ends in `error` with its code at once. `bug`: an error of the program itself (a TypeError,
 * RangeError, …), which no retry fixes: the job ends in `error` with `internal`. `transient`: anything
 * else (the network, a throttled or failing AWS service, a killed process), worth retrying later.
 */
export type FailureKind = 'input' | 'bug' | 'transient';

const PROGRAM_ERRORS = [TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError];

export function failureKind(error: unknown): FailureKind {
  if (error instanceof JobFailure) return 'input';
  // fetch reports an unreachable network as a TypeError whose cause is the system error.
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string') return 'transient';
  if (PROGRAM_ERRORS.some((type) => error instanceof type)) return 'bug';
  // Data this service wrote itself (a plan, a chunk's result) that fails its schema will not heal on a retry.
  if (error instanceof z.ZodError) return 'bug';
  return 'transient';
}
