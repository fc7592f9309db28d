import type { TimedWord } from '#core/result';

/** Speech recognition over one 16 kHz mono 16-bit WAV file: lower-case words as the dictionary spells them. */
export interface Recognizer {
  /** The `engine` a result made with this recognizer names. */
  readonly name: string;
  recognize(wavFile: string): Promise<TimedWord[]>;
}
