import type { JobOptions } from '#core/options';
import type { Transcriber } from '#core/ports';
import { joinWords, SpeakerNumbering, speakerTurns, type TranscriptResult, type Word } from '#core/result';
import { diarize, speakerAt } from './diarization.ts';
import type { RecognizedWord, SpeechEngine } from './engine.ts';
import { decodeToWav, dualChannelSelection, probeMedia } from './media.ts';
import { punctuateWords } from './punctuation.ts';
import { detectSpeech } from './vad.ts';
import { detectVoicing, keepVoicedWords } from './voicing.ts';
import { wavDurationMs } from './wav.ts';

/** A recognised word with the number of the voice that said it, when speakers are told apart. */
type SpokenWord = RecognizedWord & { voice?: number };

/** Words of one decoded channel; `channel` is 1-based and only set for dual-channel jobs. */
interface ChannelWords {
  channel?: number;
  words: SpokenWord[];
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
        const [recognized, voicing] = await Promise.all([
          this.engine.recognize(wavFile),
          detectVoicing(wavFile),
        ]);
        const words: SpokenWord[] = punctuateWords(keepVoicedWords(recognized, voicing), options.punctuate);
        if (options.speaker_diarization) {
          const segments = await diarize(wavFile, await detectSpeech(wavFile), voicing);
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
