import type { JobError } from './errors.ts';
import type { Job, JobStatus, WebhookDelivery } from './job.ts';
import type { JobOptions } from './options.ts';
import type { TranscriptResult } from './result.ts';

/** What time it is; injected so that leases, deadlines and retention can be tested without waiting. */
export type Clock = () => Date;

/** Storage of jobs (DynamoDB on AWS). Every status change is conditional on the current status. */
export interface JobStore {
  /** Records a new job; false when a job with its id exists already. */
  create(job: Job): Promise<boolean>;
  get(id: string): Promise<Job | undefined>;
  /** A tenant's jobs, newest first. Throws RequestError for a cursor of another query or tenant. */
  listByTenant(query: JobListQuery): Promise<JobPage>;
  /**
   * Moves a queued job, or a processing job whose lease has run out by `lease.now`, to processing with
   * the lease. Answers what it found when it could not.
   */
  claim(id: string, lease: Lease): Promise<ClaimOutcome>;
  /** Moves the lease of `owner` (and the due time) on; false when the job is no longer its to hold. */
  extendLease(id: string, lease: Lease): Promise<boolean>;
  /**
   * Ends the lease of `owner` at once, so that a retry may claim the job without waiting; with `dueAt`,
   * the job is next due then rather than when the lease would have run out.
   */
  releaseLease(id: string, owner: string, dueAt?: Date): Promise<boolean>;
  /** processing → completed; false when the job was no longer processing. */
  complete(id: string, update: { resultKey: string; audio_duration_ms: number }): Promise<boolean>;
  /** queued|processing → error; false when the job had already finished. */
  fail(id: string, error: JobError): Promise<boolean>;
  /**
   * Records that an asynchronous transcriber has the job: the lease runs to `deadline`, so that a
   * redelivered start message leaves the job alone, and the job is due at `dueAt` (its next check).
   */
  markHandedOff(
    id: string,
    update: { audio_duration_ms: number; now: Date; deadline: Date; dueAt: Date },
  ): Promise<boolean>;
  /**
   * Records that the processing job `owner` holds was cut into `chunks` chunks (each already its own
   * message) and gives up the lease: the chunks' workers carry the job on, and it is due at `dueAt` unless
   * a chunk finishes. Answers how many distinct chunks were done by then (chunks are queued as they are
   * cut, so all may be), or undefined when the job is no longer processing or no longer the owner's.
   */
  recordPlan(
    id: string,
    owner: string,
    plan: { chunks: number; audio_duration_ms: number; dueAt: Date },
  ): Promise<number | undefined>;
  /**
   * Records chunk `index` of a processing job as done (a second time changes nothing) and moves its due
   * time on; answers how many distinct chunks are done and, once the plan is recorded, of how many, or
   * undefined when the job is no longer processing. The plan and the chunks are recorded one after the
   * other, so exactly one of the calls sees every chunk done.
   */
  markChunkDone(id: string, index: number, dueAt: Date): Promise<ChunkProgress | undefined>;
  /**
   * Moves the due time of an active job; with `ifDueAt`, only if nobody moved it since it was read, so
   * that one sweep acts on a job once. False when the condition did not hold.
   */
  setDue(id: string, dueAt: Date, ifDueAt?: string): Promise<boolean>;
  /** Active (queued or processing) jobs whose due time has passed, earliest first. */
  listDue(now: Date, limit: number): Promise<Job[]>;
  /** How many jobs of a tenant are active, counting up to `atMost` (enough to compare with a cap). */
  countActive(tenantId: string, atMost: number): Promise<number>;
  /**
   * Replaces a tenant's job with a tombstone (id, tenant, deletion time, the audio's key): its options,
   * results and indexes are gone, every later status change fails, and `get` answers undefined. A job
   * already deleted answers its tombstone; an unknown job or another tenant's, undefined.
   */
  markDeleted(id: string, tenantId: string, now: Date): Promise<DeletedJob | undefined>;
  /**
   * Records a webhook attempt on a finished job, unless one as late (as many attempts) is recorded
   * already; false then, or when the job is gone.
   */
  recordWebhookAttempt(id: string, delivery: WebhookDelivery): Promise<boolean>;
  /** Jobs kept for fewer than 90 days whose retention has run out, earliest first. */
  listExpired(now: Date, limit: number): Promise<Job[]>;
  /** Removes a job whose retention has run out; false when it is gone or was not expired at `now`. */
  removeExpired(id: string, now: Date): Promise<boolean>;
}

/** What remains of a deleted job, so that deleting it again answers the same. */
/**
 * The store with some of its methods replaced and the rest its own: how decorators (webhook delivery,
 * job metrics) wrap `complete` and `fail` without restating every other method.
 */
export function overrideJobStore(jobs: JobStore, overrides: Partial<JobStore>): JobStore {
  return new Proxy(jobs, {
    get(target, name) {
      if (Object.hasOwn(overrides, name)) return overrides[name as keyof JobStore];
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

export interface DeletedJob {
  id: string;
  tenantId: string;
  deletedAt: string;
  audioKey: string;
}

/** A worker's hold on a job: only `owner` extends or releases it; the job is due when it would be over. */
export interface Lease {
  owner: string;
  now: Date;
  until: Date;
  dueAt: Date;
}

export interface JobListQuery {
  tenantId: string;
  /** ISO timestamp: only jobs submitted at or after it. */
  since: string;
  limit: number;
  /** Opaque position from a previous page. */
  cursor?: string;
  status?: JobStatus;
  /** Lower-case text that the job's id or custom value contains. */
  search?: string;
}

export interface JobPage {
  jobs: Job[];
  /** Present when more jobs may follow. */
  cursor?: string;
}

export type ClaimOutcome =
  | { outcome: 'claimed'; job: Job }
  | { outcome: 'missing' }
  | { outcome: 'finished'; job: Job }
  | { outcome: 'leased'; job: Job };

/** The bucket that holds audio and results (S3 on AWS). */
export interface MediaStore {
  /** Streams audio into the store and answers the number of bytes written and their SHA-256 (hex). */
  putAudio(key: string, body: NodeJS.ReadableStream, contentType?: string): Promise<StoredAudio>;
  downloadToFile(key: string, path: string): Promise<void>;
  /** Stores a local file, streamed. */
  putFile(key: string, path: string): Promise<void>;
  putJson(key: string, value: unknown): Promise<void>;
  /** A URL that lets this service's own processes GET the object until it expires (ffmpeg reads audio through it). */
  presignDownload(key: string, expiresInSeconds: number): Promise<string>;
  /** The size of an object, or undefined when there is none. */
  describe(key: string): Promise<{ bytes: number } | undefined>;
  getTags(key: string): Promise<Record<string, string>>;
  setTags(key: string, tags: Record<string, string>): Promise<void>;
  /**
   * A URL that lets a client PUT exactly `bytes` bytes at `key` until it expires, and the headers the
   * client must send with it (they are signed into the URL).
   */
  presignUpload(
    key: string,
    upload: { bytes: number; contentType: string; tags: Record<string, string>; expiresInSeconds: number },
  ): Promise<{ url: string; headers: Record<string, string> }>;
  putResult(key: string, result: TranscriptResult): Promise<void>;
  getResult(key: string): Promise<TranscriptResult>;
  /** A JSON document another service wrote into the bucket (Amazon Transcribe's output). */
  readJson(key: string): Promise<unknown>;
  delete(key: string): Promise<void>;
}

export interface StoredAudio {
  bytes: number;
  sha256: string;
}

/** The queue of jobs to process (SQS on AWS). */
export interface JobQueue {
  enqueue(jobId: string): Promise<void>;
  /** A message per chunk of a job, for any worker to transcribe. */
  enqueueChunks(jobId: string, indexes: number[]): Promise<void>;
  /** Asks for the job to be checked again after a delay (at most 15 minutes, the queue's limit). */
  scheduleCheck(jobId: string, attempt: number, delaySeconds: number): Promise<void>;
}

/**
 * Fetches the audio of a job submitted by address and hands it to `store` as it arrives. Throws
 * JobFailure `download_failed` when the address cannot be fetched (refused, gone, failing every try) and
 * `audio_too_large` past the size limit.
 */
export interface AudioFetcher {
  fetchInto(
    url: string,
    store: (body: NodeJS.ReadableStream) => Promise<{ bytes: number }>,
  ): Promise<{ bytes: number }>;
}

export interface ApiKeyRecord {
  keyHash: string;
  keyId: string;
  tenantId: string;
  createdAt: string;
  revokedAt?: string;
  label?: string;
}

/** API keys, stored only as SHA-256 hashes. */
export interface ApiKeyStore {
  findByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  put(record: ApiKeyRecord): Promise<void>;
  list(): Promise<ApiKeyRecord[]>;
  /** False when no key has that id. */
  revoke(keyId: string, now: Date): Promise<boolean>;
}

/** The transcription part of a result, before summaries. */
export type Transcription = Omit<TranscriptResult, 'tldr' | 'short_hand_notes'>;

/**
 * What the worker runs to turn a job's audio into a transcription, chosen by the `engine` setting.
 * A sync transcriber does it in one call; throws JobFailure for input that can never succeed.
 */
export interface SyncTranscriber {
  readonly mode: 'sync';
  transcribe(input: { audioFile: string; workDir: string; options: JobOptions }): Promise<Transcription>;
}

export type AsyncTranscriptionState =
  | { state: 'running' }
  | { state: 'completed'; transcription: Transcription }
  | { state: 'failed'; error: JobError };

/**
 * A transcriber that works on its own time (Amazon Transcribe): the worker hands the job off, and
 * finishes it when the completion event arrives or a scheduled check finds it done.
 */
export interface AsyncTranscriber {
  readonly mode: 'async';
  /** Checks the audio (a presigned URL) and hands it off; safe to call again for the same job. */
  start(input: { job: Job; audio: string; workDir: string }): Promise<{ audio_duration_ms: number }>;
  poll(job: Job): Promise<AsyncTranscriptionState>;
}

/** How many of a fanned-out job's chunks are done; `total` is unknown until the whole file is cut. */
export interface ChunkProgress {
  done: number;
  total?: number;
}

/** How a chunked transcriber cut a job's audio: what the assembly reads again. */
export interface ChunkPlan {
  /** How many chunks; each is transcribed on its own, by any worker. */
  chunks: number;
  audio_duration_ms: number;
  /** The transcriber's own record of the cut as a whole (JSON): channels, notes. */
  details: unknown;
}

/** A chunk as the cut hands it on, to be stored until a worker transcribes it. */
export interface CutChunk {
  index: number;
  /** One file per channel. */
  files: string[];
  /** Whether the audio ended with this chunk. */
  last: boolean;
  /** The transcriber's own record of the chunk (JSON): where it lies in the file, its channels. */
  details: unknown;
}

/**
 * A transcriber whose work spreads over many workers: it cuts the audio into chunks (each handed to
 * `storeChunk` as soon as it is made, so that nothing of the file is held whole and workers can start on
 * it while the rest is cut), transcribes one chunk at a time from its stored files into a JSON result,
 * and assembles the results once all are in. A file of one chunk goes through the same three steps in
 * one worker.
 */
export interface ChunkedTranscriber {
  readonly mode: 'chunked';
  plan(input: {
    /** A presigned URL of the job's audio (or a local path). */
    audio: string;
    options: JobOptions;
    workDir: string;
    /** Keeps a chunk until its worker fetches it; awaited before the cut reads on. */
    storeChunk(chunk: CutChunk): Promise<void>;
  }): Promise<ChunkPlan>;
  transcribeChunk(input: {
    index: number;
    /** The chunk's `details`, as `storeChunk` was given them. */
    details: unknown;
    /** The chunk's files, as `storeChunk` was given them, fetched into this worker. */
    files: string[];
    options: JobOptions;
    workDir: string;
  }): Promise<unknown>;
  assemble(input: { plan: ChunkPlan; results: unknown[]; options: JobOptions }): Promise<Transcription>;
}

export type Transcriber = SyncTranscriber | AsyncTranscriber | ChunkedTranscriber;

export interface SummaryRequest {
  tldr: boolean;
  short_hand_notes: boolean;
}

/** Writes the summaries a job asked for from its transcript. */
export interface Summarizer {
  summarize(
    transcription: Transcription,
    request: SummaryRequest,
  ): Promise<Pick<TranscriptResult, 'tldr' | 'short_hand_notes'>>;
}

/** One attempt to deliver a finished job's webhook, as its queue carries it. */
export interface WebhookAttempt {
  jobId: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** Not to be made before this time (ISO): waits longer than a queue delay are made of several. */
  notBefore?: string;
}

/** The queue of webhook attempts (SQS on AWS), separate from the jobs queue. */
export interface WebhookQueue {
  /** Sends an attempt, delivered after `delaySeconds` (at most 15 minutes, the queue's limit). */
  send(attempt: WebhookAttempt, delaySeconds: number): Promise<void>;
}

/** What came of one POST to a webhook receiver. */
export type WebhookResponse =
  | { outcome: 'answered'; statusCode: number }
  /** No answer within the timeout. */
  | { outcome: 'timeout' }
  /** The connection failed (refused, reset, TLS, DNS). */
  | { outcome: 'unreachable'; reason: string }
  /** The address is not one webhooks may go to: nothing was sent. */
  | { outcome: 'refused'; reason: string };

/** Posts a signed webhook body; never follows redirects, never throws for the receiver's failures. */
export interface WebhookSender {
  post(url: string, body: string, headers: Record<string, string>): Promise<WebhookResponse>;
}

/** The tenants' webhook signing secrets (Standard Webhooks `whsec_…`). */
export interface WebhookSecretStore {
  /** The secrets to sign with at `now`: the current one, and the one it replaced while its grace lasts. */
  signingSecrets(tenantId: string, now: Date): Promise<string[]>;
  /** Stores the tenant's first secret; false when the tenant has one already. */
  create(tenantId: string, secret: string, now: Date): Promise<boolean>;
  /** Replaces the tenant's secret, keeping the old one for signing until `graceUntil`; false without one. */
  rotate(tenantId: string, secret: string, now: Date, graceUntil: Date): Promise<boolean>;
}

/**
 * Runs a piece of work once per key: a repeat with the same fingerprint within the key's lifetime
 * answers the first result without running it; another fingerprint throws RequestError `conflict`;
 * a repeat while the first still runs waits for it, or throws `conflict` if it takes too long. Work
 * that throws leaves the key free.
 */
export interface IdempotentRequests {
  once<Result extends object>(request: {
    scope: string;
    tenantId: string;
    key: string;
    fingerprint: string;
    work: () => Promise<Result>;
  }): Promise<{ result: Result; replayed: boolean }>;
}
