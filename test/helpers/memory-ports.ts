import { writeFile } from 'node:fs/promises';
import { type JobError, RequestError } from '#core/errors';
import { isFinished, type Job } from '#core/job';
import type {
  ApiKeyRecord,
  ApiKeyStore,
  ClaimOutcome,
  Clock,
  JobListQuery,
  JobPage,
  JobQueue,
  JobStore,
  MediaStore,
} from '#core/ports';
import type { TranscriptResult } from '#core/result';

/**
 * In-memory implementations of the domain's ports, so that core is tested in milliseconds without
 * emulators. `test/helpers/job-store-contract.ts` holds them to the same behaviour as the adapters.
 */

const copy = <T>(value: T): T => structuredClone(value);

export class InMemoryJobStore implements JobStore {
  readonly items = new Map<string, Job>();

  async create(job: Job): Promise<void> {
    if (this.items.has(job.id)) throw new Error(`Job ${job.id} exists.`);
    this.items.set(job.id, copy(job));
  }

  async get(id: string): Promise<Job | undefined> {
    const job = this.items.get(id);
    return job && copy(job);
  }

  async listByTenant(query: JobListQuery): Promise<JobPage> {
    let after: { id: string; timestamp_submitted: string } | undefined;
    if (query.cursor) {
      try {
        after = JSON.parse(Buffer.from(query.cursor, 'base64url').toString('utf8'));
      } catch {
        after = undefined;
      }
      if (!after || (after as { tenantId?: string }).tenantId !== query.tenantId) {
        throw new RequestError('invalid_request', 'The cursor is not valid.', 'cursor');
      }
    }
    const newestFirst = (a: Job, b: Job) =>
      b.timestamp_submitted.localeCompare(a.timestamp_submitted) || b.id.localeCompare(a.id);
    const matching = [...this.items.values()]
      .filter(
        (job) =>
          job.tenantId === query.tenantId &&
          job.timestamp_submitted >= query.since &&
          (!query.status || job.status === query.status) &&
          (!query.search || job.searchText.includes(query.search)),
      )
      .sort(newestFirst)
      .filter((job) => !after || newestFirst(job, after as Job) > 0);
    const jobs = matching.slice(0, query.limit).map(copy);
    const last = jobs.at(-1);
    const more = matching.length > query.limit && last;
    return {
      jobs,
      ...(more
        ? {
            cursor: Buffer.from(
              JSON.stringify({
                id: last.id,
                tenantId: last.tenantId,
                timestamp_submitted: last.timestamp_submitted,
              }),
            ).toString('base64url'),
          }
        : {}),
    };
  }

  async claim(id: string, now: Date, leaseMs: number): Promise<ClaimOutcome> {
    const job = this.items.get(id);
    if (!job) return { outcome: 'missing' };
    if (isFinished(job.status)) return { outcome: 'finished', job: copy(job) };
    if (job.status === 'processing' && (job.leaseExpiresAt ?? 0) >= now.getTime()) {
      return { outcome: 'leased', job: copy(job) };
    }
    job.status = 'processing';
    job.leaseExpiresAt = now.getTime() + leaseMs;
    return { outcome: 'claimed', job: copy(job) };
  }

  async complete(id: string, update: { resultKey: string; audio_duration_ms: number }): Promise<boolean> {
    const job = this.items.get(id);
    if (job?.status !== 'processing') return false;
    Object.assign(job, { status: 'completed', ...update });
    delete job.leaseExpiresAt;
    return true;
  }

  async fail(id: string, error: JobError): Promise<boolean> {
    const job = this.items.get(id);
    if (!job || isFinished(job.status)) return false;
    Object.assign(job, { status: 'error', error: copy(error) });
    delete job.leaseExpiresAt;
    return true;
  }

  async markHandedOff(
    id: string,
    update: { audio_duration_ms: number; now: Date; deadline: Date },
  ): Promise<boolean> {
    const job = this.items.get(id);
    if (job?.status !== 'processing') return false;
    job.handedOffAt ??= update.now.toISOString();
    job.audio_duration_ms = update.audio_duration_ms;
    job.leaseExpiresAt = update.deadline.getTime();
    return true;
  }
}

export class InMemoryMediaStore implements MediaStore {
  readonly objects = new Map<string, Buffer>();

  async putAudio(key: string, body: NodeJS.ReadableStream): Promise<{ bytes: number }> {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
    const data = Buffer.concat(chunks);
    this.objects.set(key, data);
    return { bytes: data.length };
  }

  async downloadToFile(key: string, path: string): Promise<void> {
    await writeFile(path, this.read(key));
  }

  async putResult(key: string, result: TranscriptResult): Promise<void> {
    this.objects.set(key, Buffer.from(JSON.stringify(result)));
  }

  async getResult(key: string): Promise<TranscriptResult> {
    return (await this.readJson(key)) as TranscriptResult;
  }

  async readJson(key: string): Promise<unknown> {
    return JSON.parse(this.read(key).toString('utf8'));
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(key);
  }

  private read(key: string): Buffer {
    const data = this.objects.get(key);
    if (!data) throw new Error(`No object ${key}.`);
    return data;
  }
}

/** The messages a job queue was given, in order, with their delays. */
export class InMemoryJobQueue implements JobQueue {
  readonly sent: { jobId: string; check?: number; delaySeconds: number }[] = [];

  async enqueue(jobId: string): Promise<void> {
    this.sent.push({ jobId, delaySeconds: 0 });
  }

  async scheduleCheck(jobId: string, attempt: number, delaySeconds: number): Promise<void> {
    this.sent.push({ jobId, check: attempt, delaySeconds });
  }
}

export class InMemoryApiKeyStore implements ApiKeyStore {
  readonly records = new Map<string, ApiKeyRecord>();

  async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const record = this.records.get(keyHash);
    return record && copy(record);
  }

  async put(record: ApiKeyRecord): Promise<void> {
    if (this.records.has(record.keyHash)) throw new Error('Key exists.');
    this.records.set(record.keyHash, copy(record));
  }

  async list(): Promise<ApiKeyRecord[]> {
    return [...this.records.values()].map(copy).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async revoke(keyId: string, now: Date): Promise<boolean> {
    const record = [...this.records.values()].find((candidate) => candidate.keyId === keyId);
    if (!record) return false;
    record.revokedAt ??= now.toISOString();
    return true;
  }
}

/** A clock that stands still until a test moves it. */
export function manualClock(start = new Date('2026-01-01T00:00:00.000Z')): Clock & {
  advance(ms: number): void;
} {
  let now = start.getTime();
  const clock = () => new Date(now);
  clock.advance = (ms: number) => {
    now += ms;
  };
  return clock;
}
