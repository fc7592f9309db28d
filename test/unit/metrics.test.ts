import { describe, expect, it } from 'vitest';
import { diarizationSplit } from '#local/evaluation/diarization-set';
import {
  diarizationErrorRate,
  normalizeWords,
  wordDiarizationErrors,
  wordErrorRate,
} from '#local/evaluation/metrics';

describe('word error rate', () => {
  it('ignores case, punctuation and the spelling of numbers unless case is asked for', () => {
    expect(normalizeWords('Twenty-five boxes, the 20th, in 1,455!')).toEqual([
      'twenty',
      'five',
      'boxes',
      'the',
      'twentieth',
      'in',
      'one',
      'thousand',
      'four',
      'hundred',
      'and',
      'fifty',
      'five',
    ]);
    // Spelled numbers are left as they are, whatever their case or the sentences around them.
    const heard = 'red belt t g e j w b seventy nine fifty nine for the twentieth time maybe a second';
    expect(
      normalizeWords(
        'Red belt. T g e j w b. Seventy nine fifty nine for the twentieth time. Maybe a second.',
      ),
    ).toEqual(heard.split(' '));
    expect(wordErrorRate('Printing, in the only sense', 'printing in the only sense')).toBe(0);
    expect(
      wordErrorRate('Printing, in the only sense', 'printing in the only sense', { keepCase: true }),
    ).toBe(0.2);
    expect(wordErrorRate('we shipped twenty boxes', 'we shipped 20 boxes')).toBe(0);
  });

  it('counts substitutions, deletions and insertions over the reference length', () => {
    expect(wordErrorRate('a b c d', 'a x c')).toBe(0.5);
    expect(wordErrorRate('a b', 'a b c d')).toBe(1);
    expect(wordErrorRate('', '')).toBe(0);
  });
});

describe('diarization error rate', () => {
  const reference = [
    { speaker: 'alice', startMs: 0, endMs: 10_000 },
    { speaker: 'bob', startMs: 10_000, endMs: 20_000 },
  ];

  it('is zero for a perfect answer whatever the labels, and ignores the collar around boundaries', () => {
    const hypothesis = [
      { speaker: '7', startMs: 0, endMs: 10_200 },
      { speaker: '3', startMs: 10_200, endMs: 20_000 },
    ];
    expect(diarizationErrorRate(reference, hypothesis)).toBe(0);
  });

  it('counts confusion, missed speech and false alarms', () => {
    const oneSpeaker = [{ speaker: 'x', startMs: 0, endMs: 20_000 }];
    expect(diarizationErrorRate(reference, oneSpeaker, 0)).toBeCloseTo(0.5, 2);
    const halfMissed = [{ speaker: 'x', startMs: 0, endMs: 10_000 }];
    expect(diarizationErrorRate(reference, halfMissed, 0)).toBeCloseTo(0.5, 2);
    const extra = [...reference, { speaker: 'carol', startMs: 0, endMs: 5000 }];
    expect(diarizationErrorRate(reference, extra, 0)).toBeCloseTo(0.25, 2);
  });
});

describe('word-level diarization error', () => {
  const reference = [
    { speaker: 'alice', startMs: 0, endMs: 3000 },
    { speaker: 'bob', startMs: 2500, endMs: 6000 },
    { speaker: 'alice', startMs: 7000, endMs: 9000 },
  ];
  const word = (speaker: string, startMs: number, channel?: number) => ({
    speaker,
    startMs,
    endMs: startMs + 300,
    ...(channel !== undefined ? { channel } : {}),
  });

  it('counts words given the wrong speaker under the best mapping, whatever the labels', () => {
    const words = [word('S2', 500), word('S2', 1500), word('S1', 4000), word('S1', 5000), word('S2', 7500)];
    expect(wordDiarizationErrors(words, reference)).toEqual({ wrong: 0, judged: 5 });
    const oneWrong = [
      word('S1', 500),
      word('S1', 1500),
      word('S2', 4000),
      word('S1', 5000),
      word('S1', 7500),
    ];
    expect(wordDiarizationErrors(oneWrong, reference)).toEqual({ wrong: 1, judged: 5 });
  });

  it('maps one system speaker to one reference speaker only', () => {
    const lumped = [word('S1', 500), word('S1', 4000), word('S1', 5000), word('S1', 7500)];
    expect(wordDiarizationErrors(lumped, reference)).toEqual({ wrong: 2, judged: 4 });
  });

  it('leaves out words in overlapped speech and far from every turn, and judges channels apart', () => {
    expect(wordDiarizationErrors([word('S1', 2600), word('S1', 20_000)], reference).judged).toBe(0);
    const calls = [
      { speaker: 'left', startMs: 0, endMs: 4000, channel: 0 },
      { speaker: 'right', startMs: 3000, endMs: 6000, channel: 1 },
    ];
    expect(wordDiarizationErrors([word('S1', 3200, 1), word('S2', 3300, 2)], calls)).toEqual({
      wrong: 0,
      judged: 2,
    });
  });
});

describe('the diarization split', () => {
  it('is fixed by the id alone and puts some entries on each side', () => {
    const ids = Array.from({ length: 40 }, (_, index) => `conversation-${index}`);
    const splits = ids.map(diarizationSplit);
    expect(ids.map(diarizationSplit)).toEqual(splits);
    expect(splits.filter((split) => split === 'held-out').length).toBeGreaterThan(10);
    expect(splits.filter((split) => split === 'tuning').length).toBeGreaterThan(10);
  });
});
