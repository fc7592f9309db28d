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
