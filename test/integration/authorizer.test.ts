import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#api/authorizer';
import { awsServices } from '#aws/services';
import { createApiKey, hashApiKey } from '#core/api-keys';
import { useFreshResources } from '#test/helpers/fresh-resources';

const methodArn = 'arn:aws:execute-api:us-east-1:123456789012:abc123/v1-beta/POST/v1-beta/transcript';

function authorizerEvent(input: { query?: Record<string, string>; headers?: Record<string, string> }) {
  return {
    type: 'REQUEST',
    methodArn,
    queryStringParameters: input.query ?? null,
    headers: input.headers ?? null,
  } as unknown as APIGatewayRequestAuthorizerEvent;
}

let key: string;
beforeAll(async () => {
  await useFreshResources();
  ({ key } = await createApiKey(awsServices().apiKeys, { tenantId: 'acme', now: new Date() }));
});

describe('API key authorizer', () => {
  it('stores only the SHA-256 hash of a key', async () => {
    const records = await awsServices().apiKeys.list();
    expect(records.map((record) => record.keyHash)).toContain(hashApiKey(key));
    expect(JSON.stringify(records)).not.toContain(key);
  });

  it('allows a valid key from the query string and passes its tenant on, for the whole API', async () => {
    const result = await handler(authorizerEvent({ query: { 'x-api-key': key } }));
    expect(result.principalId).toBe('acme');
    expect(result.context).toEqual({ tenantId: 'acme' });
    expect(result.policyDocument.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        Resource: 'arn:aws:execute-api:us-east-1:123456789012:abc123/v1-beta/*/*',
      },
    ]);
  });

  it('accepts the key in the x-api-key header too, in any case', async () => {
    const result = await handler(authorizerEvent({ headers: { 'X-Api-Key': key } }));
    expect(result.context).toEqual({ tenantId: 'acme' });
  });

  it('denies a missing key with missing_api_key and an unknown one with invalid_api_key', async () => {
    const missing = await handler(authorizerEvent({}));
    expect(missing.policyDocument.Statement[0]).toMatchObject({ Effect: 'Deny' });
    expect(missing.context).toMatchObject({ errorCode: 'missing_api_key' });

    const unknown = await handler(authorizerEvent({ query: { 'x-api-key': 'tsk_not-a-real-key-at-all' } }));
    expect(unknown.policyDocument.Statement[0]).toMatchObject({ Effect: 'Deny' });
    expect(unknown.context).toMatchObject({ errorCode: 'invalid_api_key' });
  });

  it('denies a revoked key', async () => {
    const { key: revokedKey, record } = await createApiKey(awsServices().apiKeys, {
      tenantId: 'gone',
      now: new Date(),
    });
    expect(await awsServices().apiKeys.revoke(record.keyId, new Date())).toBe(true);
    const result = await handler(authorizerEvent({ query: { 'x-api-key': revokedKey } }));
    expect(result.context).toMatchObject({ errorCode: 'invalid_api_key' });
  });
});
