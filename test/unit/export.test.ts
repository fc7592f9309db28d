import { describe, expect, it } from 'vitest';
import { exportTranscript, parseExportFormat, timestamp } from '#core/export';
import type { TranscriptResult, Word } from '#core/result';

const words = (count: number, gapMs = 100): Word[] =>
  Array.from({ length: count }, (_, index) => ({
    startTime: index * (400 + gapMs),
    endTime: index * (400 + gapMs) + 400,
    word: `w${index}`,
    confidence: 1,
  }));

const resultOf = (list: Word[]): TranscriptResult => ({
  transcript: list.map((word) => word.word).join(' '),
  words: list,
  audio_duration_ms: 60_000,
  engine: 'sphinx',
});

describe('exports', () => {
  it('formats timestamps for SRT and WebVTT', () => {
    expect(timestamp(3_723_045, ',')).toBe('01:02:03,045');
    expect(timestamp(0, '.')).toBe('00:00:00.000');
  });

  it('keeps subtitle cues short: at most 14 words and 6 seconds, split at long pauses', () => {
    const srt = exportTranscript(resultOf(words(30)), 'srt');
    const cues = srt.trim().split('\n\n');
    for (const cue of cues) {
      const [, times = '', text = ''] = cue.split('\n');
      const [start = '', end = ''] = times.split(' --> ');
      const ms = (value: string) => {
        const [h, m, rest] = value.split(':');
        return (Number(h) * 3600 + Number(m) * 60 + Number(rest?.replace(',', '.'))) * 1000;
      };
      expect(ms(end) - ms(start)).toBeLessThanOrEqual(6000);
      expect(text.split(' ').length).toBeLessThanOrEqual(14);
    }
    expect(cues.length).toBeGreaterThanOrEqual(3);
    const paused = exportTranscript(resultOf(words(4, 2000)), 'vtt');
    expect(paused.split('-->')).toHaveLength(5);
  });

  it('gives the plain transcript as text when no speakers are known, and escapes WebVTT markup', () => {
    expect(exportTranscript(resultOf(words(3)), 'txt')).toBe('w0 w1 w2\n');
    const markup = resultOf([{ startTime: 0, endTime: 500, word: '<b>&', confidence: 1 }]);
    expect(exportTranscript(markup, 'vtt')).toContain('&lt;b&gt;&amp;');
  });

  it('accepts txt, srt and vtt in any case only', () => {
    expect(parseExportFormat('SRT')).toBe('srt');
    expect(() => parseExportFormat('pdf')).toThrow(/txt, srt, vtt/);
    expect(() => parseExportFormat(undefined)).toThrow();
  });
});
