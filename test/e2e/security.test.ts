import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { ENV } from '#commons/contract';
import { LOCAL_ENV } from '#local/settings';
import { type RuntimeProcess, startRuntimeProcess } from '#test/helpers/runtime-process';
import { findSample, samplePath } from '#test/helpers/samples';

/**
 * The local runtime as an attacker and an auditor see it: full submit, poll, list and export cycles of
 * two tenants at the deployed log level and at DEBUG, with every log line searched for the keys, their
 * hashes and query strings; and every route tried with one tenant's key on the other's jobs.
 */

const KEYS = { acme: 'acme-key-0123456789abcdef', globex: 'globex-key-0123456789abcdef' };
const sample = findSample((entry) => entry.kind === 'utterance' && (entry.duration_s ?? 0) > 3);
const runtimes: RuntimeProcess[] = [];

afterAll(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.stop()));
});

async function fullCycle(runtime: RuntimeProcess, key: string) {
  const submitted = await runtime.submit(await readFile(samplePath(sample)), { custom: 'audit' }, key);
  expect(submitted.status).toBe(200);
  const id = submitted.body.id ?? '';
  expect((await runtime.finished(id, key)).status).toBe('completed');
  const listed = await fetch(runtime.url('/v1-beta/transcripts', { q: 'audit' }, key));
  expect(listed.status).toBe(200);
  const exported = await fetch(runtime.url('/v1-beta/transcript/export', { id, format: 'srt' }, key));
  expect(exported.status).toBe(200);
  return id;
}

describe.each(['INFO', 'DEBUG'])('the local runtime logging at %s', (level) => {
  it('never writes a key, its hash or a query string into a log line', async () => {
    const runtime = await startRuntimeProcess(KEYS.acme, {
      [ENV.logLevel]: level,
      [LOCAL_ENV.apiKeys]: `${KEYS.globex}=globex`,
    });
    runtimes.push(runtime);
    await fullCycle(runtime, KEYS.acme);
    await fullCycle(runtime, KEYS.globex);
    await fetch(runtime.url('/v1-beta/transcript/status', { id: 'nope' }, 'wrong-key-0000000000000'));
    const banner = 'Press Ctrl-C to stop.';
    const output = runtime.output();
    const logs = output.slice(output.indexOf(banner) + banner.length);
    expect(logs).toContain('GET /v1-beta/transcript/status 200');
    for (const secret of Object.values(KEYS)) {
      expect(logs).not.toContain(secret);
      expect(logs).not.toContain(createHash('sha256').update(secret).digest('hex'));
    }
    expect(logs).not.toMatch(/x-api-key=/i);
    expect(logs).not.toMatch(/\/v1-beta\/[a-z/]+\?/);
  });
});

describe('tenant isolation from outside', () => {
  it("shows one tenant none of another's jobs, on any route, with any cursor", async () => {
    const runtime = await startRuntimeProcess(KEYS.acme, { [LOCAL_ENV.apiKeys]: `${KEYS.globex}=globex` });
    runtimes.push(runtime);
    const acmeJob = await fullCycle(runtime, KEYS.acme);
    for (const [path, query] of [
      ['/v1-beta/transcript/status', { id: acmeJob }],
      ['/v1-beta/transcript/export', { id: acmeJob, format: 'txt' }],
      ['/v1-beta/transcript/audio', { id: acmeJob }],
    ] as const) {
      const response = await fetch(runtime.url(path, query, KEYS.globex));
      const body = (await response.json()) as { error?: { code: string } };
      expect(response.status, path).toBe(404);
      expect(body.error?.code).toBe('not_found');
    }
    const globexList = (await (await fetch(runtime.url('/v1-beta/transcripts', {}, KEYS.globex))).json()) as {
      jobs: { id: string }[];
    };
    expect(globexList.jobs.map((job) => job.id)).not.toContain(acmeJob);

    // A cursor from acme's list is refused on globex's.
    await fullCycle(runtime, KEYS.acme);
    const acmePage = (await (
      await fetch(runtime.url('/v1-beta/transcripts', { limit: '1' }, KEYS.acme))
    ).json()) as {
      next_cursor: string | null;
    };
    expect(acmePage.next_cursor).toBeTruthy();
    const foreign = await fetch(
      runtime.url('/v1-beta/transcripts', { limit: '1', cursor: acmePage.next_cursor ?? '' }, KEYS.globex),
    );
    expect(foreign.status).toBe(400);
  });

  it('answers a tenant over its cap of active jobs with 429 and Retry-After', async () => {
    const runtime = await startRuntimeProcess(KEYS.acme, {
      [ENV.maxActiveJobsPerTenant]: '1',
      [LOCAL_ENV.workerConcurrency]: '1',
    });
    runtimes.push(runtime);
    const audio = await readFile(samplePath(sample));
    const first = await runtime.submit(audio);
    expect(first.status).toBe(200);
    const second = await fetch(runtime.url('/v1-beta/transcript'), {
      method: 'POST',
      body: (() => {
        const form = new FormData();
        form.append('audio', new Blob([audio]), 'a.wav');
        return form;
      })(),
    });
    expect(second.status).toBe(429);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
    // Once the first has finished, the tenant may submit again.
    await runtime.finished(first.body.id ?? '');
    expect((await runtime.submit(audio)).status).toBe(200);
  });
});
