import { CreateTableCommand, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { createDocumentClient, createS3Client, createSqsClient } from '#aws/clients';
import type { ServiceConfig } from '#aws/config';
import { RESOURCES } from '#commons/contract';

export interface LocalQueues {
  jobsQueueUrl: string;
  deadLetterQueueUrl: string;
  webhookQueueUrl: string;
  webhookDeadLetterQueueUrl: string;
}

/** Creates the tables, bucket and queues with the names and settings the CDK stack uses. */
export async function createResources(
  config: ServiceConfig,
  settings: { visibilityTimeoutSeconds?: number; queueNameSuffix?: string } = {},
): Promise<LocalQueues> {
  const suffix = settings.queueNameSuffix ? `-${settings.queueNameSuffix}` : '';
  const dynamodb = createDocumentClient(config);
  const s3 = createS3Client(config);
  const sqs = createSqsClient(config);
  try {
    const { jobsTable, apiKeysTable, idempotencyTable, tenantsTable, deadLetterQueue, jobsQueue } = RESOURCES;
    const { tenantIndex, dueIndex, activeTenantIndex, expiryIndex } = jobsTable;
    const indexes = [tenantIndex, dueIndex, activeTenantIndex, expiryIndex];
    const attributes = new Set([
      jobsTable.partitionKey,
      ...indexes.flatMap((index) => [index.partitionKey, index.sortKey]),
    ]);
    await dynamodb.send(
      new CreateTableCommand({
        TableName: config.jobsTable,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [...attributes].map((name) => ({
          AttributeName: name,
          // The expiry is epoch seconds, as the TTL attribute must be.
          AttributeType: name === jobsTable.ttlAttribute ? 'N' : 'S',
        })),
        KeySchema: [{ AttributeName: jobsTable.partitionKey, KeyType: 'HASH' }],
        GlobalSecondaryIndexes: indexes.map((index) => ({
          IndexName: index.name,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: 'HASH' },
            { AttributeName: index.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: index.projection },
        })),
      }),
    );
    await dynamodb.send(
      new UpdateTimeToLiveCommand({
        TableName: config.jobsTable,
        TimeToLiveSpecification: { AttributeName: jobsTable.ttlAttribute, Enabled: true },
      }),
    );
    await dynamodb.send(
      new CreateTableCommand({
        TableName: config.apiKeysTable,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: apiKeysTable.partitionKey, AttributeType: 'S' }],
        KeySchema: [{ AttributeName: apiKeysTable.partitionKey, KeyType: 'HASH' }],
      }),
    );
    for (const [name, table] of [
      [config.idempotencyTable, idempotencyTable],
      [config.tenantsTable, tenantsTable],
    ] as const) {
      await dynamodb.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: table.partitionKey, AttributeType: 'S' }],
          KeySchema: [{ AttributeName: table.partitionKey, KeyType: 'HASH' }],
        }),
      );
    }
    await dynamodb.send(
      new UpdateTimeToLiveCommand({
        TableName: config.idempotencyTable,
        TimeToLiveSpecification: { AttributeName: idempotencyTable.ttlAttribute, Enabled: true },
      }),
    );
    await s3.send(new CreateBucketCommand({ Bucket: config.mediaBucket }));

    const dlq = await sqs.send(
      new CreateQueueCommand({
        QueueName: deadLetterQueue.name + suffix,
        Attributes: { MessageRetentionPeriod: String(deadLetterQueue.retentionSeconds) },
      }),
    );
    const dlqAttributes = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    const queue = await sqs.send(
      new CreateQueueCommand({
        QueueName: jobsQueue.name + suffix,
        Attributes: {
          VisibilityTimeout: String(settings.visibilityTimeoutSeconds ?? jobsQueue.visibilityTimeoutSeconds),
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: dlqAttributes.Attributes?.QueueArn,
            maxReceiveCount: deadLetterQueue.maxReceiveCount,
          }),
        },
      }),
    );
    const webhooks = await createQueueWithDeadLetters(
      sqs,
      RESOURCES.webhookQueue.name + suffix,
      RESOURCES.webhookQueue.visibilityTimeoutSeconds,
      RESOURCES.webhookDeadLetterQueue,
      suffix,
    );
    if (!queue.QueueUrl || !dlq.QueueUrl) throw new Error('The queues were not created.');
    return {
      jobsQueueUrl: queue.QueueUrl,
      deadLetterQueueUrl: dlq.QueueUrl,
      webhookQueueUrl: webhooks.queueUrl,
      webhookDeadLetterQueueUrl: webhooks.deadLetterQueueUrl,
    };
  } finally {
    dynamodb.destroy();
    s3.destroy();
    sqs.destroy();
  }
}

/** A queue whose messages go to its own dead-letter queue after `maxReceiveCount` receives. */
async function createQueueWithDeadLetters(
  sqs: ReturnType<typeof createSqsClient>,
  name: string,
  visibilityTimeoutSeconds: number,
  deadLetters: { name: string; maxReceiveCount: number; retentionSeconds: number },
  suffix: string,
): Promise<{ queueUrl: string; deadLetterQueueUrl: string }> {
  const dlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: deadLetters.name + suffix,
      Attributes: { MessageRetentionPeriod: String(deadLetters.retentionSeconds) },
    }),
  );
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  const queue = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: Attributes?.QueueArn,
          maxReceiveCount: deadLetters.maxReceiveCount,
        }),
      },
    }),
  );
  if (!queue.QueueUrl || !dlq.QueueUrl) throw new Error(`The queue ${name} was not created.`);
  return { queueUrl: queue.QueueUrl, deadLetterQueueUrl: dlq.QueueUrl };
}
