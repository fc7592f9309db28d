import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  HttpMethods,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { RESOURCES } from '#core/resources';

/** Where the service keeps objects, each prefix with its own grants and expiry. */
export const MEDIA_PREFIXES = {
  audio: 'audio/',
  results: 'results/',
  transcribeOutput: 'transcribe/',
} as const;

export interface DataProps {
  /** Origins allowed to PUT audio through presigned URLs. */
  corsAllowedOrigins: string[];
}

/**
 * The jobs table (TTL, PITR, tenant index), the API key table and the media bucket. Data is retained
 * when the stack is deleted: audio, transcripts and keys are the customers'.
 */
export class Data extends Construct {
  readonly jobsTable: Table;
  readonly apiKeysTable: Table;
  readonly mediaBucket: Bucket;

  constructor(scope: Construct, id: string, props: DataProps) {
    super(scope, id);
    const { jobsTable, apiKeysTable, mediaBucket } = RESOURCES;

    this.jobsTable = new Table(this, 'JobsTable', {
      partitionKey: { name: jobsTable.partitionKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: jobsTable.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.jobsTable.addGlobalSecondaryIndex({
      indexName: jobsTable.tenantIndex.name,
      partitionKey: { name: jobsTable.tenantIndex.partitionKey, type: AttributeType.STRING },
      sortKey: { name: jobsTable.tenantIndex.sortKey, type: AttributeType.STRING },
    });

    this.apiKeysTable = new Table(this, 'ApiKeysTable', {
      partitionKey: { name: apiKeysTable.partitionKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    const accessLogs = new Bucket(this, 'MediaAccessLogs', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(mediaBucket.expirationDays) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const expiry = Duration.days(mediaBucket.expirationDays);
    this.mediaBucket = new Bucket(this, 'MediaBucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'media/',
      lifecycleRules: [
        { id: 'expire-audio', prefix: MEDIA_PREFIXES.audio, expiration: expiry },
        { id: 'expire-results', prefix: MEDIA_PREFIXES.results, expiration: expiry },
        {
          id: 'expire-transcribe-output',
          prefix: MEDIA_PREFIXES.transcribeOutput,
          expiration: Duration.days(7),
        },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      cors: [
        {
          allowedMethods: [HttpMethods.PUT],
          allowedOrigins: props.corsAllowedOrigins,
          allowedHeaders: ['*'],
          exposedHeaders: ['ETag'],
          maxAge: 3600,
        },
      ],
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** Explicit item actions on a table itself; its indexes are queried by no function that gets this. */
  grantItems(grantee: IGrantable, table: Table, ...actions: string[]): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions, resources: [table.tableArn] }),
    );
  }

  /** Explicit object actions under one prefix: never `s3:*` or `s3:Get*`. */
  grantObjects(grantee: IGrantable, prefix: string, ...actions: string[]): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions, resources: [this.mediaBucket.arnForObjects(`${prefix}*`)] }),
    );
  }
}
