/** The transcription output stored in S3 and returned as `results.results` (SPEC 2.3, DESIGN 3). */

/**
 * A word as a transcriber hears it, before the result is assembled: times in milliseconds, the speaker
 * under the transcriber's own label. Every transcriber produces these; only assembly makes `Word`s.
 */
export interface TimedWord {
  /** The word with the casing and punctuation it will show. */
  text: string;
  startMs: number;
  endMs: number;
  /** 0..1 */
  confidence: number;
  /** Any label that tells this word's voice from others ("spk_0", "2:1", …); numbered S1, S2, … on assembly. */
  speakerLabel?: string;
  /** 1 = first (left), 2 = second (right); only for dual-channel jobs. */
  channel?: number;
}

/** A word of the API's result (SPEC 2.3): times in integer milliseconds from the start of the audio. */
export interface Word {
  startTime: number;
  endTime: number;
  word: string;
  /** 0..1 */
  confidence: number;
  /** "S1", "S2", … by first appearance. */
  speaker?: string;
  /** 1 = first (left), 2 = second (right); only for dual-channel jobs. */
  channel?: number;
}

/** A turn of one speaker or channel. */
export interface Utterance {
  startTime: number;
  endTime: number;
  text: string;
  speaker?: string;
  channel?: number;
}

export interface TranscriptResult {
  transcript: string;
  words: Word[];
  utterances?: Utterance[];
  tldr?: string;
  short_hand_notes?: string;
  audio_duration_ms: number;
  engine: string;
  /** Remarks about how the audio was handled, e.g. channels that were ignored. */
  notes?: string[];
}

/** The part of a result that assembly makes from a transcriber's words. */
export type AssembledTranscript = Pick<TranscriptResult, 'transcript' | 'words' | 'utterances'>;

/**
 * The result's words, text and turns from a transcriber's words: spoken order (channels merged by start
 * time), speakers numbered S1, S2, … by first appearance (a channel is a speaker unless a finer label
 * splits it), the text as the words joined, and turns when speakers are known.
 */
export function assembleTranscript(heard: TimedWord[]): AssembledTranscript {
  const names = new Map<string, string>();
  const speakerName = (label: string) => {
    let name = names.get(label);
    if (!name) {
      name = `S${names.size + 1}`;
      names.set(label, name);
    }
    return name;
  };
  const words: Word[] = [...heard]
    .sort((a, b) => a.startMs - b.startMs || (a.channel ?? 0) - (b.channel ?? 0))
    .map((word) => {
      const label = word.speakerLabel ?? (word.channel !== undefined ? `channel ${word.channel}` : undefined);
      return {
        startTime: Math.round(word.startMs),
        endTime: Math.max(Math.round(word.startMs), Math.round(word.endMs)),
        word: word.text,
        confidence: Math.min(1, Math.max(0, word.confidence)),
        ...(label !== undefined ? { speaker: speakerName(label) } : {}),
        ...(word.channel !== undefined ? { channel: word.channel } : {}),
      };
    });
  const turns = words.some((word) => word.speaker !== undefined);
  return { transcript: joinWords(words), words, ...(turns ? { utterances: speakerTurns(words) } : {}) };
}

/** The transcript text: the words joined, each carrying its own casing and punctuation. */
export function joinWords(words: Pick<Word, 'word'>[]): string {
  return words.map((word) => word.word).join(' ');
}

/** A run of consecutive words of the same speaker and channel, with its words. */
export interface Turn {
  speaker?: string;
  channel?: number;
  words: Word[];
}

/** The words grouped into runs of the same speaker and channel (the console shows these). */
export function groupTurns(words: Word[]): Turn[] {
  const turns: Turn[] = [];
  for (const word of words) {
    const current = turns.at(-1);
    if (current && current.speaker === word.speaker && current.channel === word.channel) {
      current.words.push(word);
    } else {
      turns.push({
        ...(word.speaker !== undefined ? { speaker: word.speaker } : {}),
        ...(word.channel !== undefined ? { channel: word.channel } : {}),
        words: [word],
      });
    }
  }
  return turns;
}

/** The result's `utterances`: each turn's time span and text. */
export function speakerTurns(words: Word[]): Utterance[] {
  return groupTurns(words).map(({ words: spoken, ...who }) => ({
    startTime: spoken[0]?.startTime ?? 0,
    endTime: Math.max(...spoken.map((word) => word.endTime)),
    text: joinWords(spoken),
    ...who,
  }));
}
