import { withJobMetrics } from '#aws/job-metrics';
import { awsServices } from '#aws/services';
import { logger } from '#commons/logger';
import { expireJobs } from '#core/retention';
import { type SweepReport, sweepJobs } from '#core/sweep';

/**
 * Runs on a schedule (every SWEEP_INTERVAL_SECONDS; locally on a timer): moves the active jobs that
 * nothing moved when something should have, so that no job waits for ever, and removes the jobs whose
 * shorter retention (`retention_days`) has run out.
 */
export async function handler(): Promise<SweepReport & { expired: string[] }> {
  const { finishingJobs, jobs, media, queue } = awsServices();
  const clock = () => new Date();
  // Jobs it ends past their deadline count among the jobs failed, as any other.
  const report = await sweepJobs({ jobs: withJobMetrics(finishingJobs), queue, clock });
  const moved = report.requeued.length + report.checked.length + report.failed.length;
  // Each of these is a job something should have moved and did not: worth an operator's look.
  if (moved > 0) logger.warn('Swept jobs', { ...report });
  const expired = await expireJobs({ jobs, media, clock });
  if (expired.length > 0) logger.info('Removed jobs past their retention', { expired });
  return { ...report, expired };
}
