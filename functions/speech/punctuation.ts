import nlp from 'compromise';
import type { TimedWord } from '#core/result';

/** A pause at least this long ends a sentence. */
export const SENTENCE_PAUSE_MS = 500;
/** A shorter pause is a comma, or a sentence end before a word that typically opens one. */
export const CLAUSE_PAUSE_MS = 300;

/** Words that, after a pause, usually open a new sentence in speech. */
const SENTENCE_OPENERS = new Set([
  'so',
  'but',
  'now',
  'well',
  'okay',
  'ok',
  'yes',
  'no',
  'then',
  'however',
  'also',
]);
/** Words that open a question: wh-words, and auxiliaries followed by a pronoun ("do you", "is it"). */
const WH_WORDS = new Set(['what', 'why', 'how', 'where', 'when', 'who', 'whom', 'whose', 'which']);
const AUXILIARIES = new Set([
  'do',
  'does',
  'did',
  'is',
  'are',
  'was',
  'were',
  'can',
  'could',
  'will',
  'would',
  'should',
  'shall',
  'have',
  'has',
  'may',
  'might',
]);
const PRONOUNS = new Set([
  'i',
  'you',
  'we',
  'he',
  'she',
  'it',
  'they',
  'there',
  'this',
  'that',
  'anyone',
  'anybody',
]);
/** Short words left lower-case inside a name ("Bank of America"). */
const NAME_CONNECTORS = new Set(['of', 'the', 'and', 'for', 'de', 'du', 'von', 'van']);
/** The standalone pronoun and its contractions (i'm, i'll, i've, i'd). */
const PRONOUN_I = /^i('[a-z]+)?$/;

/**
 * Formats recognized words for display. Without punctuation: lower case, no marks. With punctuation:
 * sentences end at long pauses (or at medium ones before a typical sentence opener), medium pauses
 * inside a sentence become commas, questions get a question mark; sentences start with a capital,
 * "I" is capitalised, and names of people, places and organisations, months and days are cased
 * (found with the `compromise` lexicon). Each word carries its own casing and marks, so joining the
 * words gives the text.
 */
export function punctuateWords(words: TimedWord[], punctuate: boolean): TimedWord[] {
  const lower = words.map((word) => ({ ...word, text: word.text.toLowerCase() }));
  if (!punctuate) return lower;
  return sentencesByPauses(lower).flatMap(formatSentence);
}

/**
 * The words for display: a recognizer's own casing and punctuation kept (or, without punctuation,
 * plained as other engines' words are), or else added by `punctuateWords`.
 */
export function formatWords(words: TimedWord[], punctuate: boolean, punctuated = false): TimedWord[] {
  if (!punctuated) return punctuateWords(words, punctuate);
  return punctuate ? words : plainWords(words);
}

/** Marks at a word's edges; an apostrophe, and marks inside a word ("3.5", "e.g"), stay. */
const EDGE_MARKS = /^[^\p{L}\p{N}'$£€]+|[^\p{L}\p{N}'%]+$/gu;

/** Written words as `punctuate=false` gives them: lower case, no marks at their edges; marks alone go. */
export function plainWords(words: TimedWord[]): TimedWord[] {
  return words
    .map((word) => ({ ...word, text: word.text.toLowerCase().replace(EDGE_MARKS, '') }))
    .filter((word) => /[\p{L}\p{N}]/u.test(word.text));
}

/** Groups words into sentences at long pauses, or at medium ones before a typical sentence opener. */
function sentencesByPauses(words: TimedWord[]): TimedWord[][] {
  const sentences: TimedWord[][] = [];
  words.forEach((word, index) => {
    const previous = words[index - 1];
    const pause = previous ? word.startMs - previous.endMs : Number.POSITIVE_INFINITY;
    const opens = pause >= SENTENCE_PAUSE_MS || (pause >= CLAUSE_PAUSE_MS && SENTENCE_OPENERS.has(word.text));
    if (opens || sentences.length === 0) sentences.push([word]);
    else sentences.at(-1)?.push(word);
  });
  return sentences;
}

function formatSentence(sentence: TimedWord[]): TimedWord[] {
  const names = nameIndexes(sentence);
  const [first, second] = sentence;
  const question =
    WH_WORDS.has(first?.text ?? '') ||
    (AUXILIARIES.has(first?.text ?? '') && PRONOUNS.has(second?.text ?? ''));
  return sentence.map((word, index) => {
    let text = word.text;
    if (index === 0 || PRONOUN_I.test(text) || names.has(index)) text = capitalize(text);
    const next = sentence[index + 1];
    if (!next) text += question ? '?' : '.';
    else if (next.startMs - word.endMs >= CLAUSE_PAUSE_MS) text += ',';
    return { ...word, text };
  });
}

/** Indexes of the sentence's words that belong to a name, a month or a day. */
function nameIndexes(sentence: TimedWord[]): Set<number> {
  const text = sentence.map((word) => word.text).join(' ');
  const starts: number[] = [];
  let position = 0;
  for (const word of sentence) {
    starts.push(position);
    position += word.text.length + 1;
  }
  const document = nlp(text);
  const matches = [
    document.people(),
    document.places(),
    document.organizations(),
    document.match('#Month'),
    document.match('#WeekDay'),
  ].flatMap((view) => view.json({ offset: true }) as { offset: { start: number; length: number } }[]);

  const indexes = new Set<number>();
  for (const { offset } of matches) {
    starts.forEach((start, index) => {
      const word = sentence[index]?.text ?? '';
      const inside = start >= offset.start && start < offset.start + offset.length;
      if (inside && !NAME_CONNECTORS.has(word)) indexes.add(index);
    });
  }
  return indexes;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
