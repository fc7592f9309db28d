import type { TimedWord } from '#core/result';

/**
 * Speech recognition over one 16 kHz mono 16-bit WAV file: lower-case words as the dictionary spells
 * them, or, for a recognizer that `punctuates`, words cased and punctuated as written text.
 */
export interface Recognizer {
  /** The `engine` a result made with this recognizer names. */
  readonly name: string;
  /** Its words carry casing and punctuation of their own (whisper), which the pipeline keeps. */
  readonly punctuates?: boolean;
  /** The longest piece of audio it is given in one call (pieces are cut in the silences between speech). */
  readonly maxPieceMs: number;
  recognize(wavFile: string): Promise<TimedWord[]>;
}
