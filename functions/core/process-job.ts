import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, extname, join } from 'node:path';
import pLimit from 'p-limit';
import {
  ASYNC_CHECK_INTERVAL_SECONDS,
  ASYNC_DEADLINE_MS,
  HEARTBEAT_VISIBILITY_SECONDS,
  MAX_RETRY_DELAY_SECONDS,
  RETRY_BASE_SECONDS,
  resultKey,
  workKey,
} from '#commons/contract';
import { failureKind, type JobError, JobFailure } from './errors.ts';
import type { Job } from './job.ts';
import type { WorkerMessage } from './messages.ts';
import type {
  AudioFetcher,
  ChunkedTranscriber,
  ChunkPlan,
  ChunkProgress,
  Clock,
  CutChunk,
  JobQueue,
  JobStore,
  Lease,
  MediaStore,
  Summarizer,
  Transcriber,
  Transcription,
} from './ports.ts';
import {
  type ChunkManifest,
  chunkFiles,
  chunkResultFile,
  MANIFEST_FILE,
  readManifest,
  readStoredChunk,
  removeWorkFiles,
  STORE_CALLS_AT_ONCE,
  type StoredChunk,
  storedChunkFile,
  workFiles,
} from './work-files.ts';

/** How a worker paces its heartbeats and retries; the defaults are the contract's. */
export interface WorkerTimings {
  /** Seconds a message stays hidden past each heartbeat. */
  heartbeatVisibilitySeconds: number;
  /** Seconds before a failed message's second attempt; each later attempt waits four times longer. */
  retryBaseSeconds: number;
}

export const DEFAULT_TIMINGS: WorkerTimings = {
  heartbeatVisibilitySeconds: HEARTBEAT_VISIBILITY_SECONDS,
  retryBaseSeconds: RETRY_BASE_SECONDS,
};

/** A job handed off is due (its chain of checks is considered broken) this long after its last check. */
export const CHECK_DUE_MS = 2 * ASYNC_CHECK_INTERVAL_SECONDS * 1000;

/**
 * A job cut into chunks is due (the sweeper sends its missing chunks again) when none finished for this
 * long: far longer than a chunk takes, retries included, so that a busy queue is not flooded with copies.
 */
export const CHUNKS_DUE_MS = 30 * 60_000;

/** How long the presigned URL of a job's audio lets the transcriber read it (planning takes minutes). */
const AUDIO_URL_SECONDS = 3600;

export interface ProcessDeps {
  jobs: JobStore;
  media: MediaStore;
  queue: JobQueue;
  /** Fetches the audio of jobs submitted by address. */
  fetcher: AudioFetcher;
  transcriber: Transcriber;
  summarizer: Summarizer;
  clock: Clock;
  timings: WorkerTimings;
}

/** The message being worked on, as the queue delivered it. */
export interface Delivery {
  /** 1 on the first delivery. */
  receiveCount: number;
  /** Hides the message for this many seconds from now (longer or shorter than it was). */
  hide(seconds: number): Promise<void>;
}

export type ProcessOutcome =
  | 'completed'
  | 'failed'
  | 'started'
  | 'waiting'
  /** The audio was cut into chunks, each now its own message. */
  | 'fanned-out'
  /** One chunk was transcribed; others are not yet. */
  | 'chunk-done'
  /** Nothing to do: the job is finished, missing, or not handed off. */
  | 'skipped'
  /** Another worker holds the job; its own message covers it, so this one is dropped. */
  | 'busy';

export interface WorkerResult {
  outcome: ProcessOutcome;
  /** The unexpected error (a bug) that ended the job in `internal`, for the log. */
  bug?: unknown;
  /** How long this message's assembly of a fanned-out job took: the benchmark's figure for that step. */
  assemblyMs?: number;
  /**
   * How long the transcriber took over this message's chunk: the rest of the message's time is the
   * queue, the store and the job record, which the benchmark tells apart with it.
   */
  transcriptionMs?: number;
}

/** Thrown after a transient failure, once the message has been hidden until its next attempt. */
export class RetryLater extends Error {
  constructor(
    override readonly cause: unknown,
    readonly delaySeconds: number,
  ) {
    super(`Retrying in ${delaySeconds} s: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'RetryLater';
  }
}

/** The delay before the next attempt of a message that failed on its `receiveCount`-th delivery. */
export function retryDelaySeconds(timings: WorkerTimings, receiveCount: number): number {
  const exponent = Math.max(0, receiveCount - 1);
  return Math.min(MAX_RETRY_DELAY_SECONDS, Math.ceil(timings.retryBaseSeconds * 4 ** exponent));
}

/**
 * Handles one worker message. The message stays hidden while the work goes on (heartbeats); input that
 * can never succeed, and bugs, end the job in `error` at once; anything else hides the message until
 * its next attempt and throws RetryLater, and the queue's redrive policy bounds the attempts.
 */
export async function handleWorkerMessage(
  deps: ProcessDeps,
  message: WorkerMessage,
  delivery: Delivery,
): Promise<WorkerResult> {
  const heartbeat = new Heartbeat(deps, delivery);
  try {
    await heartbeat.start();
    if (message.kind === 'process') return await processJob(deps, message.jobId, heartbeat);
    if (message.kind === 'chunk') return await processChunk(deps, message.jobId, message.index, heartbeat);
    return await checkHandedOff(deps, message.jobId, message.kind === 'check' ? message.attempt : undefined);
  } catch (error) {
    heartbeat.stop();
    const delaySeconds = retryDelaySeconds(deps.timings, delivery.receiveCount);
    // If even this fails, the message comes back after its last heartbeat's visibility.
    await delivery.hide(delaySeconds).catch(() => undefined);
    throw new RetryLater(error, delaySeconds);
  } finally {
    heartbeat.stop();
  }
}

/**
 * Keeps the message hidden, and the job's lease held, while the work goes on. Its first beat comes
 * before any work, so that a worker that dies early is noticed as soon as one that dies late.
 */
class Heartbeat {
  private timer: NodeJS.Timeout | undefined;
  private lease: { jobId: string; owner: string } | undefined;

  constructor(
    private readonly deps: ProcessDeps,
    private readonly delivery: Delivery,
  ) {}

  async start(): Promise<void> {
    await this.beat();
    const intervalMs = (this.deps.timings.heartbeatVisibilitySeconds * 1000) / 3;
    this.timer = setInterval(() => this.beat().catch(() => undefined), intervalMs);
    this.timer.unref();
  }

  hold(jobId: string, owner: string): void {
    this.lease = { jobId, owner };
  }

  release(): void {
    this.lease = undefined;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * Best effort: a beat that fails leaves the message hidden as long as it was (at worst the queue's own
   * visibility timeout) and the lease as it was; neither is a reason to abandon the work.
   */
  private async beat(): Promise<void> {
    const { lease } = this;
    await Promise.allSettled([
      this.delivery.hide(this.deps.timings.heartbeatVisibilitySeconds),
      lease && this.deps.jobs.extendLease(lease.jobId, newLease(this.deps, lease.owner)),
    ]);
  }
}

/** A lease of five sixths of the heartbeat's visibility: it runs out before the message reappears. */
function newLease(deps: ProcessDeps, owner: string): Lease {
  const now = deps.clock();
  const visibilityMs = deps.timings.heartbeatVisibilitySeconds * 1000;
  return {
    owner,
    now,
    until: new Date(now.getTime() + (visibilityMs * 5) / 6),
    // The dead worker's own message reappears first; the sweeper steps in only if it does not.
    dueAt: new Date(now.getTime() + 2 * visibilityMs),
  };
}

/** Claims a queued job and transcribes it, hands it to an asynchronous transcriber, or cuts it into chunks. */
function processJob(deps: ProcessDeps, jobId: string, heartbeat: Heartbeat): Promise<WorkerResult> {
  return underLease(deps, jobId, heartbeat, 'drop', (job, owner) => runJob(deps, job, owner));
}

/**
 * Claims the job and runs `work` holding its lease. Input that can never succeed and bugs end the job;
 * a transient failure gives the lease up for the retry. A job another worker holds is dropped (its own
 * message covers it) or, with `retry`, thrown back for a later attempt.
 */
async function underLease(
  deps: ProcessDeps,
  jobId: string,
  heartbeat: Heartbeat,
  whenLeased: 'drop' | 'retry',
  work: (job: Job, owner: string) => Promise<ProcessOutcome>,
): Promise<WorkerResult> {
  const owner = randomUUID();
  const claim = await deps.jobs.claim(jobId, newLease(deps, owner));
  if (claim.outcome === 'missing' || claim.outcome === 'finished') return { outcome: 'skipped' };
  if (claim.outcome === 'leased') {
    if (whenLeased === 'drop') return { outcome: 'busy' };
    throw new Error(`Job ${jobId} is held by another worker; trying again later.`);
  }

  const { job } = claim;
  heartbeat.hold(job.id, owner);
  try {
    return { outcome: await work(job, owner) };
  } catch (error) {
    const settled = await settleFailure(deps, job, error);
    if (settled) return settled;
    // A retry must not wait for this lease to run out.
    heartbeat.release();
    await deps.jobs.releaseLease(job.id, owner).catch(() => undefined);
    throw error;
  } finally {
    heartbeat.release();
  }
}

async function runJob(deps: ProcessDeps, job: Job, owner: string): Promise<ProcessOutcome> {
  const { transcriber } = deps;
  if (job.chunksTotal !== undefined) {
    // Cut before: its chunks were queued before the plan was recorded, and their workers carry it on.
    if (transcriber.mode !== 'chunked') throw new Error('A job cut into chunks needs a chunked transcriber.');
    return resumeChunked(deps, transcriber, job, owner);
  }
  // A job submitted by address has its audio fetched into the store once; a retry finds it there.
  if (job.audioUrl && !(await deps.media.describe(job.audioKey))) {
    const url = job.audioUrl;
    await deps.fetcher.fetchInto(url, (body) => deps.media.putAudio(job.audioKey, body));
    // Deleted while its audio was fetched: the deletion found nothing to remove, so this copy goes here.
    if (!(await deps.jobs.get(job.id))) {
      await deps.media.delete(job.audioKey);
      return 'skipped';
    }
  }
  const workDir = await mkdtemp(join(tmpdir(), 'job-'));
  try {
    if (transcriber.mode === 'sync') {
      const audioFile = join(workDir, 'input');
      await deps.media.downloadToFile(job.audioKey, audioFile);
      const transcription = await transcriber.transcribe({ audioFile, workDir, options: job.options });
      // Awaited here: the cleanup below must not leave a rejection unobserved while it runs.
      return await finish(deps, job, transcription);
    }
    // Read where it is stored, through a URL: nothing of the file needs to be on this worker's disk.
    const audio = await deps.media.presignDownload(job.audioKey, AUDIO_URL_SECONDS);
    if (transcriber.mode === 'chunked')
      return await planChunks(deps, transcriber, job, owner, audio, workDir);
    const started = await transcriber.start({ job, audio, workDir });
    const now = deps.clock();
    await deps.jobs.markHandedOff(job.id, {
      audio_duration_ms: started.audio_duration_ms,
      now,
      deadline: new Date(now.getTime() + ASYNC_DEADLINE_MS),
      dueAt: new Date(now.getTime() + CHECK_DUE_MS),
    });
    // Should this message be lost, the sweeper sends a check once the job is due.
    await deps.queue.scheduleCheck(job.id, 1, ASYNC_CHECK_INTERVAL_SECONDS);
    return 'started';
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/**
 * Cuts the audio into chunks and, as each is cut, stores it and queues a message for it: any free worker
 * transcribes it while the rest of the file is cut. A file of one chunk is transcribed here at once,
 * without storing anything. Once the cut is done the plan is recorded; should every chunk be done by
 * then, a start message assembles the job. A worker that dies while cutting leaves the job to be
 * planned again, which cuts and queues the same chunks (those done are not transcribed again).
 */
async function planChunks(
  deps: ProcessDeps,
  transcriber: ChunkedTranscriber,
  job: Job,
  owner: string,
  audio: string,
  workDir: string,
): Promise<ProcessOutcome> {
  const { options } = job;
  const files: string[][] = [];
  let kept: CutChunk | undefined;
  let plan: ChunkPlan;
  try {
    plan = await transcriber.plan({
      audio,
      options,
      workDir,
      storeChunk: async (chunk) => {
        if (chunk.index === 0 && chunk.last) {
          kept = chunk;
          return;
        }
        const names = chunk.files.map((path, n) => `chunk-${chunk.index}-${n}${extname(path)}`);
        await Promise.all(
          chunk.files.map((path, n) =>
            deps.media.putFile(workKey(job.tenantId, job.id, names[n] ?? ''), path),
          ),
        );
        await Promise.all(chunk.files.map((path) => rm(path, { force: true })));
        files[chunk.index] = names;
        const stored: StoredChunk = { files: names, details: chunk.details ?? null };
        await deps.media.putJson(workKey(job.tenantId, job.id, storedChunkFile(chunk.index)), stored);
        await deps.queue.enqueueChunks(job.id, [chunk.index]);
      },
    });
  } catch (error) {
    // Audio that turned out too long, or undecodable past some point, leaves nothing behind; the
    // chunks already queued find the job ended.
    await removeWorkFiles(deps.media, job, chunkFiles(files));
    throw error;
  }
  if (plan.chunks === 1 && kept) {
    const { files: paths, details } = kept;
    const result = await transcriber.transcribeChunk({ index: 0, details, files: paths, options, workDir });
    return finish(deps, job, await transcriber.assemble({ plan, results: [result], options }));
  }
  const manifest: ChunkManifest = { plan: { ...plan, details: plan.details ?? null }, files };
  await deps.media.putJson(workKey(job.tenantId, job.id, MANIFEST_FILE), manifest);
  const dueAt = new Date(deps.clock().getTime() + CHUNKS_DUE_MS);
  const done = await deps.jobs.recordPlan(job.id, owner, {
    chunks: plan.chunks,
    audio_duration_ms: plan.audio_duration_ms,
    dueAt,
  });
  if (done === undefined) {
    // Deleted or ended while it was cut (a deletion finds no plan to go by). A job still processing
    // has another worker cutting it again, into the same files: those stay.
    if ((await deps.jobs.get(job.id))?.status !== 'processing')
      await removeWorkFiles(deps.media, job, workFiles(manifest));
    return 'skipped';
  }
  // Every chunk was done before the cut ended, so no chunk's worker saw the total: a start message assembles.
  if (done >= plan.chunks) await deps.queue.enqueue(job.id);
  return 'fanned-out';
}

/**
 * A start message for a job already cut into chunks (a duplicate, or the sweeper's once every chunk was
 * done): assembles it if every chunk is done, else leaves it to its chunks' workers.
 */
async function resumeChunked(
  deps: ProcessDeps,
  transcriber: ChunkedTranscriber,
  job: Job,
  owner: string,
): Promise<ProcessOutcome> {
  if ((job.chunksDone?.length ?? 0) >= (job.chunksTotal ?? 0)) return assembleChunks(deps, transcriber, job);
  await deps.jobs.releaseLease(job.id, owner, new Date(deps.clock().getTime() + CHUNKS_DUE_MS));
  return 'skipped';
}

/**
 * Transcribes one chunk of a job, once: a chunk already done is not transcribed again. The worker whose
 * chunk is the last to be done assembles the job, holding its lease so that only one does.
 */
async function processChunk(
  deps: ProcessDeps,
  jobId: string,
  index: number,
  heartbeat: Heartbeat,
): Promise<WorkerResult> {
  const { transcriber } = deps;
  const job = await deps.jobs.get(jobId);
  if (job?.status !== 'processing' || transcriber.mode !== 'chunked') return { outcome: 'skipped' };
  let progress: ChunkProgress = { done: job.chunksDone?.length ?? 0, total: job.chunksTotal };
  let transcriptionMs: number | undefined;
  try {
    if (!job.chunksDone?.includes(index)) {
      const stored = await readStoredChunk(deps.media, job, index);
      const transcribed = await transcribeStoredChunk(deps, transcriber, job, index, stored);
      transcriptionMs = transcribed.ms;
      const { result } = transcribed;
      await deps.media.putJson(workKey(job.tenantId, job.id, chunkResultFile(index)), result);
      const dueAt = new Date(deps.clock().getTime() + CHUNKS_DUE_MS);
      const marked = await deps.jobs.markChunkDone(job.id, index, dueAt);
      if (marked === undefined) {
        // The job ended meanwhile (failed, or deleted): nobody will read or remove this result.
        await removeWorkFiles(deps.media, job, [chunkResultFile(index)]);
        return { outcome: 'skipped', ...timed(transcriptionMs) };
      }
      progress = marked;
    }
  } catch (error) {
    // A job that ended meanwhile (its cut failed, or it was deleted) may have taken this chunk's files.
    if ((await deps.jobs.get(job.id))?.status !== 'processing') return { outcome: 'skipped' };
    const settled = await settleFailure(deps, job, error);
    if (settled) return settled;
    throw error;
  }
  // Before the plan is recorded the total is unknown: the worker that records it sees this chunk done.
  if (progress.total === undefined || progress.done < progress.total)
    return { outcome: 'chunk-done', ...timed(transcriptionMs) };
  const assemblyStarted = performance.now();
  // If a worker holds the job (planning still, or assembling already), this message comes back later.
  const assembled = await underLease(deps, job.id, heartbeat, 'retry', (claimed) =>
    assembleChunks(deps, transcriber, claimed),
  );
  if (assembled.outcome !== 'completed') return { ...assembled, ...timed(transcriptionMs) };
  return {
    ...assembled,
    assemblyMs: Math.round(performance.now() - assemblyStarted),
    ...timed(transcriptionMs),
  };
}

/** A chunk's transcription time for the result, when this message transcribed it. */
function timed(transcriptionMs: number | undefined): { transcriptionMs?: number } {
  return transcriptionMs === undefined ? {} : { transcriptionMs: Math.round(transcriptionMs) };
}

async function transcribeStoredChunk(
  deps: ProcessDeps,
  transcriber: ChunkedTranscriber,
  job: Job,
  index: number,
  stored: StoredChunk,
): Promise<{ result: unknown; ms: number }> {
  const workDir = await mkdtemp(join(tmpdir(), 'chunk-'));
  try {
    const files = stored.files.map((name) => join(workDir, basename(name)));
    await Promise.all(
      stored.files.map((name, n) =>
        deps.media.downloadToFile(workKey(job.tenantId, job.id, name), files[n] ?? ''),
      ),
    );
    const started = performance.now();
    const { details } = stored;
    const result = await transcriber.transcribeChunk({
      index,
      details,
      files,
      options: job.options,
      workDir,
    });
    return { result, ms: performance.now() - started };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/** Reads every chunk's result, assembles the transcription, finishes the job and removes its working files. */
async function assembleChunks(
  deps: ProcessDeps,
  transcriber: ChunkedTranscriber,
  job: Job,
): Promise<ProcessOutcome> {
  const manifest = await readManifest(deps.media, job);
  const { plan } = manifest;
  const limit = pLimit(STORE_CALLS_AT_ONCE);
  const results = await Promise.all(
    Array.from({ length: plan.chunks }, (_, index) =>
      limit(() => deps.media.readJson(workKey(job.tenantId, job.id, chunkResultFile(index)))),
    ),
  );
  const outcome = await finish(
    deps,
    job,
    await transcriber.assemble({ plan, results, options: job.options }),
  );
  await removeWorkFiles(deps.media, job, workFiles(manifest));
  return outcome;
}

/**
 * Finishes a job an asynchronous transcriber has, on its completion event or a scheduled check. A check
 * that finds the transcriber still busy schedules the next one, until the deadline.
 */
async function checkHandedOff(
  deps: ProcessDeps,
  jobId: string,
  attempt: number | undefined,
): Promise<WorkerResult> {
  const { transcriber } = deps;
  const job = await deps.jobs.get(jobId);
  if (job?.status !== 'processing' || !job.handedOffAt || transcriber.mode !== 'async') {
    return { outcome: 'skipped' };
  }
  try {
    const state = await transcriber.poll(job);
    if (state.state === 'completed') return { outcome: await finish(deps, job, state.transcription) };
    if (state.state === 'failed') {
      await deps.jobs.fail(job.id, state.error);
      return { outcome: 'failed' };
    }
    if (attempt === undefined) return { outcome: 'waiting' };
    const now = deps.clock();
    if (now.getTime() >= new Date(job.handedOffAt).getTime() + ASYNC_DEADLINE_MS) {
      throw new JobFailure('transcription_failed', 'The transcription engine did not finish in time.');
    }
    await deps.queue.scheduleCheck(job.id, attempt + 1, ASYNC_CHECK_INTERVAL_SECONDS);
    await deps.jobs.setDue(job.id, new Date(now.getTime() + CHECK_DUE_MS));
    return { outcome: 'waiting' };
  } catch (error) {
    const settled = await settleFailure(deps, job, error);
    if (settled) return settled;
    throw error;
  }
}

/**
 * Adds the summaries the job asked for, stores the result and completes the job. A job deleted while
 * it was transcribed is left as it is, and a result stored while it was being deleted is removed.
 */
async function finish(deps: ProcessDeps, job: Job, transcription: Transcription): Promise<ProcessOutcome> {
  if ((await deps.jobs.get(job.id))?.status !== 'processing') return 'skipped';
  const { tldr, short_hand_notes } = job.options;
  const summaries =
    tldr || short_hand_notes
      ? await deps.summarizer.summarize(transcription, { tldr, short_hand_notes })
      : {};
  const key = resultKey(job.tenantId, job.id);
  await deps.media.putResult(key, { ...transcription, ...summaries });
  if (
    await deps.jobs.complete(job.id, { resultKey: key, audio_duration_ms: transcription.audio_duration_ms })
  ) {
    return 'completed';
  }
  // The deletion removed the objects before this result was stored, or removes them after it.
  if (!(await deps.jobs.get(job.id))) await deps.media.delete(key);
  return 'skipped';
}

const INTERNAL_FAILURE: JobError = {
  code: 'internal',
  message: 'An internal error ended the job; it has been logged. Submitting the file again may work.',
};

/** Ends the job for an input problem or a bug; undefined for a transient failure, which is retried. */
async function settleFailure(deps: ProcessDeps, job: Job, error: unknown): Promise<WorkerResult | undefined> {
  const kind = failureKind(error);
  if (kind === 'transient') return undefined;
  if (kind === 'input') {
    await deps.jobs.fail(job.id, (error as JobFailure).toJobError());
    return { outcome: 'failed' };
  }
  await deps.jobs.fail(job.id, INTERNAL_FAILURE);
  return { outcome: 'failed', bug: error };
}

/** Called for a message that exhausted its deliveries: the job must not stay queued or processing. */
export async function failAbandonedJob(jobs: JobStore, message: WorkerMessage): Promise<boolean> {
  const what =
    message.kind === 'chunk' ? `Transcribing part ${message.index + 1} of the audio` : 'Transcription';
  return jobs.fail(message.jobId, {
    code: 'transcription_failed',
    message: `${what} failed repeatedly; the job was given up.`,
  });
}
