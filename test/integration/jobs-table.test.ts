import { beforeAll } from 'vitest';
import { awsServices } from '#aws/services';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { describeJobStore } from '#test/helpers/job-store-contract';

beforeAll(async () => {
  await useFreshResources();
});

describeJobStore('DynamoDB', () => awsServices().jobs);
