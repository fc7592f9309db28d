import { Duration } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  AuthorizationType,
  type CfnAuthorizer,
  EndpointType,
  IdentitySource,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  RequestAuthorizer,
  type Resource,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import {
  API_KEY_PARAMETER,
  API_ROUTES,
  type ApiHandlerName,
  BINARY_MEDIA_TYPES,
  ENV,
  RESOURCES,
  STAGE_NAME,
} from '#commons/contract';
import { bindBucket, bindQueue, bindTable, bindTableIndex } from './bind.ts';
import type { Data } from './data.ts';
import type { Queues } from './queues.ts';
import { FUNCTION_DEFAULTS, ServiceFunction } from './service-function.ts';

export interface ApiProps {
  data: Data;
  queues: Queues;
  /** Seconds an authorizer decision is cached; 0 turns caching off, which lets the key come as a header too. */
  authorizerCacheSeconds: number;
  throttlingRateLimit: number;
  throttlingBurstLimit: number;
  /** Jobs a tenant may have queued or processing at once. */
  maxActiveJobsPerTenant: number;
}

/**
 * Access log fields. The query string is left out on purpose: it carries the API key.
 * `resourcePath` is the route template, never the request URL.
 */
const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  requestTime: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  method: '$context.httpMethod',
  resourcePath: '$context.resourcePath',
  status: '$context.status',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  tenant: '$context.authorizer.tenantId',
  authorizerError: '$context.authorizer.errorCode',
  gatewayError: '$context.error.responseType',
};

/** Gateway-made responses in the API's error shape `{error: {code, message}}`. */
const GATEWAY_RESPONSES: { type: ResponseType; status: string; code: string; message: string }[] = [
  // A Deny from the authorizer: its context says why.
  {
    type: ResponseType.ACCESS_DENIED,
    status: '401',
    code: '$context.authorizer.errorCode',
    message: '$context.authorizer.errorMessage',
  },
  // The identity source is absent: API Gateway answers without calling the authorizer.
  {
    type: ResponseType.UNAUTHORIZED,
    status: '401',
    code: 'missing_api_key',
    message: `Pass your API key in the ${API_KEY_PARAMETER} query parameter.`,
  },
  {
    type: ResponseType.MISSING_AUTHENTICATION_TOKEN,
    status: '404',
    code: 'not_found',
    message: 'No such route.',
  },
  {
    type: ResponseType.REQUEST_TOO_LARGE,
    status: '413',
    code: 'payload_too_large',
    message: 'The request body is too large.',
  },
  {
    type: ResponseType.THROTTLED,
    status: '429',
    code: 'rate_limited',
    message: 'Too many requests; retry later.',
  },
  {
    type: ResponseType.QUOTA_EXCEEDED,
    status: '429',
    code: 'rate_limited',
    message: 'Request quota exceeded.',
  },
  {
    type: ResponseType.DEFAULT_4XX,
    status: '400',
    code: 'invalid_request',
    message: '$context.error.validationErrorString',
  },
  {
    type: ResponseType.DEFAULT_5XX,
    status: '500',
    code: 'internal',
    message: 'Internal error. Please retry later.',
  },
];

/** The REST API with its Lambda request authorizer, one Lambda per route. */
export class Api extends Construct {
  readonly restApi: RestApi;
  readonly functions: Record<ApiHandlerName | 'authorizer', ServiceFunction>;

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const { data, queues } = props;
    const { jobsTable, apiKeysTable, mediaBucket } = data;

    const submit = new ServiceFunction(this, 'Submit', {
      entry: 'functions/api/submit.ts',
      description: 'POST /v1-beta/transcript',
      serviceName: 'transcription-submit',
      timeout: Duration.seconds(29),
      // Room for the base64 body, the upload part buffer and a little more CPU for parsing.
      memorySize: 1024,
    });
    bindTable(submit, ENV.jobsTable, jobsTable, ['dynamodb:PutItem']);
    // Counts the tenant's active jobs against the cap.
    bindTableIndex(submit, ENV.jobsTable, jobsTable, RESOURCES.jobsTable.activeTenantIndex.name);
    submit.addEnvironment(ENV.maxActiveJobsPerTenant, String(props.maxActiveJobsPerTenant));
    bindBucket(submit, ENV.mediaBucket, mediaBucket, {
      audio: ['s3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
    });
    bindQueue(submit, ENV.jobsQueueUrl, queues.jobsQueue);
    // Idempotency-Key records (Powertools reads, takes conditionally, completes and frees them).
    bindTable(submit, ENV.idempotencyTable, data.idempotencyTable, [
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
    ]);

    // Delete reads the job, replaces it with a tombstone, and removes every object it may have.
    const deleteFunction = new ServiceFunction(this, 'Delete', {
      entry: 'functions/api/delete.ts',
      description: 'DELETE /v1-beta/transcript',
      serviceName: 'transcription-delete',
      timeout: Duration.seconds(15),
      memorySize: 512,
    });
    bindTable(deleteFunction, ENV.jobsTable, jobsTable, ['dynamodb:GetItem', 'dynamodb:PutItem']);
    bindBucket(deleteFunction, ENV.mediaBucket, mediaBucket, {
      audio: ['s3:DeleteObject'],
      results: ['s3:DeleteObject'],
      transcribeOutput: ['s3:DeleteObject'],
    });

    // Status and export read a job and its stored result, nothing else.
    const resultReader = (id: string, entry: string, description: string, serviceName: string) => {
      const reader = new ServiceFunction(this, id, {
        entry,
        description,
        serviceName,
        timeout: Duration.seconds(15),
        memorySize: 512,
      });
      bindTable(reader, ENV.jobsTable, jobsTable, ['dynamodb:GetItem']);
      bindBucket(reader, ENV.mediaBucket, mediaBucket, { results: ['s3:GetObject'] });
      return reader;
    };
    const status = resultReader(
      'Status',
      'functions/api/status.ts',
      'GET /v1-beta/transcript/status',
      'transcription-status',
    );
    const exportFunction = resultReader(
      'Export',
      'functions/api/export.ts',
      'GET /v1-beta/transcript/export',
      'transcription-export',
    );

    const list = new ServiceFunction(this, 'List', {
      entry: 'functions/api/list.ts',
      description: 'GET /v1-beta/transcripts',
      serviceName: 'transcription-list',
      timeout: Duration.seconds(10),
      memorySize: 512,
    });
    bindTableIndex(list, ENV.jobsTable, jobsTable, RESOURCES.jobsTable.tenantIndex.name);

    const consolePage = new ServiceFunction(this, 'Console', {
      entry: 'functions/api/console.ts',
      description: 'GET /console',
      serviceName: 'transcription-console',
      timeout: Duration.seconds(5),
      memorySize: 256,
    });

    // The OpenAPI document and its reference page: static, no data.
    const staticPage = (id: string, entry: string, description: string, serviceName: string) =>
      new ServiceFunction(this, id, {
        entry,
        description,
        serviceName,
        timeout: Duration.seconds(5),
        memorySize: 256,
      });
    const openapi = staticPage(
      'OpenApi',
      'functions/api/openapi.ts',
      'GET /openapi.json',
      'transcription-openapi',
    );
    const reference = staticPage(
      'Reference',
      'functions/api/reference.ts',
      'GET /reference',
      'transcription-reference',
    );

    const authorizer = new ServiceFunction(this, 'Authorizer', {
      entry: 'functions/api/authorizer.ts',
      description: 'API key → tenant',
      serviceName: 'transcription-authorizer',
      timeout: Duration.seconds(5),
      memorySize: 256,
    });
    bindTable(authorizer, ENV.apiKeysTable, apiKeysTable, ['dynamodb:GetItem']);
    const handlers: Record<ApiHandlerName, ServiceFunction> = {
      submit,
      status,
      export: exportFunction,
      delete: deleteFunction,
      list,
      console: consolePage,
      openapi,
      reference,
    };
    this.functions = { ...handlers, authorizer };

    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: FUNCTION_DEFAULTS.logRetention });
    this.restApi = new RestApi(this, 'RestApi', {
      description: 'Asynchronous transcription API',
      endpointTypes: [EndpointType.REGIONAL],
      binaryMediaTypes: BINARY_MEDIA_TYPES,
      cloudWatchRole: true,
      deployOptions: {
        stageName: STAGE_NAME,
        throttlingRateLimit: props.throttlingRateLimit,
        throttlingBurstLimit: props.throttlingBurstLimit,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
        // Execution logs would record request parameters, API keys among them.
        loggingLevel: MethodLoggingLevel.OFF,
        dataTraceEnabled: false,
        metricsEnabled: true,
      },
    });
    for (const response of GATEWAY_RESPONSES) {
      this.restApi.addGatewayResponse(`Response${response.type.responseType}`, {
        type: response.type,
        statusCode: response.status,
        responseHeaders: { 'Content-Type': "'application/json'" },
        templates: {
          'application/json': `{"error":{"code":"${response.code}","message":"${response.message}"}}`,
        },
      });
    }

    const requestAuthorizer = new RequestAuthorizer(this, 'ApiKeyAuthorizer', {
      handler: authorizer,
      identitySources:
        props.authorizerCacheSeconds > 0 ? [IdentitySource.queryString(API_KEY_PARAMETER)] : [],
      resultsCacheTtl: Duration.seconds(props.authorizerCacheSeconds),
    });
    if (props.authorizerCacheSeconds === 0) {
      // Without caching no identity source is required, so the key may come as a header or in the query.
      (requestAuthorizer.node.defaultChild as CfnAuthorizer).addPropertyDeletionOverride('IdentitySource');
    }

    for (const route of API_ROUTES) {
      const resource = route.path
        .split('/')
        .filter(Boolean)
        .reduce<Resource | RestApi['root']>(
          (parent, part) => parent.getResource(part) ?? parent.addResource(part),
          this.restApi.root,
        );
      resource.addMethod(route.method, new LambdaIntegration(handlers[route.handler]), {
        ...(route.authorized
          ? { authorizer: requestAuthorizer }
          : { authorizationType: AuthorizationType.NONE }),
      });
    }
  }
}
