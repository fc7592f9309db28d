import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { WebhookSecretStore } from '#core/ports';

interface TenantItem {
  tenantId: string;
  webhookSecret?: string;
  webhookSecretCreatedAt?: string;
  /** The secret a rotation replaced, still signing until `previousWebhookSecretUntil`. */
  previousWebhookSecret?: string;
  previousWebhookSecretUntil?: string;
}

/**
 * Per-tenant settings in DynamoDB, one item per tenant: its webhook signing secrets. A signing secret
 * must be read to sign, so it is stored as is (the table is encrypted at rest) and never logged.
 */
export class DynamoTenantStore implements WebhookSecretStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async signingSecrets(tenantId: string, now: Date): Promise<string[]> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { tenantId }, ConsistentRead: true }),
    );
    const item = Item as TenantItem | undefined;
    if (!item?.webhookSecret) return [];
    const previousValid =
      item.previousWebhookSecret &&
      item.previousWebhookSecretUntil &&
      new Date(item.previousWebhookSecretUntil).getTime() > now.getTime();
    return previousValid && item.previousWebhookSecret
      ? [item.webhookSecret, item.previousWebhookSecret]
      : [item.webhookSecret];
  }

  async create(tenantId: string, secret: string, now: Date): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { tenantId, webhookSecret: secret, webhookSecretCreatedAt: now.toISOString() },
          ConditionExpression: 'attribute_not_exists(webhookSecret)',
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async rotate(tenantId: string, secret: string, now: Date, graceUntil: Date): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { tenantId },
          UpdateExpression:
            'SET previousWebhookSecret = webhookSecret, previousWebhookSecretUntil = :until, webhookSecret = :secret, webhookSecretCreatedAt = :now',
          ConditionExpression: 'attribute_exists(webhookSecret)',
          ExpressionAttributeValues: {
            ':secret': secret,
            ':until': graceUntil.toISOString(),
            ':now': now.toISOString(),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}
