import { describe, expect, it } from 'vitest';
import { FORM_OVERHEAD_BYTES, optionsForm, uploadVia } from '#client/submission';
import { MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import { wordIndexAt } from '#console/player';
import { speakerLabel, timelineLanes, wholePercentages } from '#console/timeline';
import type { Utterance } from '#core/result';

describe('the word being spoken', () => {
  const starts = [0, 400, 400, 900, 2000];

  it('is the last word started at or before the position', () => {
    expect(wordIndexAt(starts, 0)).toBe(0);
    expect(wordIndexAt(starts, 399)).toBe(0);
    // Two words that start together: the later one in spoken order.
    expect(wordIndexAt(starts, 400)).toBe(2);
    expect(wordIndexAt(starts, 1999)).toBe(3);
    expect(wordIndexAt(starts, 10_000_000)).toBe(4);
  });

  it('is none before the first word, and in a transcript without words', () => {
    expect(wordIndexAt([300], 299)).toBe(-1);
    expect(wordIndexAt([], 5000)).toBe(-1);
  });

  it('is found in a long transcript as a scan would find it', () => {
    const long = Array.from({ length: 40_000 }, (_, index) => index * 350 + (index % 3));
    for (const position of [0, 1, 349, 350, 7_000_001, 13_999_999, 20_000_000]) {
      const scanned = long.findLastIndex((start) => start <= position);
      expect(wordIndexAt(long, position), String(position)).toBe(scanned);
    }
  });
});

describe('the speaker timeline', () => {
  const turn = (
    speaker: string | undefined,
    startTime: number,
    endTime: number,
    channel?: number,
  ): Utterance => ({
    startTime,
    endTime,
    text: 'x',
    ...(speaker ? { speaker } : {}),
    ...(channel !== undefined ? { channel } : {}),
  });

  it('has one lane per speaker in order of first appearance, with talk time and shares', () => {
    const lanes = timelineLanes([turn('S1', 0, 3000), turn('S2', 3000, 4000), turn('S1', 4000, 8000)]);
    expect(lanes).toEqual([
      { label: 'S1', turns: [0, 2], talkMs: 7000, share: 0.875 },
      { label: 'S2', turns: [1], talkMs: 1000, share: 0.125 },
    ]);
  });

  it('names channels, alone or with their speakers', () => {
    expect(speakerLabel({ speaker: 'S2', channel: 2 })).toBe('S2 · channel 2');
    expect(speakerLabel({ channel: 1 })).toBe('channel 1');
    expect(speakerLabel({})).toBeUndefined();
    const lanes = timelineLanes([
      turn('S1', 0, 1000, 1),
      turn('S2', 500, 1500, 2),
      turn('S3', 2000, 2500, 1),
    ]);
    expect(lanes.map((lane) => lane.label)).toEqual(['S1 · channel 1', 'S2 · channel 2', 'S3 · channel 1']);
  });

  it('has no lanes when no speaker or channel is known, and no shares without talk', () => {
    expect(timelineLanes([turn(undefined, 0, 1000)])).toEqual([]);
    expect(timelineLanes([turn('S1', 500, 500)])).toEqual([{ label: 'S1', turns: [0], talkMs: 0, share: 0 }]);
    // A turn whose end comes before its start counts nothing.
    expect(timelineLanes([turn('S1', 900, 100)])[0]?.talkMs).toBe(0);
  });

  it('shows whole percentages that add up to 100', () => {
    expect(wholePercentages([1 / 3, 1 / 3, 1 / 3])).toEqual([34, 33, 33]);
    expect(wholePercentages([0.875, 0.125])).toEqual([88, 12]);
    expect(wholePercentages([0.996, 0.002, 0.002])).toEqual([100, 0, 0]);
    expect(wholePercentages([0, 0])).toEqual([0, 0]);
    for (const count of [2, 3, 7, 10, 30]) {
      const shares = Array.from({ length: count }, (_, index) => index + 1);
      const total = shares.reduce((sum, share) => sum + share, 0);
      const percentages = wholePercentages(shares.map((share) => share / total));
      expect(
        percentages.reduce((sum, value) => sum + value, 0),
        String(count),
      ).toBe(100);
    }
  });
});

describe('what the client and the console send', () => {
  it('puts a file in the form while the form fits the direct-upload limit, else uploads it presigned', () => {
    const largestDirect = MAX_DIRECT_UPLOAD_BYTES - FORM_OVERHEAD_BYTES;
    expect(uploadVia(1, MAX_DIRECT_UPLOAD_BYTES)).toBe('direct');
    expect(uploadVia(largestDirect, MAX_DIRECT_UPLOAD_BYTES)).toBe('direct');
    expect(uploadVia(largestDirect + 1, MAX_DIRECT_UPLOAD_BYTES)).toBe('presigned');
  });

  it('sends the options that are set, as the strings the API parses, and nothing else', () => {
    const form = optionsForm({
      punctuate: false,
      speaker_diarization: true,
      speakers_expected: 3,
      custom: '',
    });
    expect([...form.entries()]).toEqual([
      ['punctuate', 'false'],
      ['speaker_diarization', 'true'],
      ['custom', ''],
      ['speakers_expected', '3'],
    ]);
  });
});
