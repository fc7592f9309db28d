import { ASYNC_CHECK_INTERVAL_SECONDS, JOB_DEADLINE_MS, QUEUED_DUE_MS } from '#commons/contract';
import { type Job, jobDeadline } from './job.ts';
import type { Clock, JobQueue, JobStore } from './ports.ts';
import { CHECK_DUE_MS, CHUNKS_DUE_MS } from './process-job.ts';

export interface SweepDeps {
  jobs: JobStore;
  queue: JobQueue;
  clock: Clock;
}

export interface SweepReport {
  /** Start messages sent again: for queued jobs nobody started, and jobs whose worker died. */
  requeued: string[];
  /** Checks sent for jobs handed off whose chain of checks broke. */
  checked: string[];
  /** Jobs cut into chunks whose missing chunks were sent again (or, all done, whose assembly was). */
  rechunked: string[];
  /** Jobs past their deadline, ended in error. */
  failed: string[];
}

/** Jobs looked at per sweep; a larger backlog is worked through by the next sweeps. */
const SWEEP_LIMIT = 200;

/**
 * Finds the active jobs that nothing moved when something should have (their due time passed) and
 * moves them: a queued job gets its start message again (the first was never sent, or lost), a job
 * whose worker died gets a start message for another worker, a job handed off gets a check, a job cut
 * into chunks gets its missing chunks' messages again, and a job past its deadline ends in error. Each move is conditional on the due time read, so that concurrent
 * sweeps act once; duplicate messages are harmless because claims are conditional.
 */
export async function sweepJobs(deps: SweepDeps): Promise<SweepReport> {
  const now = deps.clock();
  const report: SweepReport = { requeued: [], checked: [], rechunked: [], failed: [] };
  for (const job of await deps.jobs.listDue(now, SWEEP_LIMIT)) {
    if (now.getTime() >= jobDeadline(job).getTime()) {
      const hours = JOB_DEADLINE_MS / 3_600_000;
      const ended = await deps.jobs.fail(job.id, {
        code: 'transcription_failed',
        message: `The job did not finish within ${hours} hours of its submission.`,
      });
      if (ended) report.failed.push(job.id);
      continue;
    }
    const action = nextAction(job, now);
    if (!(await deps.jobs.setDue(job.id, action.dueAt, job.dueAt))) continue;
    if (action.kind === 'check') {
      await deps.queue.scheduleCheck(job.id, action.attempt, 0);
      report.checked.push(job.id);
    } else if (action.kind === 'start') {
      await deps.queue.enqueue(job.id);
      report.requeued.push(job.id);
    } else if (action.kind === 'chunks') {
      // Every chunk done but nobody assembled: a start message finds that and assembles.
      if (action.missing.length === 0) await deps.queue.enqueue(job.id);
      else await deps.queue.enqueueChunks(job.id, action.missing);
      report.rechunked.push(job.id);
    }
  }
  return report;
}

type Action =
  | { kind: 'start'; dueAt: Date }
  | { kind: 'check'; attempt: number; dueAt: Date }
  | { kind: 'chunks'; missing: number[]; dueAt: Date }
  | { kind: 'wait'; dueAt: Date };

function nextAction(job: Job, now: Date): Action {
  if (job.status === 'processing' && job.handedOffAt) {
    const elapsed = now.getTime() - new Date(job.handedOffAt).getTime();
    const attempt = 1 + Math.floor(elapsed / (ASYNC_CHECK_INTERVAL_SECONDS * 1000));
    return { kind: 'check', attempt, dueAt: new Date(now.getTime() + CHECK_DUE_MS) };
  }
  const leaseRunning = job.status === 'processing' && (job.leaseExpiresAt ?? 0) > now.getTime();
  // A live worker's heartbeats move the due time on; should one lag, look again when its lease ends.
  if (leaseRunning) return { kind: 'wait', dueAt: new Date(job.leaseExpiresAt ?? now.getTime()) };
  if (job.status === 'processing' && job.chunksTotal !== undefined) {
    const done = new Set(job.chunksDone ?? []);
    const missing = Array.from({ length: job.chunksTotal }, (_, index) => index).filter((i) => !done.has(i));
    return { kind: 'chunks', missing, dueAt: new Date(now.getTime() + CHUNKS_DUE_MS) };
  }
  return { kind: 'start', dueAt: new Date(now.getTime() + QUEUED_DUE_MS) };
}
