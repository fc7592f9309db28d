import { readFile } from 'node:fs/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#api/submit';
import { createS3Client, createSqsClient } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import { MAX_DIRECT_UPLOAD_BYTES, RETENTION_DAYS } from '#commons/contract';
import { decodeWorkerMessage } from '#core/messages';
import { apiEvent } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { type Sample, samplePath, samplesOfKind } from '#test/helpers/samples';
import { submitForm } from '#test/helpers/submissions';

const sample = samplesOfKind('utterance')[0];
let audio: Buffer;

beforeAll(async () => {
  await useFreshResources();
  audio = await readFile(samplePath(sample as Sample));
});

function submit(form: FormData, tenantId = 'tenant-submit', options: { base64?: boolean } = {}) {
  return submitForm(form, tenantId, options);
}

function audioForm(fields: Record<string, string> = {}, part = 'audio'): FormData {
  const form = new FormData();
  form.append(part, new Blob([new Uint8Array(audio)]), 'speech.wav');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return form;
}

async function storedKeys(prefix: string): Promise<string[]> {
  const config = readServiceConfig();
  const listing = await createS3Client(config).send(
    new ListObjectsV2Command({ Bucket: config.mediaBucket, Prefix: prefix }),
  );
  return (listing.Contents ?? []).map((object) => object.Key ?? '');
}

describe('POST /v1-beta/transcript', () => {
  it('stores the audio, records the job, queues it and answers 200 with the SPEC 2.1 record', async () => {
    const before = Date.now();
    const { status, body } = await submit(audioForm({ custom: 'order-42', dual_channel: 'False' }));
    expect(status).toBe(200);
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'queued',
      dual_channel: 'false',
      punctuate: 'true',
      webhook_url: '',
      custom: 'order-42',
      speaker_diarization: 'false',
      language: 'enUs',
      timestamp_submitted: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      tldr: 'false',
      short_hand_notes: 'false',
    });

    const job = await awsServices().jobs.get(body.id ?? '');
    expect(job).toMatchObject({
      tenantId: 'tenant-submit',
      status: 'queued',
      audioKey: `audio/tenant-submit/${body.id}`,
    });
    const expectedExpiry = Math.floor(before / 1000) + RETENTION_DAYS * 86_400;
    expect(Math.abs((job?.expiresAt ?? 0) - expectedExpiry)).toBeLessThanOrEqual(2);

    const path = `/tmp/${body.id}.audio`;
    await awsServices().media.downloadToFile(job?.audioKey ?? '', path);
    expect((await readFile(path)).equals(audio)).toBe(true);

    const config = readServiceConfig();
    const { Messages = [] } = await createSqsClient(config).send(
      new ReceiveMessageCommand({
        QueueUrl: config.jobsQueueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
      }),
    );
    expect(Messages.map((message) => decodeWorkerMessage(message.Body ?? '', ''))).toContainEqual({
      kind: 'process',
      jobId: body.id,
    });
  });

  it('gives every job its own unguessable id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) ids.add((await submit(audioForm())).body.id ?? '');
    expect(ids.size).toBe(3);
  });

  it('accepts the file part name as an alias of audio', async () => {
    expect((await submit(audioForm({}, 'file'))).status).toBe(200);
  });

  it('accepts a body that API Gateway passed as text rather than base64', async () => {
    const form = new FormData();
    form.append('audio', new Blob(['plain ascii bytes']), 'a.wav');
    expect((await submit(form, 'tenant-text', { base64: false })).status).toBe(200);
  });

  it('answers 415 for a body that is not multipart/form-data', async () => {
    const response = await handler(
      apiEvent({
        method: 'POST',
        path: '/v1-beta/transcript',
        tenantId: 't',
        headers: { 'content-type': 'application/json' },
        body: Buffer.from('{}'),
      }),
    );
    expect(response.statusCode).toBe(415);
    expect(JSON.parse(response.body).error.code).toBe('unsupported_media_type');
  });

  it('answers 413 above the direct-upload limit, before reading the body', async () => {
    const form = new FormData();
    form.append('audio', new Blob([Buffer.alloc(MAX_DIRECT_UPLOAD_BYTES + 1)]), 'big.wav');
    const { status, body } = await submit(form, 'tenant-big');
    expect(status).toBe(413);
    expect(body.error?.code).toBe('payload_too_large');
    expect(body.error?.message).toContain(String(MAX_DIRECT_UPLOAD_BYTES));
    expect(await storedKeys('audio/tenant-big/')).toEqual([]);
  });

  it('answers field-named 400s and keeps no audio for refused submissions', async () => {
    const cases: [FormData, string, string][] = [
      [audioForm({ punctuate: 'maybe' }), 'invalid_option', 'punctuate'],
      [audioForm({ language: 'deDe' }), 'unsupported_language', 'language'],
      [audioForm({ webhook_url: 'not a url' }), 'invalid_option', 'webhook_url'],
      [audioForm({ colour: 'blue' }), 'invalid_request', 'colour'],
    ];
    for (const [form, code, field] of cases) {
      const { status, body } = await submit(form, 'tenant-refused');
      expect(status).toBe(400);
      expect(body.error).toMatchObject({ code, field });
    }
    expect(await storedKeys('audio/tenant-refused/')).toEqual([]);
  });

  it('answers 400 missing_audio without an audio part or with an empty file', async () => {
    const noAudio = new FormData();
    noAudio.append('punctuate', 'true');
    expect((await submit(noAudio)).body.error).toMatchObject({ code: 'missing_audio', field: 'audio' });

    const empty = new FormData();
    empty.append('audio', new Blob([]), 'empty.wav');
    const { status, body } = await submit(empty, 'tenant-empty');
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 'missing_audio', field: 'audio' });
    expect(await storedKeys('audio/tenant-empty/')).toEqual([]);
  });
});
