import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENGINES, JOB_METRICS, OPERATOR_ERROR_CODES } from '#commons/contract';
import { JOB_ERROR_CODES } from '#core/errors';

export interface AlarmsProps {
  api: RestApi;
  worker: IFunction;
  deadLetterHandler: IFunction;
  jobsQueue: Queue;
  deadLetterQueue: Queue;
  /** The namespace of the job metrics (the stack's name). */
  metricsNamespace: string;
  /** Where alarm notifications go; without it, subscribe to the topic yourself. */
  alarmEmail?: string;
  /** Age of the oldest queued message that means jobs are waiting too long. */
  maxQueueAgeSeconds: number;
}

/** How long the dead-letter handler may leave a message in its queue before that means it cannot drain it. */
const DEAD_LETTER_BACKLOG_SECONDS = 15 * 60;

/**
 * Alarms on what happens to jobs, from the metrics the worker and the dead-letter handler emit (jobs
 * ended in error by code, dead-lettered messages, messages the worker handed back) and from the
 * services (crashed invocations, API 5xx, queue ages); and a dashboard of the same.
 */
export class Alarms extends Construct {
  readonly topic: Topic;
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: AlarmsProps) {
    super(scope, id);
    this.topic = new Topic(this, 'Topic', { displayName: 'Transcription service alarms', enforceSSL: true });
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    const action = new SnsAction(this.topic);
    const fiveMinutes = Duration.minutes(5);

    const jobMetric = (metricName: string, dimensions: Record<string, string> = {}, statistic = 'Sum') =>
      new Metric({
        namespace: props.metricsNamespace,
        metricName,
        dimensionsMap: { service: JOB_METRICS.service, ...dimensions },
        statistic,
        period: fiveMinutes,
      });
    const jobsEnded = (outcome: string) =>
      jobMetric(JOB_METRICS.jobsEnded, { [JOB_METRICS.outcomeDimension]: outcome });

    const alarm = (
      id: string,
      description: string,
      metric: IMetric,
      threshold: number,
      evaluationPeriods = 1,
    ) => {
      const created = new Alarm(this, id, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(action);
      return created;
    };

    for (const code of OPERATOR_ERROR_CODES) {
      alarm(
        `JobsFailed-${code}`,
        `Jobs ended in error with code ${code}: the service failed them, not their input. See the README's alarm table.`,
        jobsEnded(code),
        0,
      );
    }
    alarm(
      'DeadLetteredMessages',
      'The dead-letter handler received messages: jobs failed on every delivery and were put in error.',
      jobMetric(JOB_METRICS.deadLetteredMessages),
      0,
    );
    alarm(
      'WorkerFailures',
      'The worker handed messages back for redelivery in each of the last 15 minutes: a dependency keeps failing.',
      jobMetric(JOB_METRICS.workerFailures),
      0,
      3,
    );
    alarm(
      'WorkerErrors',
      'Worker invocations crashed or timed out (failures inside a batch are WorkerFailures instead).',
      props.worker.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
      0,
    );
    alarm(
      'DeadLetterBacklog',
      'A dead-lettered message has waited 15 minutes: the dead-letter handler cannot put its job in error.',
      props.deadLetterQueue.metricApproximateAgeOfOldestMessage({
        period: fiveMinutes,
        statistic: 'Maximum',
      }),
      DEAD_LETTER_BACKLOG_SECONDS,
    );
    // 5XXError is 0 or 1 per request, so its average is the rate.
    alarm(
      'Api5xxRate',
      'More than 5% of API requests answered 5xx.',
      props.api.metricServerError({ period: fiveMinutes, statistic: 'Average' }),
      0.05,
      2,
    );
    alarm(
      'OldestQueuedJob',
      'Jobs wait in the queue longer than expected: the worker is at its concurrency or not consuming.',
      props.jobsQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: 'Maximum' }),
      props.maxQueueAgeSeconds,
    );

    const wide = { width: 12, height: 6 };
    this.dashboard = new Dashboard(this, 'Dashboard', {
      widgets: [
        [
          new GraphWidget({
            ...wide,
            title: 'Jobs ended, by outcome',
            left: ['completed', ...JOB_ERROR_CODES].map((outcome) => jobsEnded(outcome)),
            stacked: true,
          }),
          new GraphWidget({
            ...wide,
            title: 'Audio minutes transcribed',
            left: [jobMetric(JOB_METRICS.audioMinutes)],
          }),
        ],
        [
          new GraphWidget({
            ...wide,
            title: 'Real-time factor (processing time / audio time), p50 and p90',
            left: ENGINES.flatMap((engine) =>
              ['p50', 'p90'].map((statistic) =>
                jobMetric(JOB_METRICS.realTimeFactor, { [JOB_METRICS.engineDimension]: engine }, statistic),
              ),
            ),
          }),
          new GraphWidget({
            ...wide,
            title: 'Dead-lettered messages and worker failures',
            left: [jobMetric(JOB_METRICS.deadLetteredMessages), jobMetric(JOB_METRICS.workerFailures)],
          }),
        ],
        [
          new GraphWidget({
            ...wide,
            title: 'Oldest message age (s): jobs queue, dead-letter queue',
            left: [
              props.jobsQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes }),
              props.deadLetterQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes }),
            ],
          }),
          new GraphWidget({
            ...wide,
            title: 'Lambda errors and API 5xx',
            left: [
              props.worker.metricErrors({ period: fiveMinutes }),
              props.deadLetterHandler.metricErrors({ period: fiveMinutes }),
            ],
            right: [props.api.metricServerError({ period: fiveMinutes, statistic: 'Sum' })],
          }),
        ],
      ],
    });
  }
}
