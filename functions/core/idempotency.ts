import { RequestError } from './errors.ts';
import type { IdempotentRequests } from './ports.ts';

/** The header that makes a submission or an upload request idempotent. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** The header on an answer repeated for an `Idempotency-Key` instead of made anew. */
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** An `Idempotency-Key` value: 1 to 255 visible ASCII characters (a UUID is typical). */
export function parseIdempotencyKey(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!IDEMPOTENCY_KEY_PATTERN.test(value)) {
    throw new RequestError(
      'invalid_request',
      `${IDEMPOTENCY_HEADER} must be 1 to 255 visible ASCII characters, such as a UUID.`,
      IDEMPOTENCY_HEADER,
    );
  }
  return value;
}

/**
 * Runs the work once per `Idempotency-Key` when the client sent one (see IdempotentRequests: the same
 * key and fingerprint within 24 hours answer the first result, another fingerprint is a `conflict`);
 * without a key, every request is new.
 */
export async function onceForKey<Result extends object>(
  idempotency: IdempotentRequests,
  request: {
    scope: string;
    tenantId: string;
    key: string | undefined;
    fingerprint: () => string;
    work: () => Promise<Result>;
  },
): Promise<{ result: Result; replayed: boolean }> {
  const { key, work } = request;
  if (key === undefined) return { result: await work(), replayed: false };
  return idempotency.once({
    scope: request.scope,
    tenantId: request.tenantId,
    key,
    fingerprint: request.fingerprint(),
    work,
  });
}
