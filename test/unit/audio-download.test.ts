import { beforeEach, describe, expect, it } from 'vitest';
import { AUDIO_DOWNLOAD_URL_EXPIRY_SECONDS, uploadKey } from '#commons/contract';
import { getAudioDownload } from '#core/audio-download';
import { deleteJob } from '#core/delete-job';
import { newJob, newJobId } from '#core/job';
import { parseJobOptions } from '#core/options';
import { InMemoryJobStore, InMemoryMediaStore, manualClock, testLease } from '#test/helpers/memory-ports';

let jobs: InMemoryJobStore;
let media: InMemoryMediaStore;
let clock: ReturnType<typeof manualClock>;

beforeEach(() => {
  jobs = new InMemoryJobStore();
  media = new InMemoryMediaStore();
  clock = manualClock();
});

async function storedJob(
  tenantId: string,
  input: { audioKey?: string; audioUrl?: string; stored?: boolean } = {},
) {
  const job = newJob({
    id: newJobId(),
    tenantId,
    options: parseJobOptions({ retention_days: '3' }),
    now: clock(),
    ...(input.audioKey ? { audioKey: input.audioKey } : {}),
    ...(input.audioUrl ? { audioUrl: input.audioUrl } : {}),
  });
  await jobs.create(job);
  if (input.stored ?? true) media.objects.set(job.audioKey, Buffer.from('RIFF'));
  return job;
}

describe("a job's audio by presigned GET", () => {
  it('is a short-lived URL of the audio as stored, a direct submission or a presigned upload alike', async () => {
    const direct = await storedJob('acme');
    expect(await getAudioDownload({ jobs, media }, 'acme', direct.id, clock())).toEqual({
      download_url: `memory://${direct.audioKey}`,
      expires_at: new Date(clock().getTime() + AUDIO_DOWNLOAD_URL_EXPIRY_SECONDS * 1000).toISOString(),
    });
    const uploaded = await storedJob('acme', { audioKey: uploadKey('acme', 'up_x_y') });
    expect((await getAudioDownload({ jobs, media }, 'acme', uploaded.id, clock())).download_url).toBe(
      `memory://${uploadKey('acme', 'up_x_y')}`,
    );
  });

  it("is a 404 for an unknown id, a forged long one, another tenant's job, a deleted one and one past its retention", async () => {
    const job = await storedJob('acme');
    const missing = { code: 'not_found', field: 'id' };
    await expect(getAudioDownload({ jobs, media }, 'acme', newJobId(), clock())).rejects.toMatchObject(
      missing,
    );
    await expect(
      getAudioDownload({ jobs, media }, 'acme', 'x'.repeat(10_000), clock()),
    ).rejects.toMatchObject(missing);
    await expect(getAudioDownload({ jobs, media }, 'globex', job.id, clock())).rejects.toMatchObject(missing);
    const later = new Date(clock().getTime() + 3 * 86_400_000);
    await expect(getAudioDownload({ jobs, media }, 'acme', job.id, later)).rejects.toMatchObject(missing);
    await deleteJob({ jobs, media, clock }, 'acme', job.id);
    await expect(getAudioDownload({ jobs, media }, 'acme', job.id, clock())).rejects.toMatchObject(missing);
  });

  it('is a 404 that says why when the audio is not stored: an audio_url not fetched yet, or whose fetch failed', async () => {
    const pending = await storedJob('acme', { audioUrl: 'https://example.com/a.mp3', stored: false });
    await expect(getAudioDownload({ jobs, media }, 'acme', pending.id, clock())).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/not fetched from its audio_url yet/),
    });
    await jobs.claim(pending.id, testLease(1000, clock()));
    await jobs.fail(pending.id, { code: 'download_failed', message: 'gone' });
    await expect(getAudioDownload({ jobs, media }, 'acme', pending.id, clock())).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/has no stored audio/),
    });
  });
});
