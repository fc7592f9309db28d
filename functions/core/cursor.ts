import { RequestError } from './errors.ts';

/** Where a page of a tenant's job list ended: the last job's id and submission time. */
export interface ListPosition {
  id: string;
  timestamp_submitted: string;
}

/** Longer cursors are never issued; refusing them early keeps junk out of parsing. */
const MAX_CURSOR_LENGTH = 512;
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An opaque, URL-safe cursor for the next page of one tenant's list. */
export function encodeCursor(tenantId: string, position: ListPosition): string {
  const value = { t: tenantId, id: position.id, ts: position.timestamp_submitted };
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/**
 * The position a cursor names, checked before it is used: it must be one this service issued for this
 * tenant, and not older than the list's window (`since`), since a store cannot start a query outside it.
 * Anything else is a RequestError naming `cursor`, never a failure further down.
 */
export function decodeCursor(cursor: string, tenantId: string, since: string): ListPosition {
  const refuse = (why: string): never => {
    throw new RequestError('invalid_request', `The cursor ${why}; start again without it.`, 'cursor');
  };
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    refuse('is not valid');
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    refuse('is not valid');
  }
  const { t, id, ts } = (value ?? {}) as Record<string, unknown>;
  if (typeof t !== 'string' || typeof id !== 'string' || typeof ts !== 'string') refuse('is not valid');
  if (t !== tenantId) refuse('belongs to another list');
  if (
    !JOB_ID.test(id as string) ||
    !ISO_TIMESTAMP.test(ts as string) ||
    Number.isNaN(Date.parse(ts as string))
  ) {
    refuse('is not valid');
  }
  if ((ts as string) < since) refuse('has expired');
  return { id: id as string, timestamp_submitted: ts as string };
}
