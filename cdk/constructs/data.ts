import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  HttpMethods,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import {
  MEDIA_PREFIXES,
  PENDING_UPLOAD_EXPIRATION_DAYS,
  RESOURCES,
  RETENTION_DAYS,
  TRANSCRIBE_OUTPUT_EXPIRATION_DAYS,
  UPLOAD_TAG,
  WORK_EXPIRATION_DAYS,
} from '#commons/contract';

export interface DataProps {
  /** Origins allowed to PUT presigned uploads and GET presigned audio from a browser. */
  corsAllowedOrigins: string[];
}

/**
 * The jobs table (TTL, PITR, tenant index), the API key table and the media bucket. Data is retained
 * when the stack is deleted: audio, transcripts and keys are the customers'.
 */
export class Data extends Construct {
  readonly jobsTable: Table;
  readonly apiKeysTable: Table;
  readonly idempotencyTable: Table;
  readonly tenantsTable: Table;
  readonly mediaBucket: Bucket;

  constructor(scope: Construct, id: string, props: DataProps) {
    super(scope, id);
    const { jobsTable, apiKeysTable, idempotencyTable, tenantsTable } = RESOURCES;

    this.jobsTable = new Table(this, 'JobsTable', {
      partitionKey: { name: jobsTable.partitionKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: jobsTable.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of [jobsTable.tenantIndex, jobsTable.dueIndex, jobsTable.activeTenantIndex]) {
      this.jobsTable.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
        projectionType: ProjectionType[index.projection],
      });
    }
    // Jobs kept for fewer than 90 days, by expiry (epoch seconds: a number, as the TTL attribute).
    const { expiryIndex } = jobsTable;
    this.jobsTable.addGlobalSecondaryIndex({
      indexName: expiryIndex.name,
      partitionKey: { name: expiryIndex.partitionKey, type: AttributeType.STRING },
      sortKey: { name: expiryIndex.sortKey, type: AttributeType.NUMBER },
      projectionType: ProjectionType[expiryIndex.projection],
    });

    this.apiKeysTable = new Table(this, 'ApiKeysTable', {
      partitionKey: { name: apiKeysTable.partitionKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // What Idempotency-Key requests answered, for 24 hours (Powertools' record layout).
    this.idempotencyTable = new Table(this, 'IdempotencyTable', {
      partitionKey: { name: idempotencyTable.partitionKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: idempotencyTable.ttlAttribute,
      encryption: TableEncryption.AWS_MANAGED,
      // Records live a day; there is nothing to recover.
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: false },
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // The tenants' webhook signing secrets, needed to sign: encrypted at rest, retained like the keys.
    this.tenantsTable = new Table(this, 'TenantsTable', {
      partitionKey: { name: tenantsTable.partitionKey, type: AttributeType.STRING },
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
      lifecycleRules: [{ expiration: Duration.days(RETENTION_DAYS) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const expiry = Duration.days(RETENTION_DAYS);
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
          expiration: Duration.days(TRANSCRIBE_OUTPUT_EXPIRATION_DAYS),
        },
        // Uploads never submitted go after a day; submitted ones are a job's audio, kept as long.
        {
          id: 'expire-pending-uploads',
          prefix: MEDIA_PREFIXES.uploads,
          tagFilters: { [UPLOAD_TAG.key]: UPLOAD_TAG.pending },
          expiration: Duration.days(PENDING_UPLOAD_EXPIRATION_DAYS),
        },
        {
          id: 'expire-submitted-uploads',
          prefix: MEDIA_PREFIXES.uploads,
          tagFilters: { [UPLOAD_TAG.key]: UPLOAD_TAG.submitted },
          expiration: expiry,
        },
        // Workers delete a job's working files when it ends; this catches what a crash left behind.
        { id: 'expire-work', prefix: MEDIA_PREFIXES.work, expiration: Duration.days(WORK_EXPIRATION_DAYS) },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      cors: [
        {
          allowedMethods: [HttpMethods.PUT, HttpMethods.GET, HttpMethods.HEAD],
          allowedOrigins: props.corsAllowedOrigins,
          allowedHeaders: ['*'],
          exposedHeaders: ['ETag'],
          maxAge: 3600,
        },
      ],
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}
