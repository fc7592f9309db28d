import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import pLimit, { type LimitFunction } from 'p-limit';
import type { JobOptions } from '#core/options';
import type { SyncTranscriber, Transcription } from '#core/ports';
import { assembleTranscript, type TimedWord } from '#core/result';
import { MAX_CHUNK_MS, planChunks } from './chunks.ts';
import { BicDiarizer, type Diarizer, speakerAt } from './diarization.ts';
import { decodeToWav, dualChannelSelection, probeMedia } from './media.ts';
import { formatWords } from './punctuation.ts';
import type { Recognizer } from './recognizer.ts';
import { detectSpeech, keepWordsInSpeech, type SpeechRegion } from './vad.ts';
import { detectVoicing, keepVoicedWords } from './voicing.ts';
import { wavDurationMs, writeWavSlice } from './wav.ts';

export interface LocalTranscriberSettings {
  /** Recogniser processes at once, over all channels and chunks of a job. */
  parallelism?: number;
  /** Audio longer than this is decoded as chunks cut at silences. */
  chunkAboveMs?: number;
  /** Who spoke when, with `speaker_diarization`: the classical `BicDiarizer` unless another is given. */
  diarizer?: Diarizer;
}

/**
 * The offline pipeline around a recognizer: probe, decode (per channel for dual-channel jobs), find
 * speech (voice activity over the whole file: a channel without any is not recognised at all, since
 * recognisers invent words in noise, tones and music), recognise (long audio as silence-split chunks in
 * parallel), drop words outside speech or without voiced audio, tell speakers apart, punctuate, and
 * assemble the result.
 */
export class LocalTranscriber implements SyncTranscriber {
  readonly mode = 'sync';
  private readonly limit: LimitFunction;
  private readonly chunkAboveMs: number;
  private readonly diarizer: Diarizer;

  constructor(
    private readonly recognizer: Recognizer,
    settings: LocalTranscriberSettings = {},
  ) {
    this.limit = pLimit(settings.parallelism ?? availableParallelism());
    this.chunkAboveMs = settings.chunkAboveMs ?? 2 * MAX_CHUNK_MS;
    this.diarizer = settings.diarizer ?? new BicDiarizer();
  }

  async transcribe(input: {
    audioFile: string;
    workDir: string;
    options: JobOptions;
  }): Promise<Transcription> {
    const { options } = input;
    const media = await probeMedia(input.audioFile);
    const selection = options.dual_channel ? dualChannelSelection(media) : undefined;
    const channels = selection?.channels;
    const notes = selection?.notes ?? [];

    const wavFiles = await decodeToWav(input.audioFile, input.workDir, channels);
    const audioDurationMs = Math.max(...(await Promise.all(wavFiles.map(wavDurationMs))));
    const recognized = await Promise.all(
      wavFiles.map(async (wavFile, index): Promise<TimedWord[]> => {
        const regions = await detectSpeech(wavFile);
        if (regions.length === 0) return [];
        const long = audioDurationMs > this.chunkAboveMs;
        const [heard, voicing] = await Promise.all([
          long
            ? this.recognizeInChunks(wavFile, planChunks(regions, audioDurationMs), input.workDir)
            : this.limit(() => this.recognizer.recognize(wavFile)),
          detectVoicing(wavFile),
        ]);
        const words = formatWords(
          keepVoicedWords(keepWordsInSpeech(heard, regions), voicing),
          options.punctuate,
          this.recognizer.punctuates,
        );
        const channel = channels ? index + 1 : undefined;
        const segments = options.speaker_diarization
          ? await this.diarizer.diarize({
              wavFile,
              regions,
              voicing,
              ...(options.speakers_expected !== undefined
                ? { speakersExpected: options.speakers_expected }
                : {}),
            })
          : undefined;
        return words.map((word) => {
          const voice = segments && speakerAt(segments, word.startMs, word.endMs);
          return {
            ...word,
            ...(channel !== undefined ? { channel } : {}),
            // Voices are told apart within a channel: the same number on two channels is two speakers.
            ...(voice !== undefined ? { speakerLabel: `${channel ?? 0}:${voice}` } : {}),
          };
        });
      }),
    );
    return {
      ...assembleTranscript(recognized.flat()),
      audio_duration_ms: audioDurationMs,
      engine: this.recognizer.name,
      ...(notes.length ? { notes } : {}),
    };
  }

  /** Decodes each chunk in its own process, as many at once as the limit allows, and shifts the times back. */
  private async recognizeInChunks(
    wavFile: string,
    chunks: SpeechRegion[],
    workDir: string,
  ): Promise<TimedWord[]> {
    const parts = await Promise.all(
      chunks.map((chunk, index) =>
        this.limit(async () => {
          const file = join(workDir, `${basename(wavFile, '.wav')}-chunk-${index}.wav`);
          await writeWavSlice(wavFile, chunk.startMs, chunk.endMs, file);
          try {
            const words = await this.recognizer.recognize(file);
            return words.map((word) => ({
              ...word,
              startMs: word.startMs + chunk.startMs,
              endMs: word.endMs + chunk.startMs,
            }));
          } finally {
            await rm(file, { force: true });
          }
        }),
      ),
    );
    return parts.flat();
  }
}
