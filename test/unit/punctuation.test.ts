import { describe, expect, it } from 'vitest';
import type { TimedWord } from '#core/result';
import { CLAUSE_PAUSE_MS, punctuateWords, SENTENCE_PAUSE_MS } from '#speech/punctuation';

const words = (entries: [string, number, number][]): TimedWord[] =>
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

  it('cases names of people, places and organisations, months and days, but not ordinary words', () => {
    const spoken = words([
      ['i', 0, 100],
      ['met', 110, 300],
      ['john', 310, 500],
      ['smith', 510, 700],
      ['in', 710, 800],
      ['london', 810, 1100],
      ['on', 1110, 1200],
      ['monday', 1210, 1500],
      ['in', 1510, 1600],
      ['january', 1610, 2000],
    ]);
    expect(
      punctuateWords(spoken, true)
        .map((word) => word.text)
        .join(' '),
    ).toBe('I met John Smith in London on Monday in January.');
  });

  it('puts commas at medium pauses, ends questions with a question mark, and starts a sentence at an opener', () => {
    const spoken = words([
      ['do', 0, 100],
      ['you', 110, 300],
      ['agree', 310, 600],
      ['but', 600 + CLAUSE_PAUSE_MS, 1100],
      ['first', 1110, 1400],
      ['we', 1400 + CLAUSE_PAUSE_MS, 1900],
      ['go', 1910, 2200],
    ]);
    // After a medium pause "but" opens a sentence; "we" does not, so that pause is a comma.
    expect(
      punctuateWords(spoken, true)
        .map((word) => word.text)
        .join(' '),
    ).toBe('Do you agree? But first, we go.');
  });

  it('keeps the times', () => {
    expect(punctuateWords(spoken, true).map((word) => [word.startMs, word.endMs])).toEqual(
      spoken.map((word) => [word.startMs, word.endMs]),
    );
  });
});
