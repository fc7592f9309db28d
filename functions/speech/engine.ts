/** A word as a speech engine recognises it, before formatting. */
export interface RecognizedWord {
  /** Lower-case word as spelled by the engine's dictionary. */
  text: string;
  startMs: number;
  endMs: number;
  confidence: number;
}

/** Speech recognition over one 16 kHz mono 16-bit WAV file. */
export interface SpeechEngine {
  readonly name: string;
  recognize(wavFile: string): Promise<RecognizedWord[]>;
}
