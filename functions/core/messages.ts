import { z } from 'zod';
import { jobIdOfTranscribeJob } from '#commons/contract';

/** What a worker is asked to do by one queue message, decoded once by the handler that receives it. */
export type WorkerMessage =
  /** Start a job (sent on submission). */
  | { kind: 'process'; jobId: string }
  /** See whether an asynchronous transcriber has finished a job (scheduled by the worker). */
  | { kind: 'check'; jobId: string; attempt: number }
  /** Transcribe one chunk of a long job (sent when its audio is cut). */
  | { kind: 'chunk'; jobId: string; index: number }
  /** Amazon Transcribe says this deployment's job for `jobId` changed state (through EventBridge). */
  | { kind: 'transcribe-event'; jobId: string; status: string };

const processMessage = z.object({ jobId: z.string().min(1) }).strict();
const checkMessage = z.object({ jobId: z.string().min(1), check: z.number().int().positive() }).strict();
const chunkMessage = z.object({ jobId: z.string().min(1), chunk: z.number().int().nonnegative() }).strict();
/** The EventBridge event "Transcribe Job State Change", as the rule delivers it to the queue. */
const transcribeEvent = z.object({
  source: z.literal('aws.transcribe'),
  'detail-type': z.literal('Transcribe Job State Change'),
  detail: z.object({ TranscriptionJobName: z.string().min(1), TranscriptionJobStatus: z.string() }),
});

export function encodeProcessMessage(jobId: string): string {
  return JSON.stringify({ jobId });
}

export function encodeCheckMessage(jobId: string, attempt: number): string {
  return JSON.stringify({ jobId, check: attempt });
}

export function encodeChunkMessage(jobId: string, index: number): string {
  return JSON.stringify({ jobId, chunk: index });
}

/**
 * The message a queue body carries, or undefined for a Transcribe event about another deployment's
 * job. Throws when the body is none of the messages a worker understands.
 */
export function decodeWorkerMessage(body: string, transcribeJobPrefix: string): WorkerMessage | undefined {
  const value: unknown = JSON.parse(body);
  const check = checkMessage.safeParse(value);
  if (check.success) return { kind: 'check', jobId: check.data.jobId, attempt: check.data.check };
  const chunk = chunkMessage.safeParse(value);
  if (chunk.success) return { kind: 'chunk', jobId: chunk.data.jobId, index: chunk.data.chunk };
  const process = processMessage.safeParse(value);
  if (process.success) return { kind: 'process', jobId: process.data.jobId };
  const { detail } = transcribeEvent.parse(value);
  const jobId = jobIdOfTranscribeJob(transcribeJobPrefix, detail.TranscriptionJobName);
  return jobId ? { kind: 'transcribe-event', jobId, status: detail.TranscriptionJobStatus } : undefined;
}
