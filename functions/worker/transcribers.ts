import { AmazonTranscribe } from '#aws/amazon-transcribe';
import { BedrockSummarizer } from '#aws/bedrock-summarizer';
import { createBedrockClient, createTranscribeClient } from '#aws/clients';
import type { ServiceConfig } from '#aws/config';
import type { MediaStore, Summarizer, Transcriber } from '#core/ports';
import { cutAround, LocalTranscriber } from '#speech/local-transcriber';
import { SphinxRecognizer } from '#speech/sphinx';
import { LocalSummarizer } from '#speech/summarizer';

/** The transcriber the `engine` setting names. */
export function createTranscriber(config: ServiceConfig, media: MediaStore): Transcriber {
  switch (config.engine) {
    case 'sphinx':
      return new LocalTranscriber(new SphinxRecognizer(), { cut: cutAround(config.chunkSeconds) });
    case 'transcribe':
      if (!config.transcribeJobPrefix) throw new Error('engine transcribe needs TRANSCRIBE_JOB_PREFIX.');
      return new AmazonTranscribe(createTranscribeClient(config), media, {
        bucket: config.mediaBucket,
        transcribeJobPrefix: config.transcribeJobPrefix,
      });
  }
}

/** The summarizer the `summarizer` setting names. */
export function createSummarizer(config: ServiceConfig): Summarizer {
  switch (config.summarizer) {
    case 'local':
      return new LocalSummarizer();
    case 'bedrock':
      if (!config.bedrockModelId) throw new Error('summarizer bedrock needs BEDROCK_MODEL_ID.');
      return new BedrockSummarizer(createBedrockClient(config), config.bedrockModelId);
  }
}
