import { describe, expect, it } from 'vitest';
import type { RecognizedWord } from '#speech/engine';
import { punctuateWords, SENTENCE_PAUSE_MS } from '#speech/punctuation';

const words = (entries: [string, number, number][]): RecognizedWord[] =>
  entries.map(([text, startMs, endMs]) => ({ text, startMs, endMs, confidence: 0.9 }));

const spoken = words([
  ['so', 0, 200],
  ['i', 210, 300],
  ["i'm", 310, 500],
  ['here', 510, 800],
  ['then', 800 + SENTENCE_PAUSE_MS, 1500],
  ['we', 1510, 1700],
  ['left', 1710, 2000],
]);

describe('punctuateWords', () => {
  it('splits sentences at pauses, sentence-cases them, closes them with a period and capitalises I', () => {
    expect(punctuateWords(spoken, true).map((word) => word.text)).toEqual([
      'So',
      'I',
      "I'm",
      'here.',
      'Then',
      'we',
      'left.',
    ]);
  });

  it('keeps everything lower case without marks when punctuate is false', () => {
    expect(punctuateWords(spoken, false).map((word) => word.text)).toEqual([
      'so',
      'i',
      "i'm",
      'here',
      'then',
      'we',
      'left',
    ]);
  });

  it('keeps the times', () => {
    expect(punctuateWords(spoken, true).map((word) => [word.startMs, word.endMs])).toEqual(
      spoken.map((word) => [word.startMs, word.endMs]),
    );
  });
});
