import { z } from 'zod';

/** The body of a queue message: which job to process. */
const jobMessage = z.object({ jobId: z.string().min(1) });

export function encodeJobMessage(jobId: string): string {
  return JSON.stringify({ jobId });
}

/** Throws when the body is not a job message. */
export function decodeJobMessage(body: string): string {
  return jobMessage.parse(JSON.parse(body)).jobId;
}
