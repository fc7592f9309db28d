import { AmazonTranscribe } from '#aws/amazon-transcribe';
import { BedrockSummarizer } from '#aws/bedrock-summarizer';
import { createBedrockClient, createTranscribeClient } from '#aws/clients';
import type { ServiceConfig } from '#aws/config';
import type { MediaStore, Summarizer, Transcriber } from '#core/ports';
import { cutAround, LocalTranscriber } from '#speech/local-transcriber';
import { SphinxRecognizer } from '#speech/sphinx';
import { LocalSummarizer } from '#speech/summarizer';
import { WhisperRecognizer } from '#speech/whisper';

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
    case 'whisper':
      return new LocalTranscriber(whisperRecognizer(config), { cut: cutAround(config.chunkSeconds) });
  }
}

const whisperRecognizers = new Map<string, WhisperRecognizer>();
/** One recognizer per model file and process: it holds the model once loaded. */
function whisperRecognizer(config: ServiceConfig): WhisperRecognizer {
  const file = config.whisperModel;
  if (!file) {
    throw new Error(
      'engine whisper needs WHISPER_MODEL, the path of a ggml model file (`npm run models:fetch -- base.en` downloads one into models/).',
    );
  }
  let recognizer = whisperRecognizers.get(file);
  if (!recognizer) {
    recognizer = new WhisperRecognizer(file);
    whisperRecognizers.set(file, recognizer);
  }
  return recognizer;
}

/**
 * Checks, when the worker starts, what its engine needs and a job could only find missing: the
 * whisper model file (present, a whole ggml whisper model) and the whisper binding. Throws with a
 * message that says what to do, so that a misconfigured worker fails once at start, not per job.
 */
export function checkEngineSetup(config: ServiceConfig): void {
  if (config.engine === 'whisper') whisperRecognizer(config);
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
