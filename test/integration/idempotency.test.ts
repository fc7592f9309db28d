import { readFile } from 'node:fs/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { handler as submit } from '#api/submit';
import { createDocumentClient, createS3Client } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { apiEvent, multipartBody } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { samplePath, samplesOfKind } from '#test/helpers/samples';
import type { SubmitBody } from '#test/helpers/submissions';

let audio: Buffer;
let otherAudio: Buffer;

beforeAll(async () => {
  await useFreshResources();
  const [first, second] = samplesOfKind('utterance');
  if (!first || !second) throw new Error('Two utterances are needed.');
  audio = await readFile(samplePath(first));
  otherAudio = await readFile(samplePath(second));
});

interface Request {
  key?: string;
  tenantId?: string;
  fields?: Record<string, string>;
  file?: Buffer;
  /** Parts before the file instead of after it, as another client would order them. */
  fieldsFirst?: boolean;
}

/** A submission as a client sends it: a fresh multipart body (its own boundary) each time. */
async function send(request: Request) {
  const form = new FormData();
  const fields = Object.entries(request.fields ?? { custom: 'ticket-1' });
  if (request.fieldsFirst) for (const [name, value] of fields) form.append(name, value);
  form.append('audio', new Blob([new Uint8Array(request.file ?? audio)]), 'call.wav');
  if (!request.fieldsFirst) for (const [name, value] of fields) form.append(name, value);
  const { body, contentType } = await multipartBody(form);
  const response = await submit(
    apiEvent({
      method: 'POST',
      path: '/v1-beta/transcript',
      tenantId: request.tenantId ?? 'tenant-idem',
      headers: {
        'Content-Type': contentType,
        ...(request.key !== undefined ? { 'Idempotency-Key': request.key } : {}),
      },
      body,
    }),
  );
  return {
    status: response.statusCode,
    replayed: response.headers?.['idempotent-replayed'] === 'true',
    body: JSON.parse(response.body) as SubmitBody,
  };
}

/** The jobs and audio objects stored for a tenant. */
async function stored(tenantId: string): Promise<{ jobs: string[]; audio: string[] }> {
  const config = readServiceConfig();
  const { Items = [] } = await createDocumentClient(config).send(
    new ScanCommand({ TableName: config.jobsTable }),
  );
  const { Contents = [] } = await createS3Client(config).send(
    new ListObjectsV2Command({ Bucket: config.mediaBucket, Prefix: `audio/${tenantId}/` }),
  );
  return {
    jobs: Items.filter((item) => item.tenantId === tenantId).map((item) => String(item.id)),
    audio: Contents.map((object) => object.Key ?? ''),
  };
}

describe('Idempotency-Key on submit', () => {
  it('answers the same job for the same key and the same request, with another boundary and part order', async () => {
    const first = await send({ key: 'order-1', tenantId: 'tenant-same' });
    expect(first).toMatchObject({
      status: 200,
      replayed: false,
      body: { status: 'queued', custom: 'ticket-1' },
    });
    const again = await send({ key: 'order-1', tenantId: 'tenant-same', fieldsFirst: true });
    expect(again.status).toBe(200);
    expect(again.replayed).toBe(true);
    expect(again.body).toEqual(first.body);
    // One job, and the audio sent the second time was not kept.
    expect(await stored('tenant-same')).toEqual({
      jobs: [first.body.id],
      audio: [`audio/tenant-same/${first.body.id}`],
    });
  });

  it('answers 409 for the same key with other options or other audio, and keeps nothing of them', async () => {
    const first = await send({ key: 'order-2', tenantId: 'tenant-conflict' });
    const others: Request[] = [
      { fields: { custom: 'ticket-2' } },
      { fields: { custom: 'ticket-1', punctuate: 'false' } },
      { file: otherAudio },
    ];
    for (const request of others) {
      const refused = await send({ key: 'order-2', tenantId: 'tenant-conflict', ...request });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({ code: 'conflict', field: 'Idempotency-Key' });
    }
    expect(await stored('tenant-conflict')).toEqual({
      jobs: [first.body.id],
      audio: [`audio/tenant-conflict/${first.body.id}`],
    });
  });

  it('makes one job of concurrent duplicates', async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => send({ key: 'order-3', tenantId: 'tenant-race' })),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const ids = new Set(answers.map((answer) => answer.body.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((answer) => !answer.replayed)).toHaveLength(1);
    const kept = await stored('tenant-race');
    expect(kept.jobs).toEqual([...ids]);
    expect(kept.audio).toHaveLength(1);
  });

  it('scopes keys to the tenant, frees a key whose request was refused, and refuses a malformed key', async () => {
    const mine = await send({ key: 'shared-key', tenantId: 'tenant-a' });
    const theirs = await send({ key: 'shared-key', tenantId: 'tenant-b' });
    expect(mine.body.id).not.toBe(theirs.body.id);
    expect(theirs.replayed).toBe(false);

    const invalid = await send({ key: 'order-4', tenantId: 'tenant-a', fields: { punctuate: 'maybe' } });
    expect(invalid.status).toBe(400);
    const corrected = await send({ key: 'order-4', tenantId: 'tenant-a', fields: { punctuate: 'false' } });
    expect(corrected).toMatchObject({ status: 200, replayed: false });

    for (const key of ['', 'x'.repeat(256), 'has space', 'ünïcode']) {
      const refused = await send({ key, tenantId: 'tenant-a' });
      expect(refused.status, key).toBe(400);
      expect(refused.body.error?.field).toBe('Idempotency-Key');
    }
  });

  it('makes a new job of every request without a key', async () => {
    const [first, second] = [
      await send({ tenantId: 'tenant-plain' }),
      await send({ tenantId: 'tenant-plain' }),
    ];
    expect(first.body.id).not.toBe(second.body.id);
    expect((await stored('tenant-plain')).jobs).toHaveLength(2);
  });
});
