import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { ENV, type EnvName, MEDIA_PREFIXES, type MediaPrefix } from '#commons/contract';

/**
 * Each helper gives a function access to one resource and tells it where the resource is, in one call,
 * so that no function can be granted a resource without its variable or the reverse. Grants name
 * explicit actions: never `dynamodb:*`, `s3:*` or `s3:Get*`.
 */

/** Item actions on a table itself (not its indexes), and the table's name in `variable`. */
export function bindTable(fn: LambdaFunction, variable: EnvName, table: Table, actions: string[]): void {
  fn.addToRolePolicy(new PolicyStatement({ actions, resources: [table.tableArn] }));
  fn.addEnvironment(variable, table.tableName);
}

/** `dynamodb:Query` on one index of a table, and the table's name in `variable`. */
export function bindTableIndex(fn: LambdaFunction, variable: EnvName, table: Table, indexName: string): void {
  fn.addToRolePolicy(
    new PolicyStatement({ actions: ['dynamodb:Query'], resources: [`${table.tableArn}/index/${indexName}`] }),
  );
  fn.addEnvironment(variable, table.tableName);
}

/** Object actions under the named prefixes of the bucket, and the bucket's name in `variable`. */
export function bindBucket(
  fn: LambdaFunction,
  variable: EnvName,
  bucket: Bucket,
  actionsByPrefix: Partial<Record<MediaPrefix, string[]>>,
): void {
  for (const [prefix, actions] of Object.entries(actionsByPrefix) as [MediaPrefix, string[]][]) {
    fn.addToRolePolicy(
      new PolicyStatement({ actions, resources: [bucket.arnForObjects(`${MEDIA_PREFIXES[prefix]}*`)] }),
    );
  }
  fn.addEnvironment(variable, bucket.bucketName);
}

/** Sending to the queue, and its URL in `variable`. */
export function bindQueue(fn: LambdaFunction, variable: EnvName, queue: Queue): void {
  queue.grantSendMessages(fn);
  fn.addEnvironment(variable, queue.queueUrl);
}

/**
 * The namespace of the job metrics a function emits: the stack's name, which the alarms and the
 * dashboard read. Embedded-format metrics travel through the function's logs, so no grant is needed.
 */
export function bindJobMetrics(fn: LambdaFunction, namespace: string): void {
  fn.addEnvironment(ENV.metricsNamespace, namespace);
}
