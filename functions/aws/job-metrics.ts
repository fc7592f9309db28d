import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { type EngineName, JOB_METRICS } from '#commons/contract';
import type { JobErrorCode } from '#core/errors';
import { type JobStore, overrideJobStore } from '#core/ports';

/**
 * Job outcome metrics in CloudWatch's embedded metric format: one JSON line on stdout per data point,
 * which Lambda's log pipeline turns into metrics (no API call, no IAM grant). The namespace comes from
 * POWERTOOLS_METRICS_NAMESPACE (the stack sets the stack's name); POWERTOOLS_METRICS_DISABLED=true
 * keeps them out of the local runtime's console and the test output.
 */
const metrics = new Metrics({ serviceName: JOB_METRICS.service });

type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];

/** Every data point is flushed at once with its own dimensions, so no handler has to publish at its end. */
function emit(name: string, unit: Unit, value: number, dimensions: Record<string, string> = {}): void {
  const single = metrics.singleMetric();
  for (const [dimension, dimensionValue] of Object.entries(dimensions)) {
    single.addDimension(dimension, dimensionValue);
  }
  single.addMetric(name, unit, value);
}

/** A message the dead-letter handler received: a job failed on every delivery. */
export function recordDeadLetteredMessage(): void {
  emit(JOB_METRICS.deadLetteredMessages, MetricUnit.Count, 1);
}

/** Messages the worker handed back for redelivery in one invocation. */
export function recordWorkerFailures(count: number): void {
  if (count > 0) emit(JOB_METRICS.workerFailures, MetricUnit.Count, count);
}

function recordJobEnded(outcome: 'completed' | JobErrorCode): void {
  emit(JOB_METRICS.jobsEnded, MetricUnit.Count, 1, { [JOB_METRICS.outcomeDimension]: outcome });
}

/**
 * The job store, recording each job that ends through it: its outcome (`completed` or the error code),
 * its audio minutes, and for a job claimed and completed in this process (a transcriber that works in
 * the worker) the real-time factor. A transition that did not happen (the job had already ended)
 * records nothing, so a redelivered message is never counted twice.
 */
export function withJobMetrics(jobs: JobStore, settings: { engine?: EngineName } = {}): JobStore {
  const claimedAt = new Map<string, number>();
  return overrideJobStore(jobs, {
    async claim(id, lease) {
      const outcome = await jobs.claim(id, lease);
      if (outcome.outcome === 'claimed') claimedAt.set(id, performance.now());
      return outcome;
    },
    async complete(id, update) {
      const completed = await jobs.complete(id, update);
      const started = claimedAt.get(id);
      claimedAt.delete(id);
      if (!completed) return completed;
      recordJobEnded('completed');
      const audioMs = update.audio_duration_ms;
      if (audioMs > 0) {
        emit(JOB_METRICS.audioMinutes, MetricUnit.NoUnit, audioMs / 60_000);
        if (started !== undefined && settings.engine) {
          emit(JOB_METRICS.realTimeFactor, MetricUnit.NoUnit, (performance.now() - started) / audioMs, {
            [JOB_METRICS.engineDimension]: settings.engine,
          });
        }
      }
      return completed;
    },
    async fail(id, error) {
      const failed = await jobs.fail(id, error);
      claimedAt.delete(id);
      if (failed) recordJobEnded(error.code);
      return failed;
    },
  });
}
