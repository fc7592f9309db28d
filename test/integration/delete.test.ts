import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { handler as deleteHandler } from '#api/delete';
import { handler as exportHandler } from '#api/export';
import { handler as list } from '#api/list';
import { handler as status } from '#api/status';
import { createDocumentClient, createS3Client } from '#aws/clients';
import { readServiceConfig } from '#aws/config';
import { awsServices } from '#aws/services';
import { RESOURCES } from '#commons/contract';
import { encodeProcessMessage } from '#core/messages';
import type { SyncTranscriber } from '#core/ports';
import { expireJobs } from '#core/retention';
import { LocalTranscriber } from '#speech/local-transcriber';
import { apiEvent, sqsEvent } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { findSample } from '#test/helpers/samples';
import { submitSample } from '#test/helpers/submissions';
import { UrlAudioFetcher } from '#worker/audio-fetcher';
import { createWorkerHandler, handler as worker } from '#worker/handler';
import { createSummarizer, createTranscriber } from '#worker/transcribers';

beforeAll(async () => {
  await useFreshResources();
});

const utterance = findSample((sample) => sample.kind === 'utterance' && (sample.duration_s ?? 0) > 3);

/** Every object the bucket holds for a job, whatever its prefix. */
async function objectsOf(jobId: string): Promise<string[]> {
  const config = readServiceConfig();
  const { Contents = [] } = await createS3Client(config).send(
    new ListObjectsV2Command({ Bucket: config.mediaBucket }),
  );
  return Contents.map((object) => object.Key ?? '').filter((key) => key.includes(jobId));
}

/** The job's item as the table holds it, index keys and all. */
async function rawItem(jobId: string): Promise<Record<string, unknown> | undefined> {
  const config = readServiceConfig();
  const { Item } = await createDocumentClient(config).send(
    new GetCommand({ TableName: config.jobsTable, Key: { id: jobId }, ConsistentRead: true }),
  );
  return Item;
}

const call = async (
  handler: typeof status,
  method: string,
  path: string,
  tenantId: string,
  query: Record<string, string>,
) => {
  const response = await handler(apiEvent({ method, path, tenantId, query }));
  return { status: response.statusCode, body: JSON.parse(response.body || 'null') };
};
const remove = (tenantId: string, id: string) =>
  call(deleteHandler, 'DELETE', '/v1-beta/transcript', tenantId, { id });
const statusOf = (tenantId: string, id: string) =>
  call(status, 'GET', '/v1-beta/transcript/status', tenantId, { id });

async function completedJob(tenantId: string, fields: Record<string, string> = {}): Promise<string> {
  const id = await submitSample(utterance, tenantId, fields);
  expect((await worker(sqsEvent([encodeProcessMessage(id)]))).batchItemFailures).toEqual([]);
  expect((await statusOf(tenantId, id)).body.status).toBe('completed');
  return id;
}

describe('DELETE /v1-beta/transcript', () => {
  it('removes the audio and the result from S3 and leaves only a tombstone in the table', async () => {
    const id = await completedJob('tenant-del', { custom: 'secret notes' });
    expect((await objectsOf(id)).sort()).toEqual([`audio/tenant-del/${id}`, `results/tenant-del/${id}.json`]);

    const deleted = await remove('tenant-del', id);
    expect(deleted).toEqual({
      status: 200,
      body: { id, status: 'deleted', deleted_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) },
    });
    expect(await objectsOf(id)).toEqual([]);
    const item = await rawItem(id);
    expect(Object.keys(item ?? {}).sort()).toEqual(
      ['audioKey', 'deletedAt', RESOURCES.jobsTable.ttlAttribute, 'id', 'status', 'tenantId'].sort(),
    );
    expect(JSON.stringify(item)).not.toContain('secret notes');

    // Gone for every route, and deleting again answers the same.
    expect((await statusOf('tenant-del', id)).status).toBe(404);
    expect(
      (await call(exportHandler, 'GET', '/v1-beta/transcript/export', 'tenant-del', { id, format: 'txt' }))
        .status,
    ).toBe(404);
    const listed = await call(list, 'GET', '/v1-beta/transcripts', 'tenant-del', {});
    expect(listed.body.jobs.map((job: { id: string }) => job.id)).not.toContain(id);
    expect(await remove('tenant-del', id)).toEqual(deleted);
  });

  it("is a 404 for another tenant's job, which stays whole", async () => {
    const id = await completedJob('tenant-keep');
    const before = await objectsOf(id);
    expect(await remove('tenant-del', id)).toMatchObject({
      status: 404,
      body: { error: { code: 'not_found' } },
    });
    expect(await objectsOf(id)).toEqual(before);
    expect((await statusOf('tenant-keep', id)).body.status).toBe('completed');
    expect((await remove('tenant-del', 'no-such-job')).status).toBe(404);
    expect((await call(deleteHandler, 'DELETE', '/v1-beta/transcript', 'tenant-del', {})).status).toBe(400);
  });

  it('stops a job being transcribed: it is never completed and nothing of it is left', async () => {
    const id = await submitSample(utterance, 'tenant-del');
    const { config, finishingJobs, media, queue } = awsServices();
    const real = createTranscriber(config, media);
    let started: () => void = () => undefined;
    const transcribing = new Promise<void>((resolve) => {
      started = resolve;
    });
    let proceed: () => void = () => undefined;
    const deletedMeanwhile = new Promise<void>((resolve) => {
      proceed = resolve;
    });
    // The real transcriber, held at its start until the job is deleted.
    const held: SyncTranscriber = {
      mode: 'sync',
      async transcribe(input) {
        started();
        await deletedMeanwhile;
        if (!(real instanceof LocalTranscriber)) throw new Error('The local engine runs in process.');
        return real.transcribe(input);
      },
    };
    const heldWorker = createWorkerHandler(() => ({
      jobs: finishingJobs,
      media,
      queue,
      fetcher: new UrlAudioFetcher(config.localMode),
      transcriber: held,
      summarizer: createSummarizer(config),
      clock: () => new Date(),
      timings: config.timings,
    }));
    const working = heldWorker(sqsEvent([encodeProcessMessage(id)]));
    await transcribing;
    expect((await statusOf('tenant-del', id)).body.status).toBe('processing');
    expect((await remove('tenant-del', id)).status).toBe(200);
    proceed();
    expect((await working).batchItemFailures).toEqual([]);

    expect(await rawItem(id)).toMatchObject({ status: 'deleted' });
    expect(await objectsOf(id)).toEqual([]);
    expect((await statusOf('tenant-del', id)).status).toBe(404);
  });
});

describe('retention_days', () => {
  it('echoes the retention, and the sweep removes the job and its objects once it has run out', async () => {
    const short = await completedJob('tenant-ret', { retention_days: '1' });
    const kept = await completedJob('tenant-ret');
    expect((await statusOf('tenant-ret', short)).body.retention_days).toBe(1);
    const { jobs, media } = awsServices();
    expect(await expireJobs({ jobs, media, clock: () => new Date() })).toEqual([]);

    const dayLater = () => new Date(Date.now() + 86_400_000 + 1000);
    expect(await expireJobs({ jobs, media, clock: dayLater })).toEqual([short]);
    expect(await rawItem(short)).toBeUndefined();
    expect(await objectsOf(short)).toEqual([]);
    expect((await objectsOf(kept)).length).toBe(2);
    expect((await statusOf('tenant-ret', kept)).body.status).toBe('completed');
  });
});
