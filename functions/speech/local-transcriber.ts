import { JobFailure } from '#core/errors';
import type { JobOptions } from '#core/options';
import type { Transcriber } from '#core/ports';
import type { TranscriptResult, Utterance, Word } from '#core/result';
import type { RecognizedWord, SpeechEngine } from './engine.ts';
import { decodeToWav, probeMedia } from './media.ts';
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
  constructor(private readonly engine: SpeechEngine) {}

  async transcribe(input: {
    audioFile: string;
    workDir: string;
    options: JobOptions;
  }): Promise<TranscriptResult> {
    const { options } = input;
    const media = await probeMedia(input.audioFile);
    const notes: string[] = [];
    let channels: number[] | undefined;
    if (options.dual_channel) {
      if (media.channels < 2) {
        throw new JobFailure(
          'not_dual_channel',
          `dual_channel is true but the audio has ${media.channels} channel; send a two-channel file or set dual_channel to false.`,
        );
      }
      channels = [0, 1];
      if (media.channels > 2)
        notes.push(`The audio has ${media.channels} channels; only the first two were transcribed.`);
    }

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
  const speakers = new Map<number, string>();
  const words: Word[] = channels
    .flatMap(({ channel, words: channelWords }) => channelWords.map((word) => ({ channel, word })))
    .sort((a, b) => a.word.startMs - b.word.startMs || (a.channel ?? 0) - (b.channel ?? 0))
    .map(({ channel, word }) => {
      const entry: Word = {
        startTime: word.startMs,
        endTime: word.endMs,
        word: word.text,
        confidence: Number(word.confidence.toFixed(3)),
      };
      if (channel !== undefined) {
        if (!speakers.has(channel)) speakers.set(channel, `S${speakers.size + 1}`);
        entry.speaker = speakers.get(channel);
        entry.channel = channel;
      }
      return entry;
    });

  const transcript = words.map((word) => word.word).join(' ');
  const dualChannel = channels.some((entry) => entry.channel !== undefined);
  return dualChannel ? { transcript, words, utterances: channelTurns(words) } : { transcript, words };
}

function channelTurns(words: Word[]): Utterance[] {
  const turns: Utterance[] = [];
  for (const word of words) {
    const current = turns.at(-1);
    if (current && current.channel === word.channel) {
      current.endTime = Math.max(current.endTime, word.endTime);
      current.text += ` ${word.word}`;
    } else {
      turns.push({
        startTime: word.startTime,
        endTime: word.endTime,
        text: word.word,
        speaker: word.speaker,
        channel: word.channel,
      });
    }
  }
  return turns;
}
