import type { Transcriber } from '#core/ports';
import { LocalTranscriber } from '#speech/local-transcriber';
import { SphinxEngine } from '#speech/sphinx';

export const ENGINES = ['sphinx'] as const;

/** The transcriber the configuration asks for (ENGINE, default `sphinx`). */
export function createTranscriber(env: NodeJS.ProcessEnv = process.env): Transcriber {
  const engine = env.ENGINE ?? 'sphinx';
  switch (engine) {
    case 'sphinx':
      return new LocalTranscriber(new SphinxEngine());
    default:
      throw new Error(`Unknown ENGINE "${engine}"; expected one of: ${ENGINES.join(', ')}.`);
  }
}
