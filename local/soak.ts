import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ENV } from '#commons/contract';
import { percentile } from './evaluation/metrics.ts';
import { readLocalSettings } from './settings.ts';

const usage = `Usage: npm run soak -- [--jobs N] [--concurrency C] [--samples DIR] [--url URL --key KEY] [--minutes M]

Submits N short real recordings with at most C clients at once, polls each job to its end, then reads
the tenant's list back, and prints: submitted, completed, errored, lost (never finished, or missing from
the list), duplicated (listed more than once, or listed without having been submitted), and the p50/p99
latency of submissions and status requests. Loopback only; stops by itself after M minutes at most.
Exits 1 when a job is lost or duplicated.
  --url, --key   a running service on this machine (npm start prints both); without them one is started`;

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '4' },
    samples: { type: 'string', default: '../shared/samples' },
    url: { type: 'string' },
    key: { type: 'string' },
    minutes: { type: 'string', default: '15' },
    help: { type: 'boolean' },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const jobs = Math.max(1, Math.min(10_000, Number(values.jobs) || 0));
const concurrency = Math.max(1, Math.min(64, Number(values.concurrency) || 0));
const deadline = Date.now() + Math.max(1, Number(values.minutes) || 15) * 60_000;

const status = z.object({
  id: z.string(),
  status: z.string(),
  error: z.object({ code: z.string() }).optional(),
});
const list = z.object({ jobs: z.array(z.object({ id: z.string() })), next_cursor: z.string().nullable() });

async function main(): Promise<number> {
  let service: { url: string; apiKey: string; stop(): Promise<void> };
  if (values.url && values.key) {
    const host = new URL(values.url).hostname;
    if (!['localhost', '127.0.0.1', '[::1]', '::1'].includes(host)) {
      console.error('The soak runs against this machine only (localhost).');
      return 2;
    }
    service = { url: values.url.replace(/\/$/, ''), apiKey: values.key, stop: async () => undefined };
  } else {
    process.env[ENV.logLevel] ??= 'ERROR';
    const { startLocalRuntime } = await import('./runtime.ts');
    service = await startLocalRuntime({ ...readLocalSettings(), port: 0 }, () => undefined);
  }

  const directory = resolve(values.samples);
  const manifest = z
    .array(z.object({ file: z.string(), kind: z.string(), duration_s: z.number().nullish() }))
    .parse(JSON.parse(await readFile(join(directory, 'manifest.json'), 'utf8')));
  const short = manifest.filter((entry) => entry.kind === 'utterance' && (entry.duration_s ?? 99) < 5);
  const audio = await Promise.all(short.map((entry) => readFile(join(directory, entry.file))));
  if (audio.length === 0) throw new Error('No short utterances in the samples.');

  // Marks this run's jobs, so that a service with earlier jobs is read back for this run alone.
  const run = `soak-${randomUUID()}`;
  const address = (path: string, query: Record<string, string> = {}) =>
    `${service.url}${path}?${new URLSearchParams({ 'x-api-key': service.apiKey, ...query })}`;
  const submitLatency: number[] = [];
  const statusLatency: number[] = [];
  const submitted: string[] = [];
  const outcomes = new Map<string, string>();
  let refusedForCapacity = 0;
  let next = 0;

  const client = async () => {
    while (next < jobs && Date.now() < deadline) {
      const index = next++;
      const form = new FormData();
      form.append(
        'audio',
        new Blob([new Uint8Array(audio[index % audio.length] ?? Buffer.alloc(0))]),
        'soak.wav',
      );
      form.append('custom', `${run} ${index}`);
      let id: string | undefined;
      while (!id && Date.now() < deadline) {
        const started = performance.now();
        const response = await fetch(address('/v1-beta/transcript'), { method: 'POST', body: form });
        submitLatency.push(performance.now() - started);
        if (response.status === 429) {
          refusedForCapacity += 1;
          await response.body?.cancel();
          const wait = Math.min(30, Number(response.headers.get('retry-after')) || 5);
          await new Promise((done) => setTimeout(done, wait * 1000));
          continue;
        }
        if (!response.ok) throw new Error(`Submission refused: ${response.status} ${await response.text()}`);
        id = status.parse(await response.json()).id;
      }
      if (!id) return;
      submitted.push(id);
      while (Date.now() < deadline) {
        const started = performance.now();
        const response = await fetch(address('/v1-beta/transcript/status', { id }));
        statusLatency.push(performance.now() - started);
        const record = status.parse(await response.json());
        if (record.status === 'completed' || record.status === 'error') {
          outcomes.set(id, record.status === 'error' ? `error:${record.error?.code}` : 'completed');
          break;
        }
        await new Promise((done) => setTimeout(done, 250));
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: concurrency }, client));
    const listed: string[] = [];
    let cursor: string | null = null;
    do {
      const response = await fetch(
        address('/v1-beta/transcripts', { q: run, limit: '100', ...(cursor ? { cursor } : {}) }),
      );
      const page = list.parse(await response.json());
      listed.push(...page.jobs.map((job) => job.id));
      cursor = page.next_cursor;
    } while (cursor);

    const expected = new Set(submitted);
    const seen = new Set<string>();
    let duplicated = 0;
    for (const id of listed) {
      if (seen.has(id) || !expected.has(id)) duplicated += 1;
      seen.add(id);
    }
    const lost =
      submitted.filter((id) => !outcomes.has(id) || !seen.has(id)).length + (jobs - submitted.length);
    const completed = [...outcomes.values()].filter((outcome) => outcome === 'completed').length;
    const errored = outcomes.size - completed;
    const ms = (value: number) => `${Math.round(value)} ms`;
    console.log(`submitted ${submitted.length} of ${jobs} (${concurrency} clients at once)`);
    console.log(`completed ${completed}`);
    console.log(`errored ${errored}${errored ? ` (${[...new Set(outcomes.values())].join(', ')})` : ''}`);
    console.log(`lost ${lost}`);
    console.log(`duplicated ${duplicated}`);
    console.log(`refused for capacity, then retried ${refusedForCapacity}`);
    console.log(`submit p50 ${ms(percentile(submitLatency, 50))} p99 ${ms(percentile(submitLatency, 99))}`);
    console.log(`status p50 ${ms(percentile(statusLatency, 50))} p99 ${ms(percentile(statusLatency, 99))}`);
    return lost === 0 && duplicated === 0 ? 0 : 1;
  } finally {
    await service.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
