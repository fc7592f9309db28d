import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { decodeCursor, encodeCursor } from '#core/cursor';
import type { JobError } from '#core/errors';
import { isExpired, isFinished, type Job, type WebhookDelivery } from '#core/job';
import type {
  ApiKeyRecord,
  ApiKeyStore,
  ChunkProgress,
  ClaimOutcome,
  Clock,
  DeletedJob,
  JobListQuery,
  JobPage,
  JobQueue,
  JobStore,
  Lease,
  MediaStore,
  StoredAudio,
  WebhookAttempt,
  WebhookQueue,
  WebhookSecretStore,
} from '#core/ports';
import type { TranscriptResult } from '#core/result';

/**
 * In-memory implementations of the domain's ports, so that core is tested in milliseconds without
 * emulators. `test/helpers/job-store-contract.ts` holds them to the same behaviour as the adapters.
 */

const copy = <T>(value: T): T => structuredClone(value);

export class InMemoryJobStore implements JobStore {
  readonly items = new Map<string, Job>();
  /** Deleted jobs: gone from `items`, kept so that deleting again answers the same. */
  readonly tombstones = new Map<string, DeletedJob>();

  async create(job: Job): Promise<boolean> {
    if (this.items.has(job.id)) return false;
    this.items.set(job.id, copy(job));
    return true;
  }

  async get(id: string): Promise<Job | undefined> {
    const job = this.items.get(id);
    return job && copy(job);
  }

  async listByTenant(query: JobListQuery): Promise<JobPage> {
    const after = query.cursor ? decodeCursor(query.cursor, query.tenantId, query.since) : undefined;
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
      .filter((job) => !after || newestFirst(job, { ...job, ...after }) > 0);
    const jobs = matching.slice(0, query.limit).map(copy);
    const last = jobs.at(-1);
    const more = matching.length > query.limit && last;
    return { jobs, ...(more ? { cursor: encodeCursor(query.tenantId, last) } : {}) };
  }

  async claim(id: string, lease: Lease): Promise<ClaimOutcome> {
    const job = this.items.get(id);
    if (!job) return { outcome: 'missing' };
    if (isFinished(job.status)) return { outcome: 'finished', job: copy(job) };
    if (job.status === 'processing' && (job.leaseExpiresAt ?? 0) >= lease.now.getTime()) {
      return { outcome: 'leased', job: copy(job) };
    }
    Object.assign(job, {
      status: 'processing',
      leaseExpiresAt: lease.until.getTime(),
      leaseOwner: lease.owner,
      dueAt: lease.dueAt.toISOString(),
    });
    return { outcome: 'claimed', job: copy(job) };
  }

  async extendLease(id: string, lease: Lease): Promise<boolean> {
    const job = this.items.get(id);
    if (!this.holds(job, lease.owner)) return false;
    Object.assign(job as Job, { leaseExpiresAt: lease.until.getTime(), dueAt: lease.dueAt.toISOString() });
    return true;
  }

  async releaseLease(id: string, owner: string, dueAt?: Date): Promise<boolean> {
    const job = this.items.get(id);
    if (!job || !this.holds(job, owner)) return false;
    job.leaseExpiresAt = 0;
    delete job.leaseOwner;
    if (dueAt) job.dueAt = dueAt.toISOString();
    return true;
  }

  async recordPlan(
    id: string,
    owner: string,
    plan: { chunks: number; audio_duration_ms: number; dueAt: Date },
  ): Promise<number | undefined> {
    const job = this.items.get(id);
    if (job?.status !== 'processing' || job.leaseOwner !== owner) return undefined;
    Object.assign(job, {
      chunksTotal: plan.chunks,
      audio_duration_ms: plan.audio_duration_ms,
      dueAt: plan.dueAt.toISOString(),
      leaseExpiresAt: 0,
    });
    delete job.leaseOwner;
    return job.chunksDone?.length ?? 0;
  }

  async markChunkDone(id: string, index: number, dueAt: Date): Promise<ChunkProgress | undefined> {
    const job = this.items.get(id);
    if (job?.status !== 'processing') return undefined;
    job.chunksDone = [...new Set([...(job.chunksDone ?? []), index])].sort((a, b) => a - b);
    job.dueAt = dueAt.toISOString();
    return {
      done: job.chunksDone.length,
      ...(job.chunksTotal !== undefined ? { total: job.chunksTotal } : {}),
    };
  }

  async complete(id: string, update: { resultKey: string; audio_duration_ms: number }): Promise<boolean> {
    const job = this.items.get(id);
    if (job?.status !== 'processing') return false;
    Object.assign(job, { status: 'completed', ...update });
    this.finished(job);
    return true;
  }

  async fail(id: string, error: JobError): Promise<boolean> {
    const job = this.items.get(id);
    if (!job || isFinished(job.status)) return false;
    Object.assign(job, { status: 'error', error: copy(error) });
    this.finished(job);
    return true;
  }

  async markHandedOff(
    id: string,
    update: { audio_duration_ms: number; now: Date; deadline: Date; dueAt: Date },
  ): Promise<boolean> {
    const job = this.items.get(id);
    if (job?.status !== 'processing') return false;
    job.handedOffAt ??= update.now.toISOString();
    job.audio_duration_ms = update.audio_duration_ms;
    job.leaseExpiresAt = update.deadline.getTime();
    job.dueAt = update.dueAt.toISOString();
    return true;
  }

  async setDue(id: string, dueAt: Date, ifDueAt?: string): Promise<boolean> {
    const job = this.items.get(id);
    if (!job || isFinished(job.status) || (ifDueAt !== undefined && job.dueAt !== ifDueAt)) return false;
    job.dueAt = dueAt.toISOString();
    return true;
  }

  async listDue(now: Date, limit: number): Promise<Job[]> {
    return [...this.items.values()]
      .filter((job) => !isFinished(job.status) && job.dueAt !== undefined && job.dueAt <= now.toISOString())
      .sort((a, b) => (a.dueAt ?? '').localeCompare(b.dueAt ?? ''))
      .slice(0, limit)
      .map(copy);
  }

  async countActive(tenantId: string, atMost: number): Promise<number> {
    const active = [...this.items.values()].filter(
      (job) => job.tenantId === tenantId && !isFinished(job.status),
    );
    return Math.min(atMost, active.length);
  }

  async markDeleted(id: string, tenantId: string, now: Date): Promise<DeletedJob | undefined> {
    const tombstone = this.tombstones.get(id);
    if (tombstone) return tombstone.tenantId === tenantId ? copy(tombstone) : undefined;
    const job = this.items.get(id);
    if (job?.tenantId !== tenantId) return undefined;
    const deleted = { id, tenantId, deletedAt: now.toISOString(), audioKey: job.audioKey };
    this.items.delete(id);
    this.tombstones.set(id, deleted);
    return copy(deleted);
  }

  async recordWebhookAttempt(id: string, delivery: WebhookDelivery): Promise<boolean> {
    const job = this.items.get(id);
    if (!job || !isFinished(job.status) || (job.webhook?.attempts ?? 0) >= delivery.attempts) return false;
    job.webhook = copy(delivery);
    return true;
  }

  async listExpired(now: Date, limit: number): Promise<Job[]> {
    return [...this.items.values()]
      .filter((job) => job.options.retention_days !== undefined && isExpired(job, now))
      .sort((a, b) => a.expiresAt - b.expiresAt)
      .slice(0, limit)
      .map(copy);
  }

  async removeExpired(id: string, now: Date): Promise<boolean> {
    const job = this.items.get(id);
    if (!job || !isExpired(job, now)) return false;
    this.items.delete(id);
    return true;
  }

  private holds(job: Job | undefined, owner: string): boolean {
    return job?.status === 'processing' && job.leaseOwner === owner && !job.handedOffAt;
  }

  private finished(job: Job): void {
    delete job.leaseExpiresAt;
    delete job.leaseOwner;
    delete job.dueAt;
    delete job.chunksDone;
  }
}

export class InMemoryMediaStore implements MediaStore {
  readonly objects = new Map<string, Buffer>();
  readonly tags = new Map<string, Record<string, string>>();

  async putAudio(key: string, body: NodeJS.ReadableStream): Promise<StoredAudio> {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
    const data = Buffer.concat(chunks);
    this.objects.set(key, data);
    return { bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
  }

  async downloadToFile(key: string, path: string): Promise<void> {
    await writeFile(path, this.read(key));
  }

  async putFile(key: string, path: string): Promise<void> {
    this.objects.set(key, await readFile(path));
  }

  async putJson(key: string, value: unknown): Promise<void> {
    this.objects.set(key, Buffer.from(JSON.stringify(value)));
  }

  /** Not a URL anyone can use: transcribers in tests of core read `objects` themselves. */
  async presignDownload(key: string): Promise<string> {
    this.read(key);
    return `memory://${key}`;
  }

  async describe(key: string): Promise<{ bytes: number } | undefined> {
    const data = this.objects.get(key);
    return data && { bytes: data.length };
  }

  async getTags(key: string): Promise<Record<string, string>> {
    return { ...(this.tags.get(key) ?? {}) };
  }

  async setTags(key: string, tags: Record<string, string>): Promise<void> {
    this.tags.set(key, { ...tags });
  }

  /** Not a URL anyone can use: tests of core put the uploaded bytes in `objects` themselves. */
  async presignUpload(
    key: string,
    upload: { bytes: number; contentType: string; tags: Record<string, string> },
  ): Promise<{ url: string; headers: Record<string, string> }> {
    return {
      url: `memory://${key}`,
      headers: { 'content-length': String(upload.bytes), 'content-type': upload.contentType },
    };
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
  readonly sent: { jobId: string; check?: number; chunk?: number; delaySeconds: number }[] = [];

  async enqueue(jobId: string): Promise<void> {
    this.sent.push({ jobId, delaySeconds: 0 });
  }

  async enqueueChunks(jobId: string, indexes: number[]): Promise<void> {
    for (const chunk of indexes) this.sent.push({ jobId, chunk, delaySeconds: 0 });
  }

  async scheduleCheck(jobId: string, attempt: number, delaySeconds: number): Promise<void> {
    this.sent.push({ jobId, check: attempt, delaySeconds });
  }
}

/** The webhook attempts a queue was given, in order, with their delays. */
export class InMemoryWebhookQueue implements WebhookQueue {
  readonly sent: { attempt: WebhookAttempt; delaySeconds: number }[] = [];

  async send(attempt: WebhookAttempt, delaySeconds: number): Promise<void> {
    this.sent.push({ attempt: copy(attempt), delaySeconds });
  }
}

export class InMemoryWebhookSecretStore implements WebhookSecretStore {
  readonly tenants = new Map<string, { secret: string; previous?: string; previousUntil?: Date }>();

  async signingSecrets(tenantId: string, now: Date): Promise<string[]> {
    const tenant = this.tenants.get(tenantId);
    if (!tenant) return [];
    const previousValid = tenant.previous && tenant.previousUntil && tenant.previousUntil > now;
    return previousValid && tenant.previous ? [tenant.secret, tenant.previous] : [tenant.secret];
  }

  async create(tenantId: string, secret: string): Promise<boolean> {
    if (this.tenants.has(tenantId)) return false;
    this.tenants.set(tenantId, { secret });
    return true;
  }

  async rotate(tenantId: string, secret: string, _now: Date, graceUntil: Date): Promise<boolean> {
    const tenant = this.tenants.get(tenantId);
    if (!tenant) return false;
    this.tenants.set(tenantId, { secret, previous: tenant.secret, previousUntil: graceUntil });
    return true;
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

/** A lease for tests: held by `owner` from `now` for `ms`, due when it ends. */
export function testLease(ms: number, now = new Date(), owner = 'test-worker'): Lease {
  const until = new Date(now.getTime() + ms);
  return { owner, now, until, dueAt: until };
}
