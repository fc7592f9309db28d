import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import pLimit, { type LimitFunction } from 'p-limit';
import type { JobOptions } from '#core/options';
import type { Transcriber } from '#core/ports';
import { joinWords, SpeakerNumbering, speakerTurns, type TranscriptResult, type Word } from '#core/result';
import { MAX_CHUNK_MS, planChunks } from './chunks.ts';
import { diarize, speakerAt } from './diarization.ts';
import type { RecognizedWord, SpeechEngine } from './engine.ts';
import { decodeToWav, dualChannelSelection, probeMedia } from './media.ts';
import { punctuateWords } from './punctuation.ts';
import { detectSpeech, type SpeechRegion } from './vad.ts';
import { detectVoicing, keepVoicedWords } from './voicing.ts';
import { wavDurationMs, writeWavSlice } from './wav.ts';

/** A recognised word with the number of the voice that said it, when speakers are told apart. */
type SpokenWord = RecognizedWord & { voice?: number };

/** Words of one decoded channel; `channel` is 1-based and only set for dual-channel jobs. */
interface ChannelWords {
  channel?: number;
  words: SpokenWord[];
}

export interface LocalTranscriberSettings {
  /** Recogniser processes at once, over all channels and chunks of a job. */
  parallelism?: number;
  /** Audio longer than this is decoded as chunks cut at silences. */
  chunkAboveMs?: number;
}

/**
 * The offline pipeline around a speech engine: probe, decode (per channel for dual-channel jobs),
 * recognise (long audio as silence-split chunks in parallel), drop words heard in noise, tell speakers
 * apart, punctuate, and assemble the result.
 */
export class LocalTranscriber implements Transcriber {
  readonly mode = 'sync';
  private readonly limit: LimitFunction;
  private readonly chunkAboveMs: number;

  constructor(
    private readonly engine: SpeechEngine,
    settings: LocalTranscriberSettings = {},
  ) {
    this.limit = pLimit(settings.parallelism ?? availableParallelism());
    this.chunkAboveMs = settings.chunkAboveMs ?? 2 * MAX_CHUNK_MS;
  }

  async transcribe(input: {
    audioFile: string;
    workDir: string;
    options: JobOptions;
  }): Promise<TranscriptResult> {
    const { options } = input;
    const media = await probeMedia(input.audioFile);
    const selection = options.dual_channel ? dualChannelSelection(media) : undefined;
    const channels = selection?.channels;
    const notes = selection?.notes ?? [];

    const wavFiles = await decodeToWav(input.audioFile, input.workDir, channels);
    const audioDurationMs = Math.max(...(await Promise.all(wavFiles.map(wavDurationMs))));
    const recognized = await Promise.all(
      wavFiles.map(async (wavFile, index): Promise<ChannelWords> => {
        const long = audioDurationMs > this.chunkAboveMs;
        const regions = long || options.speaker_diarization ? await detectSpeech(wavFile) : [];
        const [heard, voicing] = await Promise.all([
          long
            ? this.recognizeInChunks(wavFile, planChunks(regions, audioDurationMs), input.workDir)
            : this.limit(() => this.engine.recognize(wavFile)),
          detectVoicing(wavFile),
        ]);
        const words: SpokenWord[] = punctuateWords(keepVoicedWords(heard, voicing), options.punctuate);
        if (options.speaker_diarization) {
          const segments = await diarize(wavFile, regions, voicing);
          for (const word of words) word.voice = speakerAt(segments, word.startMs, word.endMs);
        }
        return { ...(channels ? { channel: index + 1 } : {}), words };
      }),
    );
    return {
      ...assembleTranscript(recognized),
      audio_duration_ms: audioDurationMs,
      engine: this.engine.name,
      ...(notes.length ? { notes } : {}),
    };
  }

  /** Decodes each chunk in its own process, as many at once as the limit allows, and shifts the times back. */
  private async recognizeInChunks(
    wavFile: string,
    chunks: SpeechRegion[],
    workDir: string,
  ): Promise<RecognizedWord[]> {
    const parts = await Promise.all(
      chunks.map((chunk, index) =>
        this.limit(async () => {
          const file = join(workDir, `${basename(wavFile, '.wav')}-chunk-${index}.wav`);
          await writeWavSlice(wavFile, chunk.startMs, chunk.endMs, file);
          try {
            const words = await this.engine.recognize(file);
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

/**
 * Merges the words of all channels in spoken order. Speakers are numbered by first appearance: the
 * voices found by diarization (per channel), or else one speaker per channel. Utterances are the turns.
 */
export function assembleTranscript(
  channels: ChannelWords[],
): Pick<TranscriptResult, 'transcript' | 'words' | 'utterances'> {
  const speakers = new SpeakerNumbering<string>();
  const words: Word[] = channels
    .flatMap(({ channel, words: channelWords }) => channelWords.map((word) => ({ channel, word })))
    .sort((a, b) => a.word.startMs - b.word.startMs || (a.channel ?? 0) - (b.channel ?? 0))
    .map(({ channel, word }) => {
      const known = word.voice !== undefined || channel !== undefined;
      return {
        startTime: word.startMs,
        endTime: word.endMs,
        word: word.text,
        confidence: Number(word.confidence.toFixed(3)),
        ...(known ? { speaker: speakers.nameOf(`${channel ?? 0}:${word.voice ?? 0}`) } : {}),
        ...(channel !== undefined ? { channel } : {}),
      };
    });
  const turns = words.some((word) => word.speaker !== undefined);
  return { transcript: joinWords(words), words, ...(turns ? { utterances: speakerTurns(words) } : {}) };
}
