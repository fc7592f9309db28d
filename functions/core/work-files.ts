import pLimit from 'p-limit';
import { z } from 'zod';
import { workKey } from '#commons/contract';
import type { Job } from './job.ts';
import type { MediaStore } from './ports.ts';

/**
 * A fanned-out job's working files under `work/TENANT/JOB/`: each chunk's audio and what its worker needs
 * to know of it, each chunk's result, and the plan. Workers write and read them; the assembly and a
 * deletion remove them.
 */

/** What a chunk's worker reads, stored with the chunk's audio as it is cut: its files and its details. */
export const storedChunk = z.object({ files: z.array(z.string()).min(1), details: z.unknown() });
export type StoredChunk = z.infer<typeof storedChunk>;

/** What the assembly reads once the whole file is cut: the transcriber's plan and each chunk's files. */
export const chunkManifest = z.object({
  plan: z.object({
    chunks: z.number().int().positive(),
    audio_duration_ms: z.number(),
    details: z.unknown(),
  }),
  files: z.array(z.array(z.string())),
});
export type ChunkManifest = z.infer<typeof chunkManifest>;

export const MANIFEST_FILE = 'plan.json';
export const chunkResultFile = (index: number) => `result-${index}.json`;
export const storedChunkFile = (index: number) => `chunk-${index}.json`;

/** Reads and deletes of working files in flight at once: a four-hour file has a few hundred. */
export const STORE_CALLS_AT_ONCE = 16;

type JobKey = Pick<Job, 'id' | 'tenantId'>;

export async function readManifest(media: MediaStore, job: JobKey): Promise<ChunkManifest> {
  return chunkManifest.parse(await media.readJson(workKey(job.tenantId, job.id, MANIFEST_FILE)));
}

export async function readStoredChunk(media: MediaStore, job: JobKey, index: number): Promise<StoredChunk> {
  return storedChunk.parse(await media.readJson(workKey(job.tenantId, job.id, storedChunkFile(index))));
}

/** A job's working files: its plan, its chunks' audio and records, and their results. */
export function workFiles(manifest: ChunkManifest): string[] {
  return [MANIFEST_FILE, ...chunkFiles(manifest.files)];
}

/** The working files of the chunks whose audio files are `files` (per chunk): audio, record and result. */
export function chunkFiles(files: string[][]): string[] {
  return files.flatMap((names, index) => [...names, storedChunkFile(index), chunkResultFile(index)]);
}

/** Best effort, a few at a time: the bucket's lifecycle rule removes what is left behind. */
export async function removeWorkFiles(media: MediaStore, job: JobKey, names: string[]): Promise<void> {
  const limit = pLimit(STORE_CALLS_AT_ONCE);
  await Promise.allSettled(
    names.map((name) => limit(() => media.delete(workKey(job.tenantId, job.id, name)))),
  );
}

/**
 * Every working file a job's plan names, for a job deleted while its chunks were out: they hold its
 * audio, which a deletion must not leave for the lifecycle rule. Nothing when the job was never cut.
 */
export async function removeAllWorkFiles(media: MediaStore, job: JobKey): Promise<void> {
  const manifestKey = workKey(job.tenantId, job.id, MANIFEST_FILE);
  if (!(await media.describe(manifestKey))) return;
  const manifest = chunkManifest.safeParse(await media.readJson(manifestKey));
  await removeWorkFiles(media, job, manifest.success ? workFiles(manifest.data) : [MANIFEST_FILE]);
}
