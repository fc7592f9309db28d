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
  MAX_DIRECT_UPLOAD_BYTES,
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

const errorBody = (code: string, message: string) => JSON.stringify({ error: { code, message } });

/**
 * When Lambda refuses the invocation itself (a request body over about 4.7 MB makes an event over its
 * 6 MB payload quota), API Gateway answers with a 5xx gateway response; `$context.integration.status`
 * is the status Lambda answered, 413 for a payload it refused.
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html
 */
const SERVER_ERROR_TEMPLATE = [
  '#if("$context.integration.status" == "413")',
  errorBody(
    'payload_too_large',
    `The request body is over the direct-upload limit of ${MAX_DIRECT_UPLOAD_BYTES.toLocaleString('en-US')} bytes.`,
  ),
  '#else',
  errorBody('internal', 'Internal error. Please retry later.'),
  '#end',
].join('\n');

/**
 * Gateway-made responses in the API's error shape `{error: {code, message}}`. A status is set only where
 * the service's differs from API Gateway's; the DEFAULT_4XX and DEFAULT_5XX fallbacks keep the status
 * of the response they stand for, since a status on them would replace every other 4xx or 5xx status
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html).
 */
const GATEWAY_RESPONSES: { type: ResponseType; status?: string; template: string }[] = [
  // A Deny from the authorizer: its context says why (its own fixed codes and messages).
  {
    type: ResponseType.ACCESS_DENIED,
    status: '401',
    template:
      '{"error":{"code":"$context.authorizer.errorCode","message":"$context.authorizer.errorMessage"}}',
  },
  // The identity source is absent: API Gateway answers without calling the authorizer.
  {
    type: ResponseType.UNAUTHORIZED,
    status: '401',
    template: errorBody('missing_api_key', `Pass your API key in the ${API_KEY_PARAMETER} query parameter.`),
  },
  {
    type: ResponseType.MISSING_AUTHENTICATION_TOKEN,
    status: '404',
    template: errorBody('not_found', 'No such route.'),
  },
  {
    type: ResponseType.REQUEST_TOO_LARGE,
    status: '413',
    template: errorBody('payload_too_large', 'The request body is too large.'),
  },
  {
    type: ResponseType.THROTTLED,
    status: '429',
    template: errorBody('rate_limited', 'Too many requests; retry later.'),
  },
  {
    type: ResponseType.QUOTA_EXCEEDED,
    status: '429',
    template: errorBody('rate_limited', 'Request quota exceeded.'),
  },
  // Any other 4xx API Gateway makes, with its status and its own message as a JSON string.
  {
    type: ResponseType.DEFAULT_4XX,
    template: '{"error":{"code":"invalid_request","message":$context.error.messageString}}',
  },
  { type: ResponseType.DEFAULT_5XX, template: SERVER_ERROR_TEMPLATE },
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
      // An `audio_ref`: its size and tag are checked, and its tag set to submitted.
      uploads: ['s3:GetObject', 's3:GetObjectTagging', 's3:PutObjectTagging'],
    });
    bindQueue(submit, ENV.jobsQueueUrl, queues.jobsQueue);
    // Idempotency-Key records (Powertools reads, takes conditionally, completes and frees them).
    const IDEMPOTENCY_ACTIONS = [
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
    ];
    bindTable(submit, ENV.idempotencyTable, data.idempotencyTable, IDEMPOTENCY_ACTIONS);

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

    // A presigned URL acts with its signer's permissions: putting a tagged object under uploads/, no more.
    const upload = new ServiceFunction(this, 'Upload', {
      entry: 'functions/api/upload.ts',
      description: 'POST /v1-beta/upload',
      serviceName: 'transcription-upload',
      timeout: Duration.seconds(10),
      memorySize: 256,
    });
    bindBucket(upload, ENV.mediaBucket, mediaBucket, { uploads: ['s3:PutObject', 's3:PutObjectTagging'] });
    bindTable(upload, ENV.idempotencyTable, data.idempotencyTable, IDEMPOTENCY_ACTIONS);

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

    // A presigned GET acts with its signer's permissions: reading a job's audio, which a submission put
    // under audio/ (a file in the form, or fetched from its audio_url) or uploads/ (a presigned upload).
    const audio = new ServiceFunction(this, 'Audio', {
      entry: 'functions/api/audio.ts',
      description: 'GET /v1-beta/transcript/audio',
      serviceName: 'transcription-audio',
      timeout: Duration.seconds(10),
      memorySize: 256,
    });
    bindTable(audio, ENV.jobsTable, jobsTable, ['dynamodb:GetItem']);
    bindBucket(audio, ENV.mediaBucket, mediaBucket, { audio: ['s3:GetObject'], uploads: ['s3:GetObject'] });

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
    // No access to the bucket: its name, for the origin the page's content security policy allows.
    bindBucket(consolePage, ENV.mediaBucket, mediaBucket, {});

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
      upload,
      status,
      export: exportFunction,
      audio,
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
        ...(response.status ? { statusCode: response.status } : {}),
        responseHeaders: { 'Content-Type': "'application/json'" },
        templates: { 'application/json': response.template },
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
