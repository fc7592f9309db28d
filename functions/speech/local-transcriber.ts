import type { JobOptions } from '#core/options';
import type { Transcriber } from '#core/ports';
import { joinWords, SpeakerNumbering, speakerTurns, type TranscriptResult, type Word } from '#core/result';
import type { RecognizedWord, SpeechEngine } from './engine.ts';
import { decodeToWav, dualChannelSelection, probeMedia } from './media.ts';
import { punctuateWords } from './punctuation.ts';
import { detectVoicing, keepVoicedWords } from './voicing.ts';
import { wavDurationMs } from './wav.ts';

/** Words of one decoded channel; `channel` is 1-based and only set for dual-channel jobs. */
interface ChannelWords {
  channel?: number;
  words: RecognizedWord[];
}

/**
 * The offline pipeline around a speech engine: probe, decode (per channel for dual-channel jobs),
 * recognise, drop words heard in noise, punctuate, and assemble the result.
 */
export class LocalTranscriber implements Transcriber {
  readonly mode = 'sync';

  constructor(private readonly engine: SpeechEngine) {}

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
        const [words, voicing] = await Promise.all([this.engine.recognize(wavFile), detectVoicing(wavFile)]);
        return {
          ...(channels ? { channel: index + 1 } : {}),
          words: punctuateWords(keepVoicedWords(words, voicing), options.punctuate),
        };
      }),
    );
    return {
      ...assembleTranscript(recognized),
      audio_duration_ms: audioDurationMs,
      engine: this.engine.name,
      ...(notes.length ? { notes } : {}),
    };
  }
}

/**
 * Merges the words of all channels in spoken order. With channels, each channel is one speaker
 * (numbered by first appearance) and the utterances are the channel turns.
 */
export function assembleTranscript(
  channels: ChannelWords[],
): Pick<TranscriptResult, 'transcript' | 'words' | 'utterances'> {
  const speakers = new SpeakerNumbering<number>();
  const words: Word[] = channels
    .flatMap(({ channel, words: channelWords }) => channelWords.map((word) => ({ channel, word })))
    .sort((a, b) => a.word.startMs - b.word.startMs || (a.channel ?? 0) - (b.channel ?? 0))
    .map(({ channel, word }) => ({
      startTime: word.startMs,
      endTime: word.endMs,
      word: word.text,
      confidence: Number(word.confidence.toFixed(3)),
      ...(channel !== undefined ? { speaker: speakers.nameOf(channel), channel } : {}),
    }));
  const dualChannel = channels.some((entry) => entry.channel !== undefined);
  return { transcript: joinWords(words), words, ...(dualChannel ? { utterances: speakerTurns(words) } : {}) };
}
