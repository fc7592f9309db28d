import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { DynamoApiKeyStore } from '#aws/api-keys-table';
import { createDocumentClient } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { DynamoTenantStore } from '#aws/tenants-table';
import { ENV } from '#commons/contract';
import { createApiKey } from '#core/api-keys';
import { createWebhookSecret, rotateWebhookSecret } from '#core/webhooks';
import { readLocalSettings } from './settings.ts';

const usage = `Usage: npm run keys -- <command> [--local]
  create --tenant ID [--label TEXT]   make a key; it is printed once and stored only as a hash
  list                                keys with their id, tenant and state (never the key)
  revoke KEY_ID                       refuse the key from now on
  webhook-secret --tenant ID          make the tenant's webhook signing secret; it is printed once
  rotate-webhook-secret --tenant ID   replace it; the old one keeps signing beside it for 24 hours

Against AWS: set AWS_REGION and API_KEYS_TABLE (the stack output) with credentials as usual, and
TENANTS_TABLE for the webhook secrets.
--local: use the running local runtime (npm start).`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    tenant: { type: 'string' },
    label: { type: 'string' },
    local: { type: 'boolean' },
    help: { type: 'boolean' },
  },
});
const [command, argument] = positionals;

async function main(): Promise<number> {
  if (values.help || !command) {
    console.log(usage);
    return command ? 0 : 1;
  }
  if (values.local) {
    const { runtimeFile } = readLocalSettings();
    const runtime = JSON.parse(await readFile(runtimeFile, 'utf8').catch(() => '{}'));
    if (!runtime.endpoints) throw new Error('No local runtime is running; start it with `npm start`.');
    process.env[ENV.dynamodbEndpoint] = runtime.endpoints.dynamodb;
  }
  const config = readServiceConfig();
  const documents = createDocumentClient(config);
  const store = new DynamoApiKeyStore(documents, config.apiKeysTable);
  const tenants = new DynamoTenantStore(documents, config.tenantsTable);

  switch (command) {
    case 'create': {
      if (!values.tenant) throw new Error('create needs --tenant ID.');
      const { key, record } = await createApiKey(store, {
        tenantId: values.tenant,
        now: new Date(),
        ...(values.label ? { label: values.label } : {}),
      });
      console.log(
        `Created ${record.keyId} for tenant ${record.tenantId}. The key is shown only this once:\n${key}`,
      );
      return 0;
    }
    case 'list': {
      const records = await store.list();
      for (const record of records) {
        const state = record.revokedAt ? `revoked ${record.revokedAt}` : 'active';
        console.log(
          `${record.keyId}\t${record.tenantId}\t${record.createdAt}\t${state}\t${record.label ?? ''}`,
        );
      }
      if (records.length === 0) console.log('No keys.');
      return 0;
    }
    case 'revoke': {
      if (!argument) throw new Error('revoke needs a KEY_ID (see `list`).');
      const revoked = await store.revoke(argument, new Date());
      console.log(revoked ? `Revoked ${argument}.` : `No key with id ${argument}.`);
      return revoked ? 0 : 1;
    }
    case 'webhook-secret':
    case 'rotate-webhook-secret': {
      if (!values.tenant) throw new Error(`${command} needs --tenant ID.`);
      const make = command === 'webhook-secret' ? createWebhookSecret : rotateWebhookSecret;
      const secret = await make(tenants, values.tenant, new Date());
      console.log(
        `Webhook signing secret for tenant ${values.tenant}, shown only this once (verify with any Standard Webhooks library):\n${secret}`,
      );
      return 0;
    }
    default:
      console.error(usage);
      return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
