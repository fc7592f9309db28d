import { randomUUID } from 'node:crypto';
import { audioKey, JOB_DEADLINE_MS, QUEUED_DUE_MS, RETENTION_DAYS } from '#commons/contract';
import type { JobError } from './errors.ts';
import type { JobOptions } from './options.ts';
import type { TranscriptResult } from './result.ts';

export const JOB_STATUSES = ['queued', 'processing', 'completed', 'error'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** A transcription job as stored. `timestamp_submitted` keeps the API's name because the index sorts on it. */
export interface Job {
  id: string;
  tenantId: string;
  status: JobStatus;
  options: JobOptions;
  timestamp_submitted: string;
  /** Epoch seconds when the job expires (the table's TTL attribute). */
  expiresAt: number;
  audioKey: string;
  /** Submitted by address: the worker fetches it into `audioKey` first. */
  audioUrl?: string;
  resultKey?: string;
  audio_duration_ms?: number;
  error?: JobError;
  /** Epoch milliseconds until which a worker holds the job; another message for it is dropped until then. */
  leaseExpiresAt?: number;
  /** Which claim holds the lease, so that only its worker extends or releases it. */
  leaseOwner?: string;
  /**
   * While the job is queued or processing: when something should have happened to it by (started, a
   * heartbeat, a check). The sweeper looks at jobs past it; finished jobs have none.
   */
  dueAt?: string;
  /** When the job was handed to an asynchronous transcriber (Amazon Transcribe), which finishes it later. */
  handedOffAt?: string;
  /** A long job cut into chunks: how many, and which are done (by index). */
  chunksTotal?: number;
  chunksDone?: number[];
  /** Lower-cased id and custom value, for the console's search. */
  searchText: string;
  /** Delivery of the job's webhook, once it has been tried. */
  webhook?: WebhookDelivery;
}

export const WEBHOOK_STATUSES = ['pending', 'retrying', 'delivered', 'failed'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

/** How far the delivery of a job's webhook got: the last attempt and what came of it. */
export interface WebhookDelivery {
  status: WebhookStatus;
  /** Attempts made so far. */
  attempts: number;
  /** The HTTP status of the last answer; absent when the last attempt got none. */
  last_response_code?: number;
  /** Why the last attempt failed when it got no answer, or why delivery stopped. */
  last_error?: string;
  last_attempt_at: string;
}

/** Unguessable: 122 random bits. */
export function newJobId(): string {
  return randomUUID();
}

export function newJob(input: {
  id: string;
  tenantId: string;
  options: JobOptions;
  now: Date;
  /** Where the audio is or will be; by default the job's own key under `audio/`. */
  audioKey?: string;
  /** An address the worker fetches the audio from into `audioKey`. */
  audioUrl?: string;
}): Job {
  const submitted = input.now.toISOString();
  return {
    id: input.id,
    tenantId: input.tenantId,
    status: 'queued',
    options: input.options,
    timestamp_submitted: submitted,
    expiresAt: Math.floor(input.now.getTime() / 1000) + retentionDays(input.options) * 86_400,
    audioKey: input.audioKey ?? audioKey(input.tenantId, input.id),
    ...(input.audioUrl ? { audioUrl: input.audioUrl } : {}),
    searchText: `${input.id} ${input.options.custom}`.toLowerCase(),
    dueAt: new Date(input.now.getTime() + QUEUED_DUE_MS).toISOString(),
  };
}

/** Days a job, its audio and its result are kept. */
export function retentionDays(options: Pick<JobOptions, 'retention_days'>): number {
  return options.retention_days ?? RETENTION_DAYS;
}

/** Whether a job is past its retention: gone for the API, even before it is removed. */
export function isExpired(job: Pick<Job, 'expiresAt'>, now: Date): boolean {
  return job.expiresAt * 1000 <= now.getTime();
}

/** When a job is given up if it has not finished (JOB_DEADLINE_MS after submission). */
export function jobDeadline(job: Pick<Job, 'timestamp_submitted'>): Date {
  return new Date(new Date(job.timestamp_submitted).getTime() + JOB_DEADLINE_MS);
}

export function isFinished(status: JobStatus): boolean {
  return status === 'completed' || status === 'error';
}

/** SPEC 2.1: the record returned on submission, booleans as the strings "true"/"false". */
export interface SubmissionRecord {
  id: string;
  status: JobStatus;
  dual_channel: string;
  punctuate: string;
  webhook_url: string;
  custom: string;
  speaker_diarization: string;
  language: string;
  timestamp_submitted: string;
  tldr: string;
  short_hand_notes: string;
  /** Only when the client sent it (additive to SPEC 2.1). */
  speakers_expected?: string;
  /** Only when the client sent it (additive to SPEC 2.1). */
  retention_days?: string;
}

export function toSubmissionRecord(job: Job): SubmissionRecord {
  const { options } = job;
  return {
    id: job.id,
    status: job.status,
    dual_channel: String(options.dual_channel),
    punctuate: String(options.punctuate),
    webhook_url: options.webhook_url,
    custom: options.custom,
    speaker_diarization: String(options.speaker_diarization),
    language: options.language,
    timestamp_submitted: job.timestamp_submitted,
    tldr: String(options.tldr),
    short_hand_notes: String(options.short_hand_notes),
    ...(options.speakers_expected !== undefined
      ? { speakers_expected: String(options.speakers_expected) }
      : {}),
    ...(options.retention_days !== undefined ? { retention_days: String(options.retention_days) } : {}),
  };
}

/** SPEC 2.2: the job fields of the status record, with JSON booleans. */
export interface JobData {
  id: string;
  status: JobStatus;
  dual_channel: boolean;
  punctuate: boolean;
  webhook_url: string;
  custom: string;
  speaker_diarization: boolean;
  language: string;
  timestamp_submitted: string;
  /** Only when the client sent it (additive to SPEC 2.2). */
  speakers_expected?: number;
  /** Only when the client sent it (additive to SPEC 2.2). */
  retention_days?: number;
  /** Only with a webhook_url, once the job has finished (additive to SPEC 2.2). */
  webhook_status?: WebhookStatus;
  webhook_attempts?: number;
  /** The HTTP status of the receiver's last answer, when it answered. */
  webhook_response_code?: number;
  /** Why the last attempt got no answer, or why delivery stopped. */
  webhook_error?: string;
}

export interface StatusRecord extends JobData {
  error?: JobError;
  /** While a long job's chunks are transcribed: how many are done of how many (additive to SPEC). */
  progress?: { chunks_done: number; chunks_total: number };
  results?: { job_data: JobData; results: TranscriptResult };
}

function toJobData(job: Job): JobData {
  const { options } = job;
  return {
    id: job.id,
    status: job.status,
    dual_channel: options.dual_channel,
    punctuate: options.punctuate,
    webhook_url: options.webhook_url,
    custom: options.custom,
    speaker_diarization: options.speaker_diarization,
    language: options.language,
    timestamp_submitted: job.timestamp_submitted,
    ...(options.speakers_expected !== undefined ? { speakers_expected: options.speakers_expected } : {}),
    ...(options.retention_days !== undefined ? { retention_days: options.retention_days } : {}),
    ...webhookFields(job),
  };
}

/** The delivery of a finished job's webhook, as the records show it: `pending` until the first attempt. */
function webhookFields(job: Job): Partial<JobData> {
  if (!job.options.webhook_url || !isFinished(job.status)) return {};
  const delivery = job.webhook;
  if (!delivery) return { webhook_status: 'pending', webhook_attempts: 0 };
  return {
    webhook_status: delivery.status,
    webhook_attempts: delivery.attempts,
    ...(delivery.last_response_code !== undefined
      ? { webhook_response_code: delivery.last_response_code }
      : {}),
    ...(delivery.last_error !== undefined ? { webhook_error: delivery.last_error } : {}),
  };
}

/** A job as the console's list shows it: the job data with its duration and error, no results. */
export interface JobSummary extends JobData {
  tldr: boolean;
  short_hand_notes: boolean;
  audio_duration_ms?: number;
  error?: JobError;
}

export function toJobSummary(job: Job): JobSummary {
  return {
    ...toJobData(job),
    tldr: job.options.tldr,
    short_hand_notes: job.options.short_hand_notes,
    ...(job.audio_duration_ms !== undefined ? { audio_duration_ms: job.audio_duration_ms } : {}),
    ...(job.error ? { error: job.error } : {}),
  };
}

/** The status record: `results` only when completed, `error` only when in error (DESIGN 3). */
export function toStatusRecord(job: Job, result?: TranscriptResult): StatusRecord {
  const jobData = toJobData(job);
  if (job.status === 'completed' && result)
    return { ...jobData, results: { job_data: jobData, results: result } };
  if (job.status === 'error' && job.error) return { ...jobData, error: job.error };
  if (job.status === 'processing' && job.chunksTotal !== undefined) {
    const chunks_done = Math.min(job.chunksDone?.length ?? 0, job.chunksTotal);
    return { ...jobData, progress: { chunks_done, chunks_total: job.chunksTotal } };
  }
  return jobData;
}
