import { readFile } from 'node:fs/promises';
import { expect } from 'vitest';
import { handler as submit } from '#api/submit';
import { apiEvent, multipartBody } from './events.ts';
import { type Sample, samplePath } from './samples.ts';

/** Submits a sample through the real submit handler: audio to S3, job to DynamoDB, message to SQS. */
export async function submitSample(
  sample: Sample,
  tenantId: string,
  fields: Record<string, string> = {},
): Promise<string> {
  const form = new FormData();
  form.append('audio', new Blob([await readFile(samplePath(sample))]), 'input');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const { body, contentType } = await multipartBody(form);
  const response = await submit(
    apiEvent({
      method: 'POST',
      path: '/v1-beta/transcript',
      tenantId,
      headers: { 'content-type': contentType },
      body,
    }),
  );
  expect(response.statusCode).toBe(200);
  return JSON.parse(response.body).id;
}
