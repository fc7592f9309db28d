import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { readEnvironment } from '#commons/environment';

/** The variables `npm start` reads, beside the functions' own (ENV in the contract). */
export const LOCAL_ENV = {
  port: 'PORT',
  apiKey: 'LOCAL_API_KEY',
  workerConcurrency: 'WORKER_CONCURRENCY',
  visibilityTimeoutSeconds: 'QUEUE_VISIBILITY_TIMEOUT_SECONDS',
  runtimeFile: 'LOCAL_RUNTIME_FILE',
} as const;

const positive = z.coerce.number().int().positive();

const localEnvironment = z.object({
  [LOCAL_ENV.port]: z.coerce.number().int().min(0).max(65_535).default(3000),
  [LOCAL_ENV.apiKey]: z.string().min(16).optional(),
  [LOCAL_ENV.workerConcurrency]: positive.default(availableParallelism()),
  [LOCAL_ENV.visibilityTimeoutSeconds]: positive.optional(),
  [LOCAL_ENV.runtimeFile]: z
    .string()
    .default(join(dirname(fileURLToPath(import.meta.url)), '..', '.local', 'runtime.json')),
});

export interface LocalSettings {
  port: number;
  /** Registered for tenant `local` instead of a random key. */
  apiKey?: string;
  /** Worker invocations at once. */
  workerConcurrency: number;
  /** Overrides the queue's visibility timeout, so that retries can be seen locally. */
  visibilityTimeoutSeconds?: number;
  /** Where a running runtime tells other commands (`npm run keys -- --local`) its endpoints. */
  runtimeFile: string;
}

/** The local runtime's settings from the environment; a malformed value stops it with the variable's name. */
export function readLocalSettings(env: NodeJS.ProcessEnv = process.env): LocalSettings {
  const values = readEnvironment(localEnvironment, env);
  const apiKey = values[LOCAL_ENV.apiKey];
  const visibilityTimeoutSeconds = values[LOCAL_ENV.visibilityTimeoutSeconds];
  return {
    port: values[LOCAL_ENV.port],
    ...(apiKey ? { apiKey } : {}),
    workerConcurrency: values[LOCAL_ENV.workerConcurrency],
    ...(visibilityTimeoutSeconds ? { visibilityTimeoutSeconds } : {}),
    runtimeFile: values[LOCAL_ENV.runtimeFile],
  };
}
