import { beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#api/status';
import { awsServices } from '#aws/services';
import { resultKey } from '#commons/contract';
import { newJob, newJobId } from '#core/job';
import { parseJobOptions } from '#core/options';
import type { TranscriptResult } from '#core/result';
import { apiEvent } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { testLease } from '#test/helpers/memory-ports';

beforeAll(async () => {
  await useFreshResources();
});

async function status(id: string | undefined, tenantId: string) {
  const response = await handler(
    apiEvent({
      method: 'GET',
      path: '/v1-beta/transcript/status',
      tenantId,
      ...(id ? { query: { id } } : {}),
    }),
  );
  return { status: response.statusCode, body: JSON.parse(response.body) };
}

async function storedJob(tenantId: string, fields: Record<string, string> = {}) {
  const job = newJob({ id: newJobId(), tenantId, options: parseJobOptions(fields), now: new Date() });
  await awsServices().jobs.create(job);
  return job;
}

describe('GET /v1-beta/transcript/status', () => {
  it('answers a queued job with JSON booleans and no results', async () => {
    const job = await storedJob('tenant-a', { speaker_diarization: 'true', tldr: 'true' });
    const { status: code, body } = await status(job.id, 'tenant-a');
    expect(code).toBe(200);
    expect(body).toEqual({
      id: job.id,
      status: 'queued',
      dual_channel: false,
      punctuate: true,
      webhook_url: '',
      custom: '',
      speaker_diarization: true,
      language: 'enUs',
      timestamp_submitted: job.timestamp_submitted,
    });
  });

  it('adds the results stored in S3 once the job is completed', async () => {
    const { jobs, media } = awsServices();
    const job = await storedJob('tenant-a');
    const result: TranscriptResult = {
      transcript: 'Hello there.',
      words: [
        { startTime: 0, endTime: 300, word: 'Hello', confidence: 0.9 },
        { startTime: 310, endTime: 700, word: 'there.', confidence: 0.8 },
      ],
      audio_duration_ms: 800,
      engine: 'sphinx',
    };
    const key = resultKey(job.tenantId, job.id);
    await media.putResult(key, result);
    await jobs.claim(job.id, testLease(60_000));
    await jobs.complete(job.id, { resultKey: key, audio_duration_ms: 800 });

    const { body } = await status(job.id, 'tenant-a');
    expect(body.status).toBe('completed');
    expect(body.results.results).toEqual(result);
    expect(body.results.job_data).toMatchObject({ id: job.id, status: 'completed', punctuate: true });
  });

  it('carries the error of a failed job', async () => {
    const job = await storedJob('tenant-a');
    await awsServices().jobs.fail(job.id, { code: 'no_audio', message: 'The file has no audio stream.' });
    const { body } = await status(job.id, 'tenant-a');
    expect(body).toMatchObject({
      status: 'error',
      error: { code: 'no_audio', message: 'The file has no audio stream.' },
    });
    expect(body).not.toHaveProperty('results');
  });

  it("answers 404 for an unknown id and for another tenant's job alike", async () => {
    const job = await storedJob('tenant-a');
    const other = await status(job.id, 'tenant-b');
    const unknown = await status(newJobId(), 'tenant-a');
    expect(other.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(other.body.error.code).toBe('not_found');
    expect(other.body.error.message).not.toContain('tenant');
  });

  it('answers 400 without an id', async () => {
    expect(await status(undefined, 'tenant-a')).toMatchObject({
      status: 400,
      body: { error: { field: 'id' } },
    });
  });
});
