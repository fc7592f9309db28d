import type { JobError } from './errors.ts';
import type { Job, JobStatus } from './job.ts';
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
   * Records that the processing job `owner` holds was cut into `chunks` chunks, each now its own message,
   * and gives up the lease: the chunks' workers carry the job on, and it is due at `dueAt` unless a chunk
   * finishes. False when the job is no longer processing or no longer the owner's.
   */
  recordPlan(
    id: string,
    owner: string,
    plan: { chunks: number; audio_duration_ms: number; dueAt: Date },
  ): Promise<boolean>;
  /**
   * Records chunk `index` of a processing job as done (a second time changes nothing) and moves its due
   * time on; answers how many distinct chunks are done, or undefined when the job is no longer processing.
   */
  markChunkDone(id: string, index: number, dueAt: Date): Promise<number | undefined>;
  /**
   * Moves the due time of an active job; with `ifDueAt`, only if nobody moved it since it was read, so
   * that one sweep acts on a job once. False when the condition did not hold.
   */
  setDue(id: string, dueAt: Date, ifDueAt?: string): Promise<boolean>;
  /** Active (queued or processing) jobs whose due time has passed, earliest first. */
  listDue(now: Date, limit: number): Promise<Job[]>;
  /** How many jobs of a tenant are active, counting up to `atMost` (enough to compare with a cap). */
  countActive(tenantId: string, atMost: number): Promise<number>;
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
  /** Streams audio into the store and answers the number of bytes written. */
  putAudio(key: string, body: NodeJS.ReadableStream, contentType?: string): Promise<{ bytes: number }>;
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

/** How a chunked transcriber cut a job's audio: what every chunk worker and the assembly read again. */
export interface ChunkPlan {
  /** How many chunks; each is transcribed on its own, by any worker. */
  chunks: number;
  audio_duration_ms: number;
  /** The transcriber's own record of the cut (JSON): chunk bounds, channels, notes. */
  details: unknown;
}

/**
 * A transcriber whose work spreads over many workers: it cuts the audio into chunks (stored through
 * `storeChunk` as they are made, so that nothing of the file is held whole), transcribes one chunk at a
 * time from its stored files into a JSON result, and assembles the results once all are in. A file of
 * one chunk goes through the same three steps in one worker.
 */
export interface ChunkedTranscriber {
  readonly mode: 'chunked';
  plan(input: {
    /** A presigned URL of the job's audio (or a local path). */
    audio: string;
    options: JobOptions;
    workDir: string;
    /** Keeps chunk `index`'s files (one per channel) until its worker fetches them; awaited before reading on. */
    storeChunk(index: number, files: string[], last: boolean): Promise<void>;
  }): Promise<ChunkPlan>;
  transcribeChunk(input: {
    plan: ChunkPlan;
    index: number;
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
