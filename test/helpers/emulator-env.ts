import { inject } from 'vitest';

// Adapters read their endpoints from the environment, as the handlers do on AWS.
const endpoints = inject('emulatorEndpoints');
process.env.DYNAMODB_ENDPOINT = endpoints.dynamodb;
process.env.S3_ENDPOINT = endpoints.s3;
process.env.SQS_ENDPOINT = endpoints.sqs;
