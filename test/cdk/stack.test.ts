import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '#cdk/app';
import { repositoryRoot } from '#cdk/constructs/service-function';
import {
  API_ROUTES,
  DEFAULT_CHUNK_SECONDS,
  ENV,
  JOB_METRICS,
  OPERATOR_ERROR_CODES,
  PENDING_UPLOAD_EXPIRATION_DAYS,
  RESOURCES,
  RETENTION_DAYS,
  SWEEP_INTERVAL_SECONDS,
  transcribeJobPrefix,
  UPLOAD_TAG,
  WORK_EXPIRATION_DAYS,
} from '#commons/contract';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** A synthesis bundles every function with esbuild: tens of seconds on a busy machine. */
const SYNTH_TIMEOUT_MS = 240_000;

/**
 * An app writing to a fresh directory. Bundling every function takes most of a synthesis, so only the main
 * template below bundles (proving that bundling works); the variants skip it through the CDK's own switch
 * (`aws:cdk:bundling-stacks`, as `cdk synth --exclusively` uses), which leaves every resource in place.
 */
function newApp(context: Record<string, unknown> = {}, bundle = false) {
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-test-'));
  const bundling = bundle ? {} : { 'aws:cdk:bundling-stacks': [] };
  return { ...buildApp(new App({ outdir, context: { ...bundling, ...context } })), outdir };
}

function synthesize(context: Record<string, string> = {}, bundle = false) {
  const { app, stack, outdir } = newApp(context, bundle);
  // Runs the cdk-nag AwsSolutions checks: throws on any finding that is not acknowledged.
  app.synth();
  return { stack, template: Template.fromStack(stack), outdir };
}

let template: Template;
let resources: Resources;

beforeAll(() => {
  ({ template } = synthesize({ workerConcurrency: '7' }, true));
  resources = template.toJSON().Resources;
}, SYNTH_TIMEOUT_MS);

function ofType(type: string) {
  return Object.entries(resources).filter(([, resource]) => resource.Type === type);
}

describe('data', () => {
  it('keeps jobs in an on-demand table with the TTL attribute, PITR and the tenant index', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: RESOURCES.jobsTable.ttlAttribute, Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      GlobalSecondaryIndexes: [
        Match.objectLike({
          IndexName: RESOURCES.jobsTable.tenantIndex.name,
          KeySchema: [
            { AttributeName: 'tenantId', KeyType: 'HASH' },
            { AttributeName: 'timestamp_submitted', KeyType: 'RANGE' },
          ],
        }),
        // Sparse indexes of active jobs: the sweeper's due list and the per-tenant count.
        Match.objectLike({
          IndexName: RESOURCES.jobsTable.dueIndex.name,
          KeySchema: [
            { AttributeName: RESOURCES.jobsTable.dueIndex.partitionKey, KeyType: 'HASH' },
            { AttributeName: 'dueAt', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        }),
        Match.objectLike({
          IndexName: RESOURCES.jobsTable.activeTenantIndex.name,
          Projection: { ProjectionType: 'KEYS_ONLY' },
        }),
        // Sparse: jobs with a shorter retention, by expiry, for the sweeper to remove.
        Match.objectLike({
          IndexName: RESOURCES.jobsTable.expiryIndex.name,
          KeySchema: [
            { AttributeName: RESOURCES.jobsTable.expiryIndex.partitionKey, KeyType: 'HASH' },
            { AttributeName: RESOURCES.jobsTable.ttlAttribute, KeyType: 'RANGE' },
          ],
        }),
      ],
      AttributeDefinitions: Match.arrayWith([
        { AttributeName: RESOURCES.jobsTable.ttlAttribute, AttributeType: 'N' },
      ]),
    });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'keyHash', KeyType: 'HASH' }],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
  });

  it('keeps idempotency records a day by TTL, and tenant webhook secrets encrypted and retained', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: RESOURCES.idempotencyTable.partitionKey, KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: RESOURCES.idempotencyTable.ttlAttribute, Enabled: true },
    });
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        KeySchema: [{ AttributeName: RESOURCES.tenantsTable.partitionKey, KeyType: 'HASH' }],
        SSESpecification: { SSEEnabled: true },
      }),
    });
  });

  it('blocks public access, encrypts, expires audio and results after 90 days, unsubmitted uploads after a day and working files after two', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: Match.objectLike({}),
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ Prefix: 'audio/', ExpirationInDays: RETENTION_DAYS, Status: 'Enabled' }),
          Match.objectLike({ Prefix: 'results/', ExpirationInDays: RETENTION_DAYS, Status: 'Enabled' }),
          Match.objectLike({
            Prefix: 'uploads/',
            TagFilters: [{ Key: UPLOAD_TAG.key, Value: UPLOAD_TAG.pending }],
            ExpirationInDays: PENDING_UPLOAD_EXPIRATION_DAYS,
          }),
          Match.objectLike({
            Prefix: 'uploads/',
            TagFilters: [{ Key: UPLOAD_TAG.key, Value: UPLOAD_TAG.submitted }],
            ExpirationInDays: RETENTION_DAYS,
          }),
          Match.objectLike({ Prefix: 'work/', ExpirationInDays: WORK_EXPIRATION_DAYS, Status: 'Enabled' }),
          Match.objectLike({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } }),
        ]),
      },
      CorsConfiguration: {
        CorsRules: [Match.objectLike({ AllowedMethods: ['PUT', 'GET', 'HEAD'], AllowedOrigins: ['*'] })],
      },
    });
  });

  it('refuses every request to the buckets that does not use TLS', () => {
    const policies = ofType('AWS::S3::BucketPolicy');
    expect(policies).toHaveLength(2);
    for (const [, policy] of policies) {
      expect(JSON.stringify(policy.Properties)).toContain('"aws:SecureTransport":"false"');
    }
  });
});

describe('queues', () => {
  it('redrives to a dead-letter queue after at least 5 receives and keeps dead letters 14 days', () => {
    expect(RESOURCES.deadLetterQueue.maxReceiveCount).toBeGreaterThanOrEqual(5);
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: {
        maxReceiveCount: RESOURCES.deadLetterQueue.maxReceiveCount,
        deadLetterTargetArn: Match.anyValue(),
      },
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      MessageRetentionPeriod: 14 * 24 * 3600,
      RedrivePolicy: Match.absent(),
    });
  });

  it('hides a message at least as long as the worker may run, as Lambda requires, and not hours longer', () => {
    const [, worker] =
      ofType('AWS::Lambda::Function').find(([, fn]) => fn.Properties.PackageType === 'Image') ?? [];
    const [, queue] = ofType('AWS::SQS::Queue').find(([, q]) => q.Properties.RedrivePolicy) ?? [];
    const timeout = Number(worker?.Properties.Timeout);
    expect(timeout).toBe(900);
    // Workers set each message's visibility themselves (heartbeats, backoff); this only covers a worker
    // that dies before its first heartbeat.
    expect(Number(queue?.Properties.VisibilityTimeout)).toBeGreaterThanOrEqual(timeout);
    expect(Number(queue?.Properties.VisibilityTimeout)).toBeLessThanOrEqual(2 * timeout);
  });
});

describe('functions', () => {
  it('runs every zip function on Node.js 22, arm64, with JSON logs', () => {
    const functions = ofType('AWS::Lambda::Function');
    // One per API route, the authorizer, the worker, the dead-letter handler, the sweeper and webhooks.
    expect(functions).toHaveLength(API_ROUTES.length + 5);
    for (const [, fn] of functions) {
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      expect(fn.Properties.LoggingConfig).toMatchObject({ LogFormat: 'JSON' });
      if (fn.Properties.PackageType !== 'Image') expect(fn.Properties.Runtime).toBe('nodejs22.x');
    }
  });

  it('runs the worker as an image with the configured engine and no reserved concurrency', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      PackageType: 'Image',
      Timeout: 900,
      Environment: { Variables: Match.objectLike({ ENGINE: 'transcribe', SUMMARIZER: 'local' }) },
    });
    // Reserving concurrency fails the deployment where the account's quota is 10.
    for (const [, fn] of ofType('AWS::Lambda::Function')) {
      expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    }
  });

  it("bounds the worker with its SQS event source's maximum concurrency, the workerConcurrency setting", () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 1,
      ScalingConfig: { MaximumConcurrency: 7 },
    });
    expect(() => buildApp(new App({ context: { workerConcurrency: '1' } }))).toThrow();
    expect(() => buildApp(new App({ context: { workerConcurrency: '1001' } }))).toThrow();
  });

  it('lets the worker schedule checks on its queue, and tells both consumers the Transcribe job prefix', () => {
    const workerPolicy = ofType('AWS::IAM::Policy').find(([id]) =>
      id.startsWith('WorkerFunctionServiceRoleDefaultPolicy'),
    );
    expect(JSON.stringify(workerPolicy?.[1].Properties.PolicyDocument)).toContain('sqs:SendMessage');
    const prefixes = ofType('AWS::Lambda::Function')
      .map(
        ([, fn]) =>
          (fn.Properties.Environment as { Variables?: Record<string, string> })?.Variables
            ?.TRANSCRIBE_JOB_PREFIX,
      )
      .filter(Boolean);
    expect(prefixes).toEqual(['TranscriptionService_', 'TranscriptionService_']);
  });

  it('feeds the worker one message at a time with partial batch responses, and the dead-letter handler and webhooks too', () => {
    const mappings = ofType('AWS::Lambda::EventSourceMapping');
    expect(mappings).toHaveLength(3);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it("sends this stack's Amazon Transcribe completions back to the worker queue", () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.transcribe'],
        'detail-type': ['Transcribe Job State Change'],
        detail: {
          TranscriptionJobName: [{ prefix: 'TranscriptionService_' }],
          TranscriptionJobStatus: ['COMPLETED', 'FAILED'],
        },
      },
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('JobsQueue'), 'Arn'] } })],
    });
  });
});

describe('API', () => {
  it('authorizes with the request authorizer reading x-api-key from the query string, with caching', () => {
    template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'REQUEST',
      IdentitySource: 'method.request.querystring.x-api-key',
      AuthorizerResultTtlInSeconds: 300,
    });
    const methods = ofType('AWS::ApiGateway::Method').map(([, method]) => method.Properties);
    expect(methods.map((method) => method.HttpMethod).sort()).toEqual(
      API_ROUTES.map((route) => route.method).sort(),
    );
    // Every route but the pages and the document, which hold no data, is behind the authorizer.
    const open = methods.filter((method) => method.AuthorizationType !== 'CUSTOM');
    expect(open.map((method) => method.AuthorizationType)).toEqual(['NONE', 'NONE', 'NONE']);
    const openResources = open.map((method) => JSON.stringify(method.ResourceId)).join(' ');
    for (const page of [/console/i, /openapi/i, /reference/i]) expect(openResources).toMatch(page);
  });

  it('passes multipart and audio bodies as binary', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', {
      BinaryMediaTypes: Match.arrayWith(['multipart/form-data', 'audio/*']),
    });
  });

  it('throttles the stage and writes access logs that never contain the query string', () => {
    const [[, stage] = ['', { Properties: {} }]] = ofType('AWS::ApiGateway::Stage');
    const props = stage.Properties as {
      AccessLogSetting: { Format: string };
      MethodSettings: { ThrottlingRateLimit: number; LoggingLevel: string; DataTraceEnabled: boolean }[];
    };
    const format = props.AccessLogSetting.Format;
    expect(format).toContain('$context.requestId');
    expect(format).not.toMatch(/querystring|\$context\.path|x-api-key|requestOverride/i);
    expect(props.MethodSettings[0]).toMatchObject({
      ThrottlingRateLimit: 50,
      LoggingLevel: 'OFF',
      DataTraceEnabled: false,
    });
  });

  it('answers a denied key with 401 and the error the authorizer gave', () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'ACCESS_DENIED',
      StatusCode: '401',
      ResponseTemplates: {
        'application/json': Match.stringLikeRegexp('\\$context\\.authorizer\\.errorCode'),
      },
    });
  });
});

describe('alarms and outputs', () => {
  it('alarms on jobs the service failed (per code), dead-lettered messages and worker failures from the job metrics', () => {
    const alarms = ofType('AWS::CloudWatch::Alarm').map(([, alarm]) => alarm.Properties);
    const onJobMetric = (name: string) =>
      alarms.filter((alarm) => alarm.Namespace === 'TranscriptionService' && alarm.MetricName === name);
    const failedCodes = onJobMetric(JOB_METRICS.jobsEnded).map(
      (alarm) =>
        (alarm.Dimensions as { Name: string; Value: string }[]).find(
          (dimension) => dimension.Name === JOB_METRICS.outcomeDimension,
        )?.Value,
    );
    expect(failedCodes.sort()).toEqual([...OPERATOR_ERROR_CODES].sort());
    expect(onJobMetric(JOB_METRICS.deadLetteredMessages)).toHaveLength(1);
    expect(onJobMetric(JOB_METRICS.workerFailures)).toMatchObject([{ EvaluationPeriods: 3, Threshold: 0 }]);
    for (const alarm of onJobMetric(JOB_METRICS.jobsEnded)) {
      expect(alarm.Dimensions).toContainEqual({ Name: 'service', Value: JOB_METRICS.service });
    }
    // A drained dead-letter queue never has visible messages for long: that alarm could never fire.
    // Only the webhooks' dead-letter queue, which nothing drains, is alarmed on its visible messages.
    const visible = alarms.filter((alarm) => alarm.MetricName === 'ApproximateNumberOfMessagesVisible');
    expect(visible).toHaveLength(1);
    expect(JSON.stringify(visible[0]?.Dimensions)).toMatch(/WebhooksDeadLetterQueue/);
    expect(alarms.map((alarm) => alarm.MetricName).sort()).toEqual(
      [
        ...OPERATOR_ERROR_CODES.map(() => JOB_METRICS.jobsEnded),
        JOB_METRICS.deadLetteredMessages,
        JOB_METRICS.workerFailures,
        'Errors',
        '5XXError',
        'ApproximateAgeOfOldestMessage',
        'ApproximateAgeOfOldestMessage',
        'ApproximateNumberOfMessagesVisible',
      ].sort(),
    );
    for (const alarm of alarms) expect(alarm.AlarmActions).toHaveLength(1);
  });

  it('emits the job metrics into the namespace the alarms read, and draws them on a dashboard', () => {
    const namespaces = ofType('AWS::Lambda::Function')
      .map(([, fn]) => (fn.Properties.Environment as { Variables?: Record<string, string> })?.Variables)
      .map((variables) => variables?.POWERTOOLS_METRICS_NAMESPACE)
      .filter(Boolean);
    expect(namespaces).toEqual(['TranscriptionService', 'TranscriptionService']);
    const dashboards = ofType('AWS::CloudWatch::Dashboard');
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(dashboards[0]?.[1].Properties.DashboardBody);
    for (const metric of [
      JOB_METRICS.jobsEnded,
      JOB_METRICS.audioMinutes,
      JOB_METRICS.realTimeFactor,
      JOB_METRICS.deadLetteredMessages,
      JOB_METRICS.workerFailures,
    ]) {
      expect(body).toContain(metric);
    }
  });

  it('outputs the API and console URLs and the resource names', () => {
    const outputs = Object.keys(template.toJSON().Outputs);
    for (const name of [
      'ApiUrl',
      'ConsoleUrl',
      'JobsTableName',
      'ApiKeysTableName',
      'TenantsTableName',
      'ApiReferenceUrl',
      'MediaBucketName',
      'JobsQueueName',
      'WebhookQueueName',
      'DashboardName',
    ]) {
      expect(outputs).toContain(name);
    }
  });
});

/** The statements of the worker's role policy. */
function workerStatements(from: Template = template): Record<string, unknown>[] {
  const found = Object.entries(from.toJSON().Resources as Resources).find(
    ([id, resource]) =>
      resource.Type === 'AWS::IAM::Policy' && id.startsWith('WorkerFunctionServiceRoleDefaultPolicy'),
  );
  if (!found) throw new Error('The worker has no role policy.');
  return (found[1].Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement;
}
const withAction = (statements: Record<string, unknown>[], action: string) =>
  statements.filter((statement) => ([] as unknown[]).concat(statement.Action).includes(action));

describe('Amazon Transcribe and Bedrock grants', () => {
  it('allows StartTranscriptionJob on "*" only for output to the media bucket, and GetTranscriptionJob on the prefix', () => {
    const [start, ...moreStarts] = withAction(workerStatements(), 'transcribe:StartTranscriptionJob');
    expect(moreStarts).toEqual([]);
    expect(start).toMatchObject({
      Resource: '*',
      Action: 'transcribe:StartTranscriptionJob',
      Condition: {
        StringEquals: { 'transcribe:OutputBucketName': { Ref: expect.stringMatching(/MediaBucket/) } },
      },
    });
    const [get] = withAction(workerStatements(), 'transcribe:GetTranscriptionJob');
    expect(get?.Action).toBe('transcribe:GetTranscriptionJob');
    expect(JSON.stringify(get?.Resource)).toContain(':transcription-job/TranscriptionService_*');
  });

  it('grants a foundation model id in this region only', () => {
    const { template: direct } = synthesize({
      summarizer: 'bedrock',
      bedrockModelId: 'anthropic.claude-3-haiku-20240307-v1:0',
    });
    const statements = withAction(workerStatements(direct), 'bedrock:InvokeModel');
    expect(statements).toHaveLength(1);
    expect(JSON.stringify(statements[0]?.Resource)).toMatch(
      /:bedrock:",\{"Ref":"AWS::Region"\},"::foundation-model\/anthropic\.claude-3-haiku-20240307-v1:0"/,
    );
  });

  it('grants a cross-region inference profile and its foundation model in every region, through that profile only', () => {
    const { template: profiled } = synthesize({
      summarizer: 'bedrock',
      bedrockModelId: 'us.anthropic.claude-3-haiku-20240307-v1:0',
    });
    const [profile, model, ...more] = withAction(workerStatements(profiled), 'bedrock:InvokeModel');
    expect(more).toEqual([]);
    expect(JSON.stringify(profile?.Resource)).toContain(
      ':inference-profile/us.anthropic.claude-3-haiku-20240307-v1:0',
    );
    expect(JSON.stringify(model?.Resource)).toContain(
      ':bedrock:*::foundation-model/anthropic.claude-3-haiku-20240307-v1:0',
    );
    expect(JSON.stringify(model?.Condition)).toContain('bedrock:InferenceProfileArn');
    expect(JSON.stringify(model?.Condition)).toContain(JSON.stringify(profile?.Resource).slice(1, -1));
  });

  it('acknowledges the "*" resource to cdk-nag on the worker alone: another function granted "*" fails synthesis', () => {
    const { app, stack } = newApp();
    stack.api.functions.status.addToRolePolicy(
      new PolicyStatement({ actions: ['transcribe:StartTranscriptionJob'], resources: ['*'] }),
    );
    expect(() => app.synth()).toThrow(/AwsSolutions-IAM5\[Resource::\*\]/);
  });
});

describe('smaller deployment defects', () => {
  it("gives each stack a Transcribe job prefix that no other stack's prefix can extend", () => {
    const names = ['Svc', 'Svc-2', 'Svc-2-a', 'TranscriptionService', 'TranscriptionService-eu'];
    for (const name of names) {
      for (const other of names.filter((candidate) => candidate !== name)) {
        const otherJob = `${transcribeJobPrefix(other)}0c6e0b8e-9b3f-4a53-9d8f-1f2a3b4c5d6e`;
        expect(otherJob.startsWith(transcribeJobPrefix(name)), `${name} vs ${other}`).toBe(false);
      }
    }
  });

  it('keeps the status of 4xx and 5xx responses API Gateway makes, with a JSON-escaped message', () => {
    const responses = Object.fromEntries(
      ofType('AWS::ApiGateway::GatewayResponse').map(([, response]) => [
        response.Properties.ResponseType,
        response.Properties,
      ]),
    );
    expect(responses.DEFAULT_4XX?.StatusCode).toBeUndefined();
    expect(responses.DEFAULT_5XX?.StatusCode).toBeUndefined();
    const jsonTemplate = (type: string) =>
      String(
        (responses[type]?.ResponseTemplates as Record<string, string> | undefined)?.['application/json'],
      );
    const template4xx = jsonTemplate('DEFAULT_4XX');
    // messageString is the message already quoted and escaped for JSON; the raw one is not.
    expect(template4xx).toContain('"message":$context.error.messageString}');
    expect(template4xx).not.toContain('validationErrorString');
    const template5xx = jsonTemplate('DEFAULT_5XX');
    expect(template5xx).toContain('$context.integration.status');
    expect(template5xx).toContain('payload_too_large');
    expect(responses.REQUEST_TOO_LARGE?.StatusCode).toBe('413');
  });

  it('finds the repository from a module URL whose path has a space', () => {
    expect(repositoryRoot('file:///work/My%20Projects/svc/cdk/constructs/service-function.ts')).toBe(
      '/work/My Projects/svc/',
    );
  });
});

describe('least privilege', () => {
  it('lets the upload route presign tagged PUTs under uploads/ and keep Idempotency-Key records, nothing else', () => {
    const policy = ofType('AWS::IAM::Policy').find(([id]) => id.startsWith('ApiUploadServiceRole'));
    if (!policy) throw new Error('The upload function has no policy.');
    const statements = (policy[1].Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
      .Statement;
    expect(statements).toHaveLength(2);
    expect(statements[0]?.Action).toEqual(['s3:PutObject', 's3:PutObjectTagging']);
    expect(JSON.stringify(statements[0]?.Resource)).toContain('/uploads/*');
    expect(statements[1]?.Action).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
    ]);
    expect(JSON.stringify(statements[1]?.Resource)).toMatch(/IdempotencyTable/);
  });

  it("lets the worker read, write and delete long jobs' working files under work/, and sets its chunk length", () => {
    const policy = ofType('AWS::IAM::Policy').find(([id]) => id.startsWith('WorkerFunctionServiceRole'));
    if (!policy) throw new Error('The worker has no policy.');
    const statements = (policy[1].Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
      .Statement;
    const work = statements.find((statement) => JSON.stringify(statement.Resource).includes('/work/*'));
    expect(work?.Action).toEqual([
      's3:GetObject',
      's3:PutObject',
      's3:DeleteObject',
      's3:AbortMultipartUpload',
    ]);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [ENV.chunkSeconds]: String(DEFAULT_CHUNK_SECONDS) }) },
    });
  });

  it('runs the sweeper every sweep interval, letting it read due and expired jobs, move or remove them and send messages, nothing else', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: `rate(${SWEEP_INTERVAL_SECONDS / 60} minutes)`,
      State: 'ENABLED',
      Targets: [
        Match.objectLike({ Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^SweeperFunction'), 'Arn'] } }),
      ],
    });
    const policy = ofType('AWS::IAM::Policy').find(([id]) => id.startsWith('SweeperFunctionServiceRole'));
    if (!policy) throw new Error('The sweeper has no policy.');
    const text = JSON.stringify(policy[1].Properties.PolicyDocument);
    const actions = (
      policy[1].Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }
    ).Statement.flatMap((statement) => statement.Action);
    expect(new Set(actions)).toEqual(
      new Set([
        'dynamodb:Query',
        'dynamodb:GetItem',
        'dynamodb:UpdateItem',
        'dynamodb:DeleteItem',
        's3:DeleteObject',
        'sqs:SendMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
      ]),
    );
    expect(text).toContain(`/index/${RESOURCES.jobsTable.dueIndex.name}`);
    expect(text).toContain(`/index/${RESOURCES.jobsTable.expiryIndex.name}`);
  });

  it('lets the webhook function read jobs and secrets, record attempts and queue the next, nothing else', () => {
    const policy = ofType('AWS::IAM::Policy').find(([id]) => id.startsWith('WebhooksFunctionServiceRole'));
    if (!policy) throw new Error('The webhook function has no policy.');
    const actions = (
      policy[1].Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }
    ).Statement.flatMap((statement) => statement.Action);
    expect(new Set(actions)).toEqual(
      new Set([
        'dynamodb:GetItem',
        'dynamodb:UpdateItem',
        'sqs:SendMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:ReceiveMessage',
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
      ]),
    );
    // Its own small function, not the worker's image; the status link in each webhook is the API's.
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Environment: { Variables: Match.objectLike({ PUBLIC_API_URL: Match.anyValue() }) },
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: {
        maxReceiveCount: RESOURCES.webhookDeadLetterQueue.maxReceiveCount,
        deadLetterTargetArn: Match.anyValue(),
      },
    });
  });

  it('lets the delete route read and replace a job and remove its objects, nothing else', () => {
    const policy = ofType('AWS::IAM::Policy').find(([id]) => id.startsWith('ApiDeleteServiceRole'));
    if (!policy) throw new Error('The delete function has no policy.');
    const actions = (
      policy[1].Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }
    ).Statement.flatMap((statement) => statement.Action);
    expect(new Set(actions)).toEqual(new Set(['dynamodb:GetItem', 'dynamodb:PutItem', 's3:DeleteObject']));
  });

  it('lets the audio route read jobs and presign GETs of their audio (under audio/ or uploads/), nothing else, and the console page nothing at all', () => {
    const policy = ofType('AWS::IAM::Policy').find(([id]) => id.startsWith('ApiAudioServiceRole'));
    if (!policy) throw new Error('The audio function has no policy.');
    const statements = (policy[1].Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
      .Statement;
    const actions = statements.flatMap((statement) => statement.Action);
    expect(new Set(actions)).toEqual(new Set(['dynamodb:GetItem', 's3:GetObject']));
    const readable = statements
      .filter((statement) => statement.Action === 's3:GetObject')
      .map((statement) => JSON.stringify(statement.Resource));
    expect(readable).toHaveLength(2);
    expect(readable.some((resource) => resource.includes('/audio/*'))).toBe(true);
    expect(readable.some((resource) => resource.includes('/uploads/*'))).toBe(true);
    template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: 'audio' });
    // The page only names the bucket, for the origin its content security policy allows.
    expect(ofType('AWS::IAM::Policy').some(([id]) => id.startsWith('ApiConsoleServiceRole'))).toBe(false);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'GET /console',
      Environment: { Variables: Match.objectLike({ [ENV.mediaBucket]: Match.anyValue() }) },
    });
  });

  it('lets the list route query the tenant index and nothing else of the table', () => {
    const listPolicy = ofType('AWS::IAM::Policy').find(([id]) =>
      id.startsWith('ApiListServiceRoleDefaultPolicy'),
    );
    if (!listPolicy) throw new Error('The list function has no policy.');
    const { Statement: statements } = listPolicy[1].Properties.PolicyDocument as {
      Statement: Record<string, unknown>[];
    };
    expect(statements).toHaveLength(1);
    expect(statements[0]?.Action).toBe('dynamodb:Query');
    expect(JSON.stringify(statements[0]?.Resource)).toContain(
      `/index/${RESOURCES.jobsTable.tenantIndex.name}`,
    );
  });

  it('grants no wildcard action and no wildcard resource for DynamoDB or S3', () => {
    for (const [, policy] of ofType('AWS::IAM::Policy')) {
      const statements = (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
        .Statement;
      for (const statement of statements) {
        const actions = ([] as string[]).concat(statement.Action as string | string[]);
        for (const action of actions) expect(action, JSON.stringify(statement)).not.toContain('*');
        if (actions.some((action) => /^(dynamodb|s3):/.test(action))) {
          expect(statement.Resource, JSON.stringify(statement)).not.toBe('*');
        }
      }
    }
  });
});

describe('cdk-nag AwsSolutions', () => {
  it(
    'passes with every accepted finding acknowledged with a reason (synthesis above would have thrown)',
    () => {
      const { outdir } = synthesize();
      const report = JSON.parse(
        readFileSync(join(outdir, 'validation-report.json'), 'utf8').replace(/^\uFEFF/, '') || '{}',
      );
      expect(JSON.stringify(report)).not.toMatch(/"status":\s*"failure"/);
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'fails the synthesis for a finding nobody acknowledged',
    () => {
      const { app, stack } = newApp();
      new Bucket(stack, 'UnloggedBucket');
      expect(() => app.synth()).toThrow(/AwsSolutions-S1\b/);
    },
    SYNTH_TIMEOUT_MS,
  );
});

describe('settings', () => {
  it(
    'turns caching off to accept the key as a header, and grants Bedrock only to a Bedrock summarizer',
    () => {
      const { template: custom } = synthesize({
        authorizerCacheSeconds: '0',
        summarizer: 'bedrock',
        bedrockModelId: 'anthropic.claude-3-haiku-20240307-v1:0',
        engine: 'sphinx',
      });
      custom.hasResourceProperties('AWS::ApiGateway::Authorizer', {
        AuthorizerResultTtlInSeconds: 0,
        IdentitySource: Match.absent(),
      });
      custom.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ ENGINE: 'sphinx', SUMMARIZER: 'bedrock' }) },
      });
      expect(JSON.stringify(custom.toJSON())).toContain('bedrock:InvokeModel');
      expect(JSON.stringify(template.toJSON())).not.toContain('bedrock:');
    },
    SYNTH_TIMEOUT_MS,
  );

  it('refuses settings that cannot work', () => {
    expect(() => buildApp(new App({ context: { summarizer: 'bedrock' } }))).toThrow(/bedrockModelId/);
    expect(() => buildApp(new App({ context: { engine: 'whisper' } }))).toThrow(/whisperModel=… \(tiny.en, /);
    expect(() => buildApp(new App({ context: { engine: 'whisper', whisperModel: 'large-v9' } }))).toThrow();
  });

  it('builds the worker image with the whisper model it names, and gives the worker its path and memory', () => {
    const { template: custom, outdir } = synthesize({ engine: 'whisper', whisperModel: 'medium.en' });
    custom.hasResourceProperties('AWS::Lambda::Function', {
      PackageType: 'Image',
      MemorySize: 6144,
      Environment: {
        Variables: Match.objectLike({
          ENGINE: 'whisper',
          WHISPER_MODEL: '/var/task/models/ggml-medium.en.bin',
        }),
      },
    });
    const assets = JSON.parse(readFileSync(join(outdir, 'TranscriptionService.assets.json'), 'utf8'));
    const images = Object.values(assets.dockerImages) as {
      source: { dockerBuildArgs?: Record<string, string> };
    }[];
    expect(images.map((image) => image.source.dockerBuildArgs)).toEqual([
      { WHISPER_MODEL_NAME: 'medium.en' },
    ]);
    // Other engines get no model, and the worker's usual memory.
    template.hasResourceProperties('AWS::Lambda::Function', { PackageType: 'Image', MemorySize: 4096 });
    expect(JSON.stringify(template.toJSON())).not.toContain('WHISPER_MODEL');
  });
});
