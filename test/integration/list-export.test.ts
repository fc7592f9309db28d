import { beforeAll, describe, expect, it } from 'vitest';
import { handler as exportHandler } from '#api/export';
import { handler as list } from '#api/list';
import { awsServices } from '#aws/services';
import { resultKey } from '#commons/contract';
import { type Job, newJob, newJobId } from '#core/job';
import type { JobList } from '#core/list-jobs';
import { parseJobOptions } from '#core/options';
import type { TranscriptResult } from '#core/result';
import { apiEvent } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { testLease } from '#test/helpers/memory-ports';

const DAY_MS = 86_400_000;
const stored: Record<string, Job> = {};

async function store(name: string, tenantId: string, ageMs: number, fields: Record<string, string> = {}) {
  const job = newJob({
    id: newJobId(),
    tenantId,
    options: parseJobOptions(fields),
    now: new Date(Date.now() - ageMs),
  });
  await awsServices().jobs.create(job);
  stored[name] = job;
  return job;
}

const result: TranscriptResult = {
  transcript: 'Hello there. General greeting.',
  words: [
    { startTime: 0, endTime: 400, word: 'Hello', confidence: 0.9, speaker: 'S1', channel: 1 },
    { startTime: 410, endTime: 800, word: 'there.', confidence: 0.9, speaker: 'S1', channel: 1 },
    { startTime: 1500, endTime: 2000, word: 'General', confidence: 0.9, speaker: 'S2', channel: 2 },
    { startTime: 2010, endTime: 2600, word: 'greeting.', confidence: 0.9, speaker: 'S2', channel: 2 },
  ],
  utterances: [
    { startTime: 0, endTime: 800, text: 'Hello there.', speaker: 'S1', channel: 1 },
    { startTime: 1500, endTime: 2600, text: 'General greeting.', speaker: 'S2', channel: 2 },
  ],
  audio_duration_ms: 3000,
  engine: 'sphinx',
};

beforeAll(async () => {
  await useFreshResources();
  await store('old', 'acme', 91 * DAY_MS, { custom: 'too old' });
  await store('first', 'acme', 3 * DAY_MS, { custom: 'Order-17 call' });
  await store('second', 'acme', 2 * DAY_MS, { custom: 'refund' });
  await store('third', 'acme', 1 * DAY_MS, { custom: 'ORDER-18 follow-up', dual_channel: 'true' });
  await store('other', 'globex', 1 * DAY_MS, { custom: 'Order-19' });
  const { jobs, media } = awsServices();
  const completed = stored.second as Job;
  await media.putResult(resultKey('acme', completed.id), result);
  await jobs.claim(completed.id, testLease(60_000));
  await jobs.complete(completed.id, {
    resultKey: resultKey('acme', completed.id),
    audio_duration_ms: 3000,
  });
});

async function listOf(tenantId: string, query: Record<string, string> = {}) {
  const response = await list(apiEvent({ method: 'GET', path: '/v1-beta/transcripts', tenantId, query }));
  return {
    status: response.statusCode,
    body: JSON.parse(response.body) as JobList & { error?: { field?: string } },
  };
}

const idsOf = (page: JobList) => page.jobs.map((job) => job.id);

describe('GET /v1-beta/transcripts', () => {
  it("lists the tenant's jobs of the last 90 days, newest first, and nothing older", async () => {
    const { status, body } = await listOf('acme');
    expect(status).toBe(200);
    expect(idsOf(body)).toEqual([stored.third?.id, stored.second?.id, stored.first?.id]);
    expect(body.next_cursor).toBeNull();
    expect(body.jobs[1]).toMatchObject({
      status: 'completed',
      audio_duration_ms: 3000,
      custom: 'refund',
      tldr: false,
    });
    expect(body.jobs[0]).toMatchObject({ dual_channel: true, status: 'queued' });
    expect(body.jobs[0]).not.toHaveProperty('results');
  });

  it('pages with a cursor', async () => {
    const first = await listOf('acme', { limit: '2' });
    expect(idsOf(first.body)).toEqual([stored.third?.id, stored.second?.id]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await listOf('acme', { limit: '2', cursor: first.body.next_cursor ?? '' });
    expect(idsOf(second.body)).toEqual([stored.first?.id]);
    expect(second.body.next_cursor).toBeNull();
  });

  it('filters by status and searches id and custom without regard to case', async () => {
    expect(idsOf((await listOf('acme', { status: 'completed' })).body)).toEqual([stored.second?.id]);
    expect(idsOf((await listOf('acme', { q: 'order-1' })).body)).toEqual([
      stored.third?.id,
      stored.first?.id,
    ]);
    const idPart = stored.first?.id.slice(0, 8) ?? '';
    expect(idsOf((await listOf('acme', { q: idPart.toUpperCase() })).body)).toEqual([stored.first?.id]);
    expect(idsOf((await listOf('acme', { q: 'too old' })).body)).toEqual([]);
  });

  it("never shows another tenant's jobs, nor accepts its cursor", async () => {
    expect(idsOf((await listOf('globex')).body)).toEqual([stored.other?.id]);
    const acmeCursor = (await listOf('acme', { limit: '1' })).body.next_cursor ?? '';
    const borrowed = await listOf('globex', { cursor: acmeCursor });
    expect(borrowed.status).toBe(400);
    expect(borrowed.body.error?.field).toBe('cursor');
  });

  it('refuses a bad limit or status with a 400 naming the field', async () => {
    for (const [field, value] of [
      ['limit', '0'],
      ['limit', '500'],
      ['limit', 'many'],
      ['status', 'done'],
    ]) {
      const { status, body } = await listOf('acme', { [field as string]: value as string });
      expect(status, `${field}=${value}`).toBe(400);
      expect(body.error?.field).toBe(field);
    }
  });
});

describe('GET /v1-beta/transcript/export', () => {
  async function exported(tenantId: string, id: string, format: string) {
    return exportHandler(
      apiEvent({ method: 'GET', path: '/v1-beta/transcript/export', tenantId, query: { id, format } }),
    );
  }

  it('exports a completed transcript as text with speaker turns, SRT and WebVTT', async () => {
    const id = stored.second?.id ?? '';
    const txt = await exported('acme', id, 'txt');
    expect(txt.headers?.['content-type']).toMatch(/^text\/plain/);
    expect(txt.headers?.['content-disposition']).toBe(`attachment; filename="${id}.txt"`);
    expect(txt.body).toBe('S1: Hello there.\nS2: General greeting.\n');

    const srt = await exported('acme', id, 'srt');
    expect(srt.body).toBe(
      '1\n00:00:00,000 --> 00:00:00,800\nS1: Hello there.\n\n2\n00:00:01,500 --> 00:00:02,600\nS2: General greeting.\n',
    );
    const vtt = await exported('acme', id, 'vtt');
    expect(vtt.headers?.['content-type']).toMatch(/^text\/vtt/);
    expect(vtt.body).toBe(
      'WEBVTT\n\n00:00:00.000 --> 00:00:00.800\n<v S1>Hello there.\n\n00:00:01.500 --> 00:00:02.600\n<v S2>General greeting.\n',
    );
  });

  it('refuses a job that is not completed, an unknown format, and another tenant', async () => {
    const queued = await exported('acme', stored.first?.id ?? '', 'srt');
    expect(queued.statusCode).toBe(400);
    expect(JSON.parse(queued.body).error.message).toMatch(/queued/);
    expect((await exported('acme', stored.second?.id ?? '', 'docx')).statusCode).toBe(400);
    expect((await exported('globex', stored.second?.id ?? '', 'txt')).statusCode).toBe(404);
  });
});
