import { describe, expect, it } from 'vitest';
import { parseSphinxOutput } from '#speech/sphinx';

describe('parseSphinxOutput', () => {
  it('keeps words with millisecond times and drops markers, fillers, variants and hypothesis lines', () => {
    const output = [
      'hello world the end',
      '<s> 0.000 0.020 0.998900',
      'hello 0.030 0.500 0.013877',
      '<sil> 0.510 0.660 0.99',
      '[NOISE] 0.670 0.700 0.5',
      '++BREATH++ 0.700 0.720 0.5',
      'world(2) 0.730 1.140 1.000100',
      'the 1.150 1.150 0.5',
      '</s> 1.160 1.200 1.0',
    ].join('\n');
    expect(parseSphinxOutput(output)).toEqual([
      { text: 'hello', startMs: 30, endMs: 500, confidence: 0.014 },
      { text: 'world', startMs: 730, endMs: 1140, confidence: 1 },
      { text: 'the', startMs: 1150, endMs: 1150, confidence: 0.5 },
    ]);
  });

  it('gives no words for output without word lines', () => {
    expect(parseSphinxOutput('\n<s> 0.000 0.150 1.000100\n</s> 0.160 0.480 1.000000\n')).toEqual([]);
  });
});
