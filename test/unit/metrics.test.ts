import { describe, expect, it } from 'vitest';
import { diarizationErrorRate, normalizeWords, wordErrorRate } from '#local/evaluation/metrics';

describe('word error rate', () => {
  it('ignores case, punctuation and the spelling of numbers unless case is asked for', () => {
    expect(normalizeWords('Twenty-five boxes, in 1455!')).toEqual(['25', 'boxes', 'in', '1455']);
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
