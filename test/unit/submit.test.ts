import { Readable } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { audioKey } from '#commons/contract';
import { RequestError } from '#core/errors';
import { parseIdempotencyKey } from '#core/idempotency';
import { newJobId } from '#core/job';
import { ensureCapacity, type Submission, submissionFingerprint, submitJob } from '#core/submit';
import {
  InMemoryJobQueue,
  InMemoryJobStore,
  InMemoryMediaStore,
  manualClock,
} from '#test/helpers/memory-ports';

let jobs: InMemoryJobStore;
let media: InMemoryMediaStore;
let queue: InMemoryJobQueue;
const clock = manualClock();

async function submission(fields: Record<string, string>, audio = Buffer.from('audio')): Promise<Submission> {
  const id = newJobId();
  const key = audioKey('acme', id);
  const { bytes } = await media.putAudio(key, Readable.from([audio]));
  return { id, tenantId: 'acme', fields, audio: { key, bytes }, now: clock() };
}

beforeEach(() => {
  jobs = new InMemoryJobStore();
  media = new InMemoryMediaStore();
  queue = new InMemoryJobQueue();
});

describe('submitJob', () => {
  it('records a queued job and sends its start message', async () => {
    const job = await submitJob({ jobs, media, queue }, await submission({ custom: 'x' }));
    expect(await jobs.get(job.id)).toMatchObject({ status: 'queued', options: { custom: 'x' } });
    expect(queue.sent).toEqual([{ jobId: job.id, delaySeconds: 0 }]);
  });

  it('removes the stored audio of a refused submission and records nothing', async () => {
    const refused = await submission({ punctuate: 'maybe' });
    await expect(submitJob({ jobs, media, queue }, refused)).rejects.toMatchObject({
      code: 'invalid_option',
      field: 'punctuate',
    });
    expect(media.objects.size).toBe(0);
    expect(jobs.items.size).toBe(0);
    expect(queue.sent).toEqual([]);
  });

  it('refuses an empty file and a form problem found while parsing, as the problem says', async () => {
    await expect(
      submitJob({ jobs, media, queue }, await submission({}, Buffer.alloc(0))),
    ).rejects.toMatchObject({
      code: 'missing_audio',
    });
    const problem = new RequestError('invalid_request', 'The form has more than 32 parts.');
    await expect(submitJob({ jobs, media, queue }, { ...(await submission({})), problem })).rejects.toBe(
      problem,
    );
    expect(media.objects.size).toBe(0);
  });

  it('takes an audio_url of a public https host, and outside local mode refuses one the outbound guard would', async () => {
    const byAddress = (audio_url: string) => ({
      id: newJobId(),
      tenantId: 'acme',
      fields: { audio_url },
      now: clock(),
    });
    const job = await submitJob({ jobs, media, queue }, byAddress(' https://media.example.net/a.mp3 '));
    expect(job.audioUrl).toBe('https://media.example.net/a.mp3');
    for (const address of [
      'http://media.example.net/a.mp3',
      'https://localhost/a.mp3',
      'https://127.0.0.1/a.mp3',
      'https://0x7f.1/a.mp3',
      'https://[::1]/a.mp3',
      'https://[::ffff:10.0.0.1]/a.mp3',
      'https://169.254.169.254/latest/meta-data/',
      'https://10.1.2.3/a.mp3',
      'https://100.64.0.1/a.mp3',
      'https://0.0.0.0/a.mp3',
      'https://user:secret@media.example.net/a.mp3',
      `https://media.example.net/${'a'.repeat(2048)}`,
      'not an address',
    ]) {
      await expect(submitJob({ jobs, media, queue }, byAddress(address)), address).rejects.toMatchObject({
        code: 'invalid_option',
        field: 'audio_url',
      });
    }
    const local = await submitJob({ jobs, media, queue }, byAddress('http://10.1.2.3:8000/a.wav'), {
      localMode: true,
    });
    expect(local.audioUrl).toBe('http://10.1.2.3:8000/a.wav');
  });

  it('accepts a job whose start message could not be sent: it stays queued, for the sweeper to send', async () => {
    const failingQueue = {
      enqueue: async () => {
        throw new Error('queue unavailable');
      },
      enqueueChunks: async () => undefined,
      scheduleCheck: async () => undefined,
    };
    const input = await submission({});
    const job = await submitJob({ jobs, media, queue: failingQueue }, input);
    expect(await jobs.get(job.id)).toMatchObject({ status: 'queued', dueAt: expect.any(String) });
    expect((await jobs.listDue(new Date(Date.parse(job.dueAt ?? '') + 1), 10)).map((due) => due.id)).toEqual([
      job.id,
    ]);
  });

  it("refuses a tenant at its cap of active jobs with a retry delay, and counts only that tenant's", async () => {
    for (let i = 0; i < 3; i++) await submitJob({ jobs, media, queue }, await submission({}));
    await expect(ensureCapacity(jobs, 'acme', 3)).rejects.toMatchObject({
      code: 'rate_limited',
      retryAfterSeconds: expect.any(Number),
    });
    await expect(ensureCapacity(jobs, 'acme', 4)).resolves.toBeUndefined();
    await expect(ensureCapacity(jobs, 'globex', 1)).resolves.toBeUndefined();
  });
});

describe('what makes two submissions the same', () => {
  it('is their text parts in any order and their audio bytes', () => {
    const audio = 'a'.repeat(64);
    const same = submissionFingerprint({ custom: 'x', punctuate: 'false' }, audio);
    expect(submissionFingerprint({ punctuate: 'false', custom: 'x' }, audio)).toBe(same);
    for (const other of [
      submissionFingerprint({ custom: 'x', punctuate: 'true' }, audio),
      submissionFingerprint({ custom: 'x' }, audio),
      submissionFingerprint({ custom: 'x', punctuate: 'false' }, 'b'.repeat(64)),
      submissionFingerprint({ custom: 'x', punctuate: 'false' }, undefined),
      // A value that contains what would be a separator does not make another split collide.
      submissionFingerprint({ custom: 'x","punctuate', '': 'false' }, audio),
    ]) {
      expect(other).not.toBe(same);
    }
  });

  it('takes an Idempotency-Key of 1 to 255 visible ASCII characters, and nothing else', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
    expect(parseIdempotencyKey('0b9f0c1e-2a4b-4c6d-8e0f-123456789abc')).toBe(
      '0b9f0c1e-2a4b-4c6d-8e0f-123456789abc',
    );
    expect(parseIdempotencyKey('k'.repeat(255))).toHaveLength(255);
    for (const key of ['', 'k'.repeat(256), 'with space', 'tab\t', 'ünï', 'line\nbreak']) {
      expect(() => parseIdempotencyKey(key), JSON.stringify(key)).toThrow(
        expect.objectContaining({ code: 'invalid_request', field: 'Idempotency-Key' }),
      );
    }
  });
});
