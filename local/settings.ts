import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DEFAULT_AUTHORIZER_CACHE_SECONDS, SWEEP_INTERVAL_SECONDS } from '#commons/contract';
import { readEnvironment } from '#commons/environment';

/** The variables `npm start` reads, beside the functions' own (ENV in the contract). */
export const LOCAL_ENV = {
  port: 'PORT',
  apiKey: 'LOCAL_API_KEY',
  apiKeys: 'LOCAL_API_KEYS',
  authorizerCacheSeconds: 'AUTHORIZER_CACHE_SECONDS',
  workerConcurrency: 'WORKER_CONCURRENCY',
  visibilityTimeoutSeconds: 'QUEUE_VISIBILITY_TIMEOUT_SECONDS',
  runtimeFile: 'LOCAL_RUNTIME_FILE',
  sweepIntervalSeconds: 'SWEEP_INTERVAL_SECONDS',
} as const;

const positive = z.coerce.number().int().positive();

const localEnvironment = z.object({
  [LOCAL_ENV.port]: z.coerce.number().int().min(0).max(65_535).default(3000),
  [LOCAL_ENV.apiKey]: z.string().min(16).optional(),
  [LOCAL_ENV.apiKeys]: z
    .string()
    .transform((list, context) => {
      const keys: { key: string; tenantId: string }[] = [];
      for (const entry of list
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean)) {
        const [key = '', tenantId = ''] = entry.split('=');
        if (key.length < 16 || !/^[A-Za-z0-9_-]{1,64}$/.test(tenantId)) {
          context.addIssue({
            code: 'custom',
            message: 'expected key=tenant,… with keys of 16 characters or more',
          });
          return z.NEVER;
        }
        keys.push({ key, tenantId });
      }
      return keys;
    })
    .default([]),
  [LOCAL_ENV.authorizerCacheSeconds]: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(DEFAULT_AUTHORIZER_CACHE_SECONDS),
  [LOCAL_ENV.workerConcurrency]: positive.default(availableParallelism()),
  [LOCAL_ENV.visibilityTimeoutSeconds]: positive.optional(),
  [LOCAL_ENV.sweepIntervalSeconds]: positive.default(SWEEP_INTERVAL_SECONDS),
  [LOCAL_ENV.runtimeFile]: z
    .string()
    .default(join(dirname(fileURLToPath(import.meta.url)), '..', '.local', 'runtime.json')),
});

export interface LocalSettings {
  port: number;
  /** Registered for tenant `local` instead of a random key. */
  apiKey?: string;
  /** More keys, each for its own tenant, so that tenant isolation can be tried from outside. */
  apiKeys: { key: string; tenantId: string }[];
  /** As the stack's authorizer cache: how long a key's decision holds (a revoked key works that long). */
  authorizerCacheSeconds: number;
  /** Worker invocations at once. */
  workerConcurrency: number;
  /** Overrides the queue's visibility timeout, so that retries can be seen locally. */
  visibilityTimeoutSeconds?: number;
  /** Where a running runtime tells other commands (`npm run keys -- --local`) its endpoints. */
  runtimeFile: string;
  /** How often the sweeper runs (as the stack's schedule does). */
  sweepIntervalSeconds: number;
}

/** The local runtime's settings from the environment; a malformed value stops it with the variable's name. */
export function readLocalSettings(env: NodeJS.ProcessEnv = process.env): LocalSettings {
  const values = readEnvironment(localEnvironment, env);
  const apiKey = values[LOCAL_ENV.apiKey];
  const visibilityTimeoutSeconds = values[LOCAL_ENV.visibilityTimeoutSeconds];
  return {
    port: values[LOCAL_ENV.port],
    ...(apiKey ? { apiKey } : {}),
    apiKeys: values[LOCAL_ENV.apiKeys],
    authorizerCacheSeconds: values[LOCAL_ENV.authorizerCacheSeconds],
    workerConcurrency: values[LOCAL_ENV.workerConcurrency],
    ...(visibilityTimeoutSeconds ? { visibilityTimeoutSeconds } : {}),
    runtimeFile: values[LOCAL_ENV.runtimeFile],
    sweepIntervalSeconds: values[LOCAL_ENV.sweepIntervalSeconds],
  };
}
