import type { JobError } from './errors.ts';
import type { Job } from './job.ts';
import type { JobOptions } from './options.ts';
import type { TranscriptResult } from './result.ts';

/** Storage of jobs (DynamoDB on AWS). Every status change is conditional on the current status. */
export interface JobStore {
  create(job: Job): Promise<void>;
  get(id: string): Promise<Job | undefined>;
  /**
   * Moves a queued job, or a processing job whose lease has run out, to processing with a new lease.
   * Answers what it found when it could not.
   */
  claim(id: string, now: Date, leaseMs: number): Promise<ClaimOutcome>;
  /** processing → completed; false when the job was no longer processing. */
  complete(id: string, update: { resultKey: string; audio_duration_ms: number; now: Date }): Promise<boolean>;
  /** queued|processing → error; false when the job had already finished. */
  fail(id: string, error: JobError, now: Date): Promise<boolean>;
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
  putResult(key: string, result: TranscriptResult): Promise<void>;
  getResult(key: string): Promise<TranscriptResult>;
  delete(key: string): Promise<void>;
}

/** The queue of jobs to process (SQS on AWS). */
export interface JobQueue {
  enqueue(jobId: string): Promise<void>;
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

/** Turns an audio file into a result; throws JobFailure for input that can never succeed. */
export interface Transcriber {
  transcribe(input: { audioFile: string; workDir: string; options: JobOptions }): Promise<TranscriptResult>;
}
