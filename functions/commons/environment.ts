import type { z } from 'zod';

/**
 * Parses environment variables with a schema keyed by their names. An empty variable counts as unset;
 * a malformed one throws, naming the variable, so that a misconfigured function fails at start.
 */
export function readEnvironment<Schema extends z.ZodType>(
  schema: Schema,
  env: NodeJS.ProcessEnv,
): z.infer<Schema> {
  const parsed = schema.safeParse(
    Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')),
  );
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`Invalid ${String(issue?.path[0])}: ${issue?.message}`);
  }
  return parsed.data;
}
