import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { RESOURCES } from '#commons/contract';
import { decodeCursor, encodeCursor, type ListPosition } from '#core/cursor';
import type { JobError } from '#core/errors';
import { isFinished, type Job, type WebhookDelivery } from '#core/job';
import type {
  ChunkProgress,
  ClaimOutcome,
  DeletedJob,
  JobListQuery,
  JobPage,
  JobStore,
  Lease,
} from '#core/ports';

const MAX_READS_PER_PAGE = 10;

/**
 * The keys of the two sparse indexes of active jobs: set while a job is queued or processing, removed
 * when it finishes, so that the sweeper and the per-tenant count read active jobs only. One shard is
 * plenty for the write rates of this service; the key leaves room for more.
 */
const ACTIVE_SHARD = '0';
const ACTIVE_KEYS = (tenantId: string) => ({
  [RESOURCES.jobsTable.dueIndex.partitionKey]: ACTIVE_SHARD,
  [RESOURCES.jobsTable.activeTenantIndex.partitionKey]: tenantId,
});
const FINISHED_REMOVES = [
  'leaseExpiresAt',
  'leaseOwner',
  'chunksDone',
  RESOURCES.jobsTable.dueIndex.sortKey,
  RESOURCES.jobsTable.dueIndex.partitionKey,
  RESOURCES.jobsTable.activeTenantIndex.partitionKey,
].join(', ');

/** Only jobs kept for fewer than 90 days carry this key, so that the expiry index holds them alone. */
const RETENTION_KEYS = (job: Job) =>
  job.options.retention_days === undefined
    ? {}
    : { [RESOURCES.jobsTable.expiryIndex.partitionKey]: ACTIVE_SHARD };

/** What a deleted job's item holds: no options, results or index keys, so no route or index finds it. */
const DELETED = 'deleted';

/** A stored item as the domain's job, without the index keys that only this adapter knows. */
function toJob(item: Record<string, unknown>): Job {
  const {
    [RESOURCES.jobsTable.dueIndex.partitionKey]: _shard,
    [RESOURCES.jobsTable.activeTenantIndex.partitionKey]: _tenant,
    chunksDone,
    [RESOURCES.jobsTable.expiryIndex.partitionKey]: _retention,
    ...job
  } = item;
  // DynamoDB keeps the done chunks as a number set.
  const done = chunksDone instanceof Set ? [...chunksDone].map(Number).sort((a, b) => a - b) : undefined;
  return { ...job, ...(done ? { chunksDone: done } : {}) } as unknown as Job;
}

/** Jobs in DynamoDB, one item per job; status changes are conditional updates. */
export class DynamoJobStore implements JobStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(job: Job): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...job, ...ACTIVE_KEYS(job.tenantId), ...RETENTION_KEYS(job) },
          ConditionExpression: 'attribute_not_exists(id)',
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async get(id: string): Promise<Job | undefined> {
    const item = await this.item(id);
    return item && item.status !== DELETED ? toJob(item) : undefined;
  }

  private async item(id: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }),
    );
    return Item;
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
    const after = query.cursor ? decodeCursor(query.cursor, query.tenantId, query.since) : undefined;
    let startKey: Record<string, unknown> | undefined = after && { ...after, tenantId: query.tenantId };
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
      for (const item of page.Items ?? []) {
        const job = toJob(item);
        jobs.push(job);
        if (jobs.length === query.limit) {
          // More may follow unless this was the very last item of the index.
          const last = page.Items?.at(-1) === item && !page.LastEvaluatedKey;
          return { jobs, ...(last ? {} : { cursor: encodeCursor(query.tenantId, job) }) };
        }
      }
      startKey = page.LastEvaluatedKey;
      if (!startKey) return { jobs };
    }
    return { jobs, cursor: encodeCursor(query.tenantId, startKey as unknown as ListPosition) };
  }

  async claim(id: string, lease: Lease): Promise<ClaimOutcome> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression:
        'SET #status = :processing, leaseExpiresAt = :until, leaseOwner = :owner, dueAt = :dueAt',
      ConditionExpression:
        'attribute_exists(id) AND (#status = :queued OR (#status = :processing AND leaseExpiresAt < :now))',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':queued': 'queued',
        ':until': lease.until.getTime(),
        ':owner': lease.owner,
        ':dueAt': lease.dueAt.toISOString(),
        ':now': lease.now.getTime(),
      },
    });
    if (attempt) return { outcome: 'claimed', job: toJob(attempt) };

    const job = await this.get(id);
    if (!job) return { outcome: 'missing' };
    return isFinished(job.status) ? { outcome: 'finished', job } : { outcome: 'leased', job };
  }

  async extendLease(id: string, lease: Lease): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: 'SET leaseExpiresAt = :until, dueAt = :dueAt',
      ConditionExpression:
        '#status = :processing AND leaseOwner = :owner AND attribute_not_exists(handedOffAt)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':owner': lease.owner,
        ':until': lease.until.getTime(),
        ':dueAt': lease.dueAt.toISOString(),
      },
    });
    return attempt !== undefined;
  }

  async releaseLease(id: string, owner: string, dueAt?: Date): Promise<boolean> {
    // Without an owner, a heartbeat still on its way cannot take the lease back.
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: `SET leaseExpiresAt = :expired${dueAt ? ', dueAt = :dueAt' : ''} REMOVE leaseOwner`,
      ConditionExpression:
        '#status = :processing AND leaseOwner = :owner AND attribute_not_exists(handedOffAt)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':owner': owner,
        ':expired': 0,
        ...(dueAt ? { ':dueAt': dueAt.toISOString() } : {}),
      },
    });
    return attempt !== undefined;
  }

  async complete(id: string, update: { resultKey: string; audio_duration_ms: number }): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: `SET #status = :completed, resultKey = :resultKey, audio_duration_ms = :duration REMOVE ${FINISHED_REMOVES}`,
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
      UpdateExpression: `SET #status = :error, #error = :jobError REMOVE ${FINISHED_REMOVES}`,
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
    update: { audio_duration_ms: number; now: Date; deadline: Date; dueAt: Date },
  ): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression:
        'SET handedOffAt = if_not_exists(handedOffAt, :now), audio_duration_ms = :duration, leaseExpiresAt = :deadline, dueAt = :dueAt',
      ConditionExpression: '#status = :processing',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':duration': update.audio_duration_ms,
        ':deadline': update.deadline.getTime(),
        ':dueAt': update.dueAt.toISOString(),
        ':now': update.now.toISOString(),
      },
    });
    return attempt !== undefined;
  }

  async recordPlan(
    id: string,
    owner: string,
    plan: { chunks: number; audio_duration_ms: number; dueAt: Date },
  ): Promise<number | undefined> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression:
        'SET chunksTotal = :chunks, audio_duration_ms = :duration, dueAt = :dueAt, leaseExpiresAt = :expired REMOVE leaseOwner',
      ConditionExpression: '#status = :processing AND leaseOwner = :owner',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':owner': owner,
        ':chunks': plan.chunks,
        ':duration': plan.audio_duration_ms,
        ':dueAt': plan.dueAt.toISOString(),
        ':expired': 0,
      },
    });
    return attempt && (toJob(attempt).chunksDone?.length ?? 0);
  }

  async markChunkDone(id: string, index: number, dueAt: Date): Promise<ChunkProgress | undefined> {
    // A number set: a chunk's second completion adds nothing, so the count is of distinct chunks.
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: 'ADD chunksDone :index SET dueAt = :dueAt',
      ConditionExpression: '#status = :processing',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':index': new Set([index]),
        ':dueAt': dueAt.toISOString(),
      },
    });
    if (!attempt) return undefined;
    const { chunksDone, chunksTotal } = toJob(attempt);
    return { done: chunksDone?.length ?? 0, ...(chunksTotal !== undefined ? { total: chunksTotal } : {}) };
  }

  async setDue(id: string, dueAt: Date, ifDueAt?: string): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: 'SET dueAt = :dueAt',
      ConditionExpression: `#status IN (:queued, :processing)${ifDueAt ? ' AND dueAt = :seen' : ''}`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':queued': 'queued',
        ':processing': 'processing',
        ':dueAt': dueAt.toISOString(),
        ...(ifDueAt ? { ':seen': ifDueAt } : {}),
      },
    });
    return attempt !== undefined;
  }

  async listDue(now: Date, limit: number): Promise<Job[]> {
    const { dueIndex } = RESOURCES.jobsTable;
    const jobs: Job[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: dueIndex.name,
          KeyConditionExpression: '#shard = :shard AND #due <= :now',
          ExpressionAttributeNames: { '#shard': dueIndex.partitionKey, '#due': dueIndex.sortKey },
          ExpressionAttributeValues: { ':shard': ACTIVE_SHARD, ':now': now.toISOString() },
          Limit: limit - jobs.length,
          ExclusiveStartKey: startKey,
        }),
      );
      jobs.push(...(page.Items ?? []).map(toJob));
      startKey = page.LastEvaluatedKey;
    } while (startKey && jobs.length < limit);
    return jobs;
  }

  async countActive(tenantId: string, atMost: number): Promise<number> {
    const { activeTenantIndex } = RESOURCES.jobsTable;
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: activeTenantIndex.name,
          KeyConditionExpression: '#tenant = :tenant',
          ExpressionAttributeNames: { '#tenant': activeTenantIndex.partitionKey },
          ExpressionAttributeValues: { ':tenant': tenantId },
          Select: 'COUNT',
          Limit: atMost - count,
          ExclusiveStartKey: startKey,
        }),
      );
      count += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey && count < atMost);
    return count;
  }

  async markDeleted(id: string, tenantId: string, now: Date): Promise<DeletedJob | undefined> {
    // Read, then replace on the condition that nobody deleted it meanwhile; a lost race reads again.
    for (;;) {
      const item = await this.item(id);
      if (!item || item.tenantId !== tenantId) return undefined;
      const tombstone = {
        id,
        tenantId,
        status: DELETED,
        deletedAt: item.status === DELETED ? String(item.deletedAt) : now.toISOString(),
        audioKey: String(item.audioKey),
        // The tombstone goes when the job would have.
        [RESOURCES.jobsTable.ttlAttribute]: item[RESOURCES.jobsTable.ttlAttribute],
      };
      if (item.status === DELETED) return toDeletedJob(tombstone);
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: tombstone,
            ConditionExpression: 'tenantId = :tenant AND #status <> :deleted',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':tenant': tenantId, ':deleted': DELETED },
          }),
        );
        return toDeletedJob(tombstone);
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
  }

  async recordWebhookAttempt(id: string, delivery: WebhookDelivery): Promise<boolean> {
    const attempt = await this.conditionalUpdate({
      Key: { id },
      UpdateExpression: 'SET webhook = :delivery',
      ConditionExpression:
        '#status IN (:completed, :error) AND (attribute_not_exists(webhook) OR webhook.attempts < :attempts)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':completed': 'completed',
        ':error': 'error',
        ':delivery': delivery,
        ':attempts': delivery.attempts,
      },
    });
    return attempt !== undefined;
  }

  async listExpired(now: Date, limit: number): Promise<Job[]> {
    const { expiryIndex } = RESOURCES.jobsTable;
    const { Items = [] } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: expiryIndex.name,
        KeyConditionExpression: '#shard = :shard AND #expires <= :now',
        ExpressionAttributeNames: { '#shard': expiryIndex.partitionKey, '#expires': expiryIndex.sortKey },
        ExpressionAttributeValues: { ':shard': ACTIVE_SHARD, ':now': Math.floor(now.getTime() / 1000) },
        Limit: limit,
      }),
    );
    return Items.map(toJob);
  }

  async removeExpired(id: string, now: Date): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { id },
          ConditionExpression: '#expires <= :now',
          ExpressionAttributeNames: { '#expires': RESOURCES.jobsTable.ttlAttribute },
          ExpressionAttributeValues: { ':now': Math.floor(now.getTime() / 1000) },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
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

function toDeletedJob(item: {
  id: string;
  tenantId: string;
  deletedAt: string;
  audioKey: string;
}): DeletedJob {
  return { id: item.id, tenantId: item.tenantId, deletedAt: item.deletedAt, audioKey: item.audioKey };
}
