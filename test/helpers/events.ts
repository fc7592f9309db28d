import type { APIGatewayProxyEvent, SQSEvent } from 'aws-lambda';

/** A multipart body built by the platform's FormData, as a client would send it. */
export async function multipartBody(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  return {
    body: Buffer.from(await request.arrayBuffer()),
    contentType: request.headers.get('content-type') ?? '',
  };
}

/** The event API Gateway hands a proxy Lambda once the authorizer let the request through. */
export function apiEvent(input: {
  method: string;
  path: string;
  tenantId?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Buffer;
  base64?: boolean;
}): APIGatewayProxyEvent {
  const base64 = input.base64 ?? true;
  return {
    resource: input.path,
    path: input.path,
    httpMethod: input.method,
    headers: input.headers ?? {},
    multiValueHeaders: {},
    queryStringParameters: input.query ?? null,
    multiValueQueryStringParameters: input.query
      ? Object.fromEntries(Object.entries(input.query).map(([name, value]) => [name, [value]]))
      : null,
    pathParameters: null,
    stageVariables: null,
    body: input.body ? input.body.toString(base64 ? 'base64' : 'utf8') : null,
    isBase64Encoded: base64 && input.body !== undefined,
    requestContext: {
      authorizer: input.tenantId ? { tenantId: input.tenantId } : {},
    } as APIGatewayProxyEvent['requestContext'],
  };
}

export function sqsEvent(bodies: string[], receiveCount = 1): SQSEvent {
  return {
    Records: bodies.map((body, index) => ({
      messageId: `message-${index}`,
      receiptHandle: `receipt-${index}`,
      body,
      attributes: {
        ApproximateReceiveCount: String(receiveCount),
        SentTimestamp: String(Date.now()),
        SenderId: 'test',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:test',
      awsRegion: 'us-east-1',
    })),
  };
}
