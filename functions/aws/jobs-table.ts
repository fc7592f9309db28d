import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { JobError } from '#core/errors';
import { isFinished, type Job } from '#core/job';
import type { ClaimOutcome, JobStore } from '#core/ports';

/** Jobs in DynamoDB, one item per job; status changes are conditional updates. */
export class DynamoJobStore implements JobStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(job: Job): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: job,
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  async get(id: string): Promise<Job | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { id } }));
    return Item as Job | undefined;
  }

  async claim(id: string, now: Date, leaseMs: number): Promise<ClaimOutcome> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: 'SET #status = :processing, leaseExpiresAt = :lease, updatedAt = :now',
      ConditionExpression:
        'attribute_exists(id) AND (#status = :queued OR (#status = :processing AND leaseExpiresAt < :nowMs))',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':queued': 'queued',
        ':lease': now.getTime() + leaseMs,
        ':nowMs': now.getTime(),
        ':now': now.toISOString(),
      },
      ReturnValues: 'ALL_NEW',
    });
    if (attempt) return { outcome: 'claimed', job: attempt as unknown as Job };

    const job = await this.get(id);
    if (!job) return { outcome: 'missing' };
    return isFinished(job.status) ? { outcome: 'finished', job } : { outcome: 'leased', job };
  }

  async complete(
    id: string,
    update: { resultKey: string; audio_duration_ms: number; now: Date },
  ): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression:
        'SET #status = :completed, resultKey = :resultKey, audio_duration_ms = :duration, updatedAt = :now REMOVE leaseExpiresAt',
      ConditionExpression: '#status = :processing',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':completed': 'completed',
        ':processing': 'processing',
        ':resultKey': update.resultKey,
        ':duration': update.audio_duration_ms,
        ':now': update.now.toISOString(),
      },
    });
    return attempt !== undefined;
  }

  async fail(id: string, error: JobError, now: Date): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: 'SET #status = :error, #error = :jobError, updatedAt = :now REMOVE leaseExpiresAt',
      ConditionExpression: '#status IN (:queued, :processing)',
      ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
      ExpressionAttributeValues: {
        ':error': 'error',
        ':queued': 'queued',
        ':processing': 'processing',
        ':jobError': error,
        ':now': now.toISOString(),
      },
    });
    return attempt !== undefined;
  }

  async markEngineStarted(
    id: string,
    update: { audio_duration_ms: number; now: Date; deadline: Date },
  ): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression:
        'SET engineStartedAt = if_not_exists(engineStartedAt, :now), audio_duration_ms = :duration, leaseExpiresAt = :deadline, updatedAt = :now',
      ConditionExpression: '#status = :processing',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':duration': update.audio_duration_ms,
        ':deadline': update.deadline.getTime(),
        ':now': update.now.toISOString(),
      },
    });
    return attempt !== undefined;
  }

  /** The updated attributes, or undefined when the condition did not hold. */
  private async conditionalUpdate(
    input: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName'>,
  ): Promise<Record<string, unknown> | undefined> {
    try {
      const { Attributes } = await this.client.send(
        new UpdateCommand({ ReturnValues: 'ALL_NEW', ...input, TableName: this.tableName }),
      );
      return Attributes ?? {};
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }
}
