import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { RESOURCES } from '#commons/contract';
import { type JobError, RequestError } from '#core/errors';
import { isFinished, type Job } from '#core/job';
import type { ClaimOutcome, JobListQuery, JobPage, JobStore } from '#core/ports';

const MAX_READS_PER_PAGE = 10;

/** A position in a tenant's list: the index key of the last job returned. */
function encodeCursor(job: Pick<Job, 'id' | 'tenantId' | 'timestamp_submitted'>): string {
  const key = { id: job.id, tenantId: job.tenantId, timestamp_submitted: job.timestamp_submitted };
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

function decodeCursor(cursor: string, tenantId: string): Record<string, string> {
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const valid = [key.id, key.tenantId, key.timestamp_submitted].every((value) => typeof value === 'string');
    if (valid && key.tenantId === tenantId) return key;
  } catch {
    // Answered below as an invalid cursor.
  }
  throw new RequestError('invalid_request', 'The cursor is not valid; start again without it.', 'cursor');
}

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

  async listByTenant(query: JobListQuery): Promise<JobPage> {
    const { tenantIndex } = RESOURCES.jobsTable;
    const filters: string[] = [];
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':tenant': query.tenantId, ':since': query.since };
    if (query.status) {
      filters.push('#status = :status');
      names['#status'] = 'status';
      values[':status'] = query.status;
    }
    if (query.search) {
      filters.push('contains(searchText, :search)');
      values[':search'] = query.search;
    }

    const jobs: Job[] = [];
    let startKey = query.cursor ? decodeCursor(query.cursor, query.tenantId) : undefined;
    // Filters make pages sparse; a bounded number of reads keeps one request short.
    for (let read = 0; read < MAX_READS_PER_PAGE; read++) {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: tenantIndex.name,
          KeyConditionExpression: 'tenantId = :tenant AND timestamp_submitted >= :since',
          ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
          ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
          ExpressionAttributeValues: values,
          ScanIndexForward: false,
          Limit: query.limit,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of (page.Items ?? []) as Job[]) {
        jobs.push(item);
        if (jobs.length === query.limit) {
          // More may follow unless this was the very last item of the index.
          const last = page.Items?.at(-1) === item && !page.LastEvaluatedKey;
          return { jobs, ...(last ? {} : { cursor: encodeCursor(item) }) };
        }
      }
      startKey = page.LastEvaluatedKey;
      if (!startKey) return { jobs };
    }
    return { jobs, cursor: encodeCursor(startKey as Pick<Job, 'id' | 'tenantId' | 'timestamp_submitted'>) };
  }

  async claim(id: string, now: Date, leaseMs: number): Promise<ClaimOutcome> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: 'SET #status = :processing, leaseExpiresAt = :lease',
      ConditionExpression:
        'attribute_exists(id) AND (#status = :queued OR (#status = :processing AND leaseExpiresAt < :nowMs))',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':queued': 'queued',
        ':lease': now.getTime() + leaseMs,
        ':nowMs': now.getTime(),
      },
      ReturnValues: 'ALL_NEW',
    });
    if (attempt) return { outcome: 'claimed', job: attempt as unknown as Job };

    const job = await this.get(id);
    if (!job) return { outcome: 'missing' };
    return isFinished(job.status) ? { outcome: 'finished', job } : { outcome: 'leased', job };
  }

  async complete(id: string, update: { resultKey: string; audio_duration_ms: number }): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression:
        'SET #status = :completed, resultKey = :resultKey, audio_duration_ms = :duration REMOVE leaseExpiresAt',
      ConditionExpression: '#status = :processing',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':completed': 'completed',
        ':processing': 'processing',
        ':resultKey': update.resultKey,
        ':duration': update.audio_duration_ms,
      },
    });
    return attempt !== undefined;
  }

  async fail(id: string, error: JobError): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: 'SET #status = :error, #error = :jobError REMOVE leaseExpiresAt',
      ConditionExpression: '#status IN (:queued, :processing)',
      ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
      ExpressionAttributeValues: {
        ':error': 'error',
        ':queued': 'queued',
        ':processing': 'processing',
        ':jobError': error,
      },
    });
    return attempt !== undefined;
  }

  async markHandedOff(
    id: string,
    update: { audio_duration_ms: number; now: Date; deadline: Date },
  ): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression:
        'SET handedOffAt = if_not_exists(handedOffAt, :now), audio_duration_ms = :duration, leaseExpiresAt = :deadline',
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
