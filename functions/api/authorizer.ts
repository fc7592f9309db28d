import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { awsServices } from '#aws/services';
import { API_KEY_PARAMETER } from '#commons/contract';
import { authenticate } from '#core/api-keys';
import { RequestError } from '#core/errors';
import { headerValue } from './http.ts';

/**
 * REQUEST authorizer: resolves the API key (query parameter, or header) to its tenant. A refused key
 * gets a Deny policy whose context carries the error code and message; the gateway's ACCESS_DENIED
 * response turns them into a 401 `{error: {code, message}}`.
 */
export async function handler(event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const key =
    event.queryStringParameters?.[API_KEY_PARAMETER] ?? headerValue(event.headers, API_KEY_PARAMETER);
  try {
    const tenantId = await authenticate(awsServices().apiKeys, key);
    return policy('Allow', tenantId, event.methodArn, { tenantId });
  } catch (error) {
    if (!(error instanceof RequestError)) throw error;
    return policy('Deny', 'anonymous', event.methodArn, {
      errorCode: error.code,
      errorMessage: error.message,
    });
  }
}

function policy(
  effect: 'Allow' | 'Deny',
  principalId: string,
  methodArn: string,
  context: Record<string, string>,
): APIGatewayAuthorizerResult {
  return {
    principalId,
    policyDocument: {
      Version: '2012-10-17',
      // The whole API of this stage, so that a cached decision holds for every route.
      Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: apiWideArn(methodArn) }],
    },
    context,
  };
}

/** arn:aws:execute-api:region:account:apiId/stage/METHOD/path → arn:…:apiId/stage/*\/* */
function apiWideArn(methodArn: string): string {
  const [api, stage] = methodArn.split('/');
  return `${api}/${stage}/*/*`;
}
