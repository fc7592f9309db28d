/** The transcription output stored in S3 and returned as `results.results` (SPEC 2.3, DESIGN 3). */

export interface Word {
  /** Milliseconds from the start of the audio. */
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

/** The transcript text: the words joined, each carrying its own casing and punctuation. */
export function joinWords(words: Word[]): string {
  return words.map((word) => word.word).join(' ');
}

/** Turns: runs of consecutive words of the same speaker and channel. */
export function speakerTurns(words: Word[]): Utterance[] {
  const turns: Utterance[] = [];
  for (const word of words) {
    const current = turns.at(-1);
    if (current && current.speaker === word.speaker && current.channel === word.channel) {
      current.endTime = Math.max(current.endTime, word.endTime);
      current.text += ` ${word.word}`;
    } else {
      turns.push({
        startTime: word.startTime,
        endTime: word.endTime,
        text: word.word,
        ...(word.speaker !== undefined ? { speaker: word.speaker } : {}),
        ...(word.channel !== undefined ? { channel: word.channel } : {}),
      });
    }
  }
  return turns;
}

/** Numbers labels ("spk_3", channel 2, …) as "S1", "S2", … in order of first appearance. */
export class SpeakerNumbering<T> {
  private readonly names = new Map<T, string>();

  nameOf(label: T): string {
    let name = this.names.get(label);
    if (!name) {
      name = `S${this.names.size + 1}`;
      this.names.set(label, name);
    }
    return name;
  }
}
