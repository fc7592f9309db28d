import { z } from 'zod';

/** What a worker is asked to do by one queue message. */
export type WorkerMessage =
  /** Start a job (sent on submission). */
  | { kind: 'process'; jobId: string }
  /** See whether an asynchronous engine has finished a job (scheduled by the worker). */
  | { kind: 'check'; jobId: string; attempt: number }
  /** An engine says one of its jobs changed state (Amazon Transcribe through EventBridge). */
  | { kind: 'engine-event'; engineJobName: string; status: string };

const processMessage = z.object({ jobId: z.string().min(1) }).strict();
const checkMessage = z.object({ jobId: z.string().min(1), check: z.number().int().positive() }).strict();
/** The EventBridge event "Transcribe Job State Change", as the rule delivers it to the queue. */
const transcribeEvent = z.object({
  source: z.literal('aws.transcribe'),
  'detail-type': z.literal('Transcribe Job State Change'),
  detail: z.object({ TranscriptionJobName: z.string().min(1), TranscriptionJobStatus: z.string() }),
});

export function encodeJobMessage(jobId: string): string {
  return JSON.stringify({ jobId });
}

export function encodeCheckMessage(jobId: string, attempt: number): string {
  return JSON.stringify({ jobId, check: attempt });
}

/** Throws when the body is none of the messages a worker understands. */
export function decodeWorkerMessage(body: string): WorkerMessage {
  const value: unknown = JSON.parse(body);
  const check = checkMessage.safeParse(value);
  if (check.success) return { kind: 'check', jobId: check.data.jobId, attempt: check.data.check };
  const process = processMessage.safeParse(value);
  if (process.success) return { kind: 'process', jobId: process.data.jobId };
  const event = transcribeEvent.parse(value);
  return {
    kind: 'engine-event',
    engineJobName: event.detail.TranscriptionJobName,
    status: event.detail.TranscriptionJobStatus,
  };
}

/** An engine's name for our job: a per-deployment prefix, so that a deployment sees only its own jobs. */
export function engineJobName(prefix: string, jobId: string): string {
  return `${prefix}${jobId}`;
}

/** The job a message is about, or undefined for an engine job of another deployment. */
export function jobIdOfMessage(message: WorkerMessage, enginePrefix: string): string | undefined {
  if (message.kind !== 'engine-event') return message.jobId;
  const { engineJobName: name } = message;
  return enginePrefix && name.startsWith(enginePrefix) ? name.slice(enginePrefix.length) : undefined;
}
