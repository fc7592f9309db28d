import type { RecognizedWord } from './engine.ts';

/** A pause at least this long ends a sentence when the engine gives no punctuation. */
export const SENTENCE_PAUSE_MS = 500;

/** The standalone pronoun and its contractions (i'm, i'll, i've, i'd). */
const PRONOUN_I = /^i('[a-z]+)?$/;

/**
 * Formats engine words for display. Without punctuation: lower case, no marks. With punctuation:
 * sentences split at pauses, each sentence-cased and closed with a period, and the pronoun "I"
 * capitalised. Each word carries its own casing and trailing mark, so joining the words gives the text.
 */
export function punctuateWords(words: RecognizedWord[], punctuate: boolean): RecognizedWord[] {
  if (!punctuate) return words.map((word) => ({ ...word, text: word.text.toLowerCase() }));
  return words.map((word, index) => {
    const previous = words[index - 1];
    const next = words[index + 1];
    const startsSentence = !previous || word.startMs - previous.endMs >= SENTENCE_PAUSE_MS;
    const endsSentence = !next || next.startMs - word.endMs >= SENTENCE_PAUSE_MS;
    let text = word.text.toLowerCase();
    if (startsSentence || PRONOUN_I.test(text)) text = capitalize(text);
    if (endsSentence) text += '.';
    return { ...word, text };
  });
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
