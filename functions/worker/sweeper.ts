import { withJobMetrics } from '#aws/job-metrics';
import { awsServices } from '#aws/services';
import { logger } from '#commons/logger';
import { type SweepReport, sweepJobs } from '#core/sweep';

/**
 * Runs on a schedule (every SWEEP_INTERVAL_SECONDS; locally on a timer): moves the active jobs that
 * nothing moved when something should have, so that no job waits for ever.
 */
export async function handler(): Promise<SweepReport> {
  const { jobs, queue } = awsServices();
  // Jobs it ends past their deadline count among the jobs failed, as any other.
  const report = await sweepJobs({ jobs: withJobMetrics(jobs), queue, clock: () => new Date() });
  const moved = report.requeued.length + report.checked.length + report.failed.length;
  // Each of these is a job something should have moved and did not: worth an operator's look.
  if (moved > 0) logger.warn('Swept jobs', { ...report });
  return report;
}
