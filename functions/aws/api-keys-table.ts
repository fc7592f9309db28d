import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord, ApiKeyStore } from '#core/ports';

/** API key hashes in DynamoDB, keyed by the hash. */
export class DynamoApiKeyStore implements ApiKeyStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { keyHash } }));
    return Item as ApiKeyRecord | undefined;
  }

  async put(record: ApiKeyRecord): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: record,
        ConditionExpression: 'attribute_not_exists(keyHash)',
      }),
    );
  }

  /** An administrator's listing: the table holds one small item per key, so a scan is fine. */
  async list(): Promise<ApiKeyRecord[]> {
    const records: ApiKeyRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({ TableName: this.tableName, ExclusiveStartKey: startKey }),
      );
      records.push(...((page.Items ?? []) as ApiKeyRecord[]));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async revoke(keyId: string, now: Date): Promise<boolean> {
    const record = (await this.list()).find((candidate) => candidate.keyId === keyId);
    if (!record) return false;
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { keyHash: record.keyHash },
        UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :now)',
        ExpressionAttributeValues: { ':now': now.toISOString() },
      }),
    );
    return true;
  }
}
