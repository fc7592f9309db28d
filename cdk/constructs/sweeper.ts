import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Construct } from 'constructs';
import { ENV, RESOURCES, SWEEP_INTERVAL_SECONDS } from '#commons/contract';
import { bindBucket, bindQueue, bindTable, bindTableIndex } from './bind.ts';
import type { Data } from './data.ts';
import type { Queues } from './queues.ts';
import { ServiceFunction } from './service-function.ts';

export interface SweeperProps {
  data: Data;
  queues: Queues;
}

/** The sweeper on its schedule: it moves the active jobs that nothing moved when something should have. */
export class Sweeper extends Construct {
  readonly function: ServiceFunction;
  readonly schedule: Rule;

  constructor(scope: Construct, id: string, props: SweeperProps) {
    super(scope, id);
    const { jobsTable } = props.data;
    this.function = new ServiceFunction(this, 'Function', {
      entry: 'functions/worker/sweeper.ts',
      description:
        'Re-queues, checks or fails jobs that nothing moved; removes jobs past a shorter retention',
      serviceName: 'transcription-sweeper',
      timeout: Duration.seconds(60),
      memorySize: 256,
    });
    bindTableIndex(this.function, ENV.jobsTable, jobsTable, RESOURCES.jobsTable.dueIndex.name);
    // Jobs past a shorter retention: their objects are removed, then the job (on a condition).
    bindTableIndex(this.function, ENV.jobsTable, jobsTable, RESOURCES.jobsTable.expiryIndex.name);
    bindTable(this.function, ENV.jobsTable, jobsTable, ['dynamodb:UpdateItem', 'dynamodb:DeleteItem']);
    bindBucket(this.function, ENV.mediaBucket, props.data.mediaBucket, {
      audio: ['s3:DeleteObject'],
      results: ['s3:DeleteObject'],
      transcribeOutput: ['s3:DeleteObject'],
    });
    bindQueue(this.function, ENV.jobsQueueUrl, props.queues.jobsQueue);
    this.schedule = new Rule(this, 'Schedule', {
      description: 'Runs the job sweeper',
      schedule: Schedule.rate(Duration.seconds(SWEEP_INTERVAL_SECONDS)),
      targets: [new LambdaFunction(this.function, { retryAttempts: 2 })],
    });
  }
}
