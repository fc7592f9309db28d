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

  it("moves back an utterance printed late, by its overlap with the next one or with the audio's end", () => {
    // As PocketSphinx printed a 45 s piece cut inside speech: its first utterance 24 s late.
    const output = [
      'it has been called',
      '<s> 24.480 24.590 0.99',
      'it 24.600 24.810 0.3',
      'has 24.820 24.950 0.1',
      'called 60.500 61.070 0.9',
      'the type',
      '<s> 37.080 37.100 0.99',
      'the 37.110 37.300 0.9',
      'type 44.500 44.940 0.9',
    ].join('\n');
    // It ends at 61.07 s where the next begins at 37.08 s: 23.99 s late.
    expect(parseSphinxOutput(output, 45_000).map((word) => [word.text, word.startMs])).toEqual([
      ['it', 610],
      ['has', 830],
      ['called', 36_510],
      ['the', 37_110],
      ['type', 44_500],
    ]);
    // One utterance to the end of the audio: moved back by what passes the end. Within it: untouched.
    const single = ['<s> 46.760 47.290 0.99', 'it 47.300 47.520 0.3', 'but 106.860 106.980 1.0'].join('\n');
    expect(parseSphinxOutput(single, 60_260).map((word) => word.endMs)).toEqual([47_520 - 46_720, 60_260]);
    expect(parseSphinxOutput(single, 120_000).map((word) => word.endMs)).toEqual([47_520, 106_980]);
  });

  it('gives no words for output without word lines', () => {
    expect(parseSphinxOutput('\n<s> 0.000 0.150 1.000100\n</s> 0.160 0.480 1.000000\n')).toEqual([]);
  });
});
