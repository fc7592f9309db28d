import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface AlarmsProps {
  api: RestApi;
  worker: IFunction;
  jobsQueue: Queue;
  deadLetterQueue: Queue;
  /** Where alarm notifications go; without it, subscribe to the topic yourself. */
  alarmEmail?: string;
  /** Age of the oldest queued message that means jobs are waiting too long. */
  maxQueueAgeSeconds: number;
}

/** Alarms an operator needs: lost work, failing workers, failing API, growing backlog. */
export class Alarms extends Construct {
  readonly topic: Topic;

  constructor(scope: Construct, id: string, props: AlarmsProps) {
    super(scope, id);
    this.topic = new Topic(this, 'Topic', { displayName: 'Transcription service alarms', enforceSSL: true });
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    const action = new SnsAction(this.topic);
    const fiveMinutes = Duration.minutes(5);

    const alarms = [
      new Alarm(this, 'DeadLetters', {
        alarmDescription: 'Messages reached the dead-letter queue: jobs failed on every retry.',
        metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'WorkerErrors', {
        alarmDescription: 'The worker Lambda failed invocations.',
        metric: props.worker.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'Api5xxRate', {
        alarmDescription: 'More than 5% of API requests answered 5xx.',
        // 5XXError is 0 or 1 per request, so its average is the rate.
        metric: props.api.metricServerError({ period: fiveMinutes, statistic: 'Average' }),
        threshold: 0.05,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      new Alarm(this, 'OldestQueuedJob', {
        alarmDescription: 'Jobs wait in the queue longer than expected.',
        metric: props.jobsQueue.metricApproximateAgeOfOldestMessage({
          period: fiveMinutes,
          statistic: 'Maximum',
        }),
        threshold: props.maxQueueAgeSeconds,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    ];
    for (const alarm of alarms) alarm.addAlarmAction(action);
  }
}
