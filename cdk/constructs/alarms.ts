import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { Alarm, ComparisonOperator, type IMetric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
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

    const alarm = (
      id: string,
      description: string,
      metric: IMetric,
      threshold: number,
      evaluationPeriods = 1,
    ) =>
      new Alarm(this, id, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    const alarms = [
      alarm(
        'DeadLetters',
        'Messages reached the dead-letter queue: jobs failed on every retry.',
        props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        0,
      ),
      alarm(
        'WorkerErrors',
        'The worker Lambda failed invocations.',
        props.worker.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
        0,
      ),
      // 5XXError is 0 or 1 per request, so its average is the rate.
      alarm(
        'Api5xxRate',
        'More than 5% of API requests answered 5xx.',
        props.api.metricServerError({ period: fiveMinutes, statistic: 'Average' }),
        0.05,
        2,
      ),
      alarm(
        'OldestQueuedJob',
        'Jobs wait in the queue longer than expected.',
        props.jobsQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: 'Maximum' }),
        props.maxQueueAgeSeconds,
      ),
    ];
    for (const alarm of alarms) alarm.addAlarmAction(action);
  }
}
