import { readFile } from 'node:fs/promises';
import { expect } from 'vitest';
import { handler as submit } from '#api/submit';
import type { RequestErrorCode } from '#core/errors';
import type { SubmissionRecord } from '#core/job';
import { apiEvent, multipartBody } from './events.ts';
import { type Sample, samplePath } from './samples.ts';

/** A submission answer: the job record, or an error. */
export type SubmitBody = Partial<SubmissionRecord> & {
  error?: { code: RequestErrorCode; message: string; field?: string };
};

/** Posts a form to the real submit handler, as API Gateway would after the authorizer let it through. */
export async function submitForm(
  form: FormData,
  tenantId: string,
  options: { base64?: boolean } = {},
): Promise<{ status: number; body: SubmitBody }> {
  const { body, contentType } = await multipartBody(form);
  const response = await submit(
    apiEvent({
      method: 'POST',
      path: '/v1-beta/transcript',
      tenantId,
      headers: { 'Content-Type': contentType },
      body,
      ...options,
    }),
  );
  return { status: response.statusCode, body: JSON.parse(response.body) as SubmitBody };
}

/** Submits a sample: audio to S3, job to DynamoDB, message to SQS. Answers the job id. */
export async function submitSample(
  sample: Sample,
  tenantId: string,
  fields: Record<string, string> = {},
): Promise<string> {
  const form = new FormData();
  form.append('audio', new Blob([await readFile(samplePath(sample))]), 'input');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const { status, body } = await submitForm(form, tenantId);
  expect(status).toBe(200);
  return body.id ?? '';
}
