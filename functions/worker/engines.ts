import { BedrockSummarizer } from '#aws/bedrock-summarizer';
import { createBedrockClient, createTranscribeClient } from '#aws/clients';
import type { AwsConfig } from '#aws/config';
import { TranscribeEngine } from '#aws/transcribe-engine';
import type { AsyncTranscriber, MediaStore, Summarizer, Transcriber } from '#core/ports';
import { LocalTranscriber } from '#speech/local-transcriber';
import { SphinxEngine } from '#speech/sphinx';
import { LocalSummarizer } from '#speech/summarizer';

export const ENGINES = ['sphinx', 'transcribe'] as const;
export const SUMMARIZERS = ['local', 'bedrock'] as const;

/** The engine the configuration asks for: ENGINE=sphinx (default) or transcribe. */
export function createTranscriber(
  config: AwsConfig,
  media: MediaStore,
  env: NodeJS.ProcessEnv = process.env,
): Transcriber | AsyncTranscriber {
  const engine = env.ENGINE ?? 'sphinx';
  switch (engine) {
    case 'sphinx':
      return new LocalTranscriber(new SphinxEngine());
    case 'transcribe':
      if (!config.transcribeJobPrefix) throw new Error('ENGINE=transcribe needs TRANSCRIBE_JOB_PREFIX.');
      return new TranscribeEngine(createTranscribeClient(config), media, {
        bucket: config.mediaBucket,
        jobPrefix: config.transcribeJobPrefix,
        outputPrefix: config.transcribeOutputPrefix,
      });
    default:
      throw new Error(`Unknown ENGINE "${engine}"; expected one of: ${ENGINES.join(', ')}.`);
  }
}

/** The summarizer the configuration asks for: SUMMARIZER=local (default) or bedrock with BEDROCK_MODEL_ID. */
export function createSummarizer(config: AwsConfig, env: NodeJS.ProcessEnv = process.env): Summarizer {
  const summarizer = env.SUMMARIZER ?? 'local';
  switch (summarizer) {
    case 'local':
      return new LocalSummarizer();
    case 'bedrock':
      if (!env.BEDROCK_MODEL_ID) throw new Error('SUMMARIZER=bedrock needs BEDROCK_MODEL_ID.');
      return new BedrockSummarizer(createBedrockClient(config), env.BEDROCK_MODEL_ID);
    default:
      throw new Error(`Unknown SUMMARIZER "${summarizer}"; expected one of: ${SUMMARIZERS.join(', ')}.`);
  }
}
