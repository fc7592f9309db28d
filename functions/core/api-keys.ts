import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { API_KEY_PARAMETER } from '#commons/contract';
import { RequestError } from './errors.ts';
import type { ApiKeyRecord, ApiKeyStore } from './ports.ts';

const KEY_PREFIX = 'tsk_';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A new key for a tenant: the plain key is returned once and only its hash is stored. */
export async function createApiKey(
  store: ApiKeyStore,
  input: { tenantId: string; label?: string; key?: string; now: Date },
): Promise<{ key: string; record: ApiKeyRecord }> {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(input.tenantId)) {
    throw new Error('A tenant id is 1-64 letters, digits, "_" or "-".');
  }
  const key = input.key ?? KEY_PREFIX + randomBytes(32).toString('base64url');
  if (key.length < 16) throw new Error('An API key must be at least 16 characters long.');
  const record: ApiKeyRecord = {
    keyHash: hashApiKey(key),
    keyId: `key_${randomBytes(6).toString('hex')}`,
    tenantId: input.tenantId,
    createdAt: input.now.toISOString(),
    ...(input.label ? { label: input.label } : {}),
  };
  await store.put(record);
  return { key, record };
}

/** The tenant that owns a key; a RequestError when the key is absent, unknown or revoked. */
export async function authenticate(store: ApiKeyStore, key: string | undefined): Promise<string> {
  if (!key) {
    throw new RequestError(
      'missing_api_key',
      `Pass your API key in the ${API_KEY_PARAMETER} query parameter (or the ${API_KEY_PARAMETER} header).`,
    );
  }
  const hash = hashApiKey(key);
  const record = await store.findByHash(hash);
  // The lookup is by hash; comparing the hashes again in constant time keeps every path to the tenant
  // free of a comparison whose duration depends on how much of a guess was right.
  const matches =
    record !== undefined &&
    record.keyHash.length === hash.length &&
    timingSafeEqual(Buffer.from(record.keyHash, 'hex'), Buffer.from(hash, 'hex'));
  if (!matches || record.revokedAt) throw new RequestError('invalid_api_key', 'The API key is not valid.');
  return record.tenantId;
}
