import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { mapTranscribeOutput } from '#aws/transcribe-output';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../fixtures/transcribe/${name}.json`, import.meta.url), 'utf8'));

const options = (
  overrides: Partial<Record<'punctuate' | 'dual_channel' | 'speaker_diarization', boolean>>,
) => ({
  punctuate: true,
  dual_channel: false,
  speaker_diarization: false,
  ...overrides,
});

describe('mapTranscribeOutput', () => {
  it('maps a mono transcript with punctuation attached to the word before it', () => {
    const mapped = mapTranscribeOutput(fixture('mono'), options({}));
    expect(mapped.transcript).toBe("I've been on hold for an hour. Sorry about that.");
    expect(mapped.words).toEqual([
      { startTime: 4870, endTime: 5020, word: "I've", confidence: 1 },
      { startTime: 5020, endTime: 5170, word: 'been', confidence: 1 },
      { startTime: 5170, endTime: 5290, word: 'on', confidence: 1 },
      { startTime: 5290, endTime: 5640, word: 'hold', confidence: 1 },
      { startTime: 5640, endTime: 5840, word: 'for', confidence: 1 },
      { startTime: 6110, endTime: 6260, word: 'an', confidence: 1 },
      { startTime: 6260, endTime: 6880, word: 'hour.', confidence: 1 },
      { startTime: 8490, endTime: 8880, word: 'Sorry', confidence: 1 },
      { startTime: 8880, endTime: 9050, word: 'about', confidence: 0.902 },
      { startTime: 9050, endTime: 9240, word: 'that.', confidence: 1 },
    ]);
    expect(mapped).not.toHaveProperty('utterances');
  });

  it('drops punctuation and lower-cases everything when punctuate is false', () => {
    const mapped = mapTranscribeOutput(fixture('mono'), options({ punctuate: false }));
    expect(mapped.transcript).toBe("i've been on hold for an hour sorry about that");
    expect(mapped.words.map((word) => word.word)).toEqual([
      "i've",
      'been',
      'on',
      'hold',
      'for',
      'an',
      'hour',
      'sorry',
      'about',
      'that',
    ]);
    expect(mapped.words[6]).toEqual({ startTime: 6260, endTime: 6880, word: 'hour', confidence: 1 });
  });

  it('numbers speakers S1, S2 by first appearance, never spk_N, with speaker turns', () => {
    const mapped = mapTranscribeOutput(fixture('speaker-labels'), options({ speaker_diarization: true }));
    expect(mapped.words.map((word) => [word.word, word.speaker])).toEqual([
      ["I've", 'S1'],
      ['been', 'S1'],
      ['on', 'S1'],
      ['hold', 'S1'],
      ['for', 'S1'],
      ['an', 'S1'],
      ['hour.', 'S1'],
      ['Sorry', 'S2'],
      ['about', 'S2'],
      ['that.', 'S2'],
    ]);
    expect(mapped.utterances).toEqual([
      { startTime: 4870, endTime: 6880, text: "I've been on hold for an hour.", speaker: 'S1' },
      { startTime: 8490, endTime: 9240, text: 'Sorry about that.', speaker: 'S2' },
    ]);
    expect(JSON.stringify(mapped)).not.toContain('spk_');
  });

  it('keeps speaker turns without punctuation too', () => {
    const mapped = mapTranscribeOutput(
      fixture('speaker-labels'),
      options({ speaker_diarization: true, punctuate: false }),
    );
    expect(mapped.utterances?.map((turn) => [turn.speaker, turn.text])).toEqual([
      ['S1', "i've been on hold for an hour"],
      ['S2', 'sorry about that'],
    ]);
  });

  it('labels channels 1 and 2, never ch_N, with one speaker per channel and channel turns', () => {
    const mapped = mapTranscribeOutput(fixture('channel-identification'), options({ dual_channel: true }));
    expect(mapped.transcript).toBe("I've been on hold for an hour. Sorry about that.");
    expect(
      mapped.words.map((word) => [word.word, word.startTime, word.endTime, word.channel, word.speaker]),
    ).toEqual([
      ["I've", 4860, 5010, 1, 'S1'],
      ['been', 5010, 5160, 1, 'S1'],
      ['on', 5160, 5280, 1, 'S1'],
      ['hold', 5280, 5620, 1, 'S1'],
      ['for', 5620, 5830, 1, 'S1'],
      ['an', 6100, 6250, 1, 'S1'],
      ['hour.', 6250, 6870, 1, 'S1'],
      ['Sorry', 8500, 8890, 2, 'S2'],
      ['about', 8890, 9060, 2, 'S2'],
      ['that.', 9060, 9250, 2, 'S2'],
    ]);
    expect(mapped.words[8]?.confidence).toBe(0.9176);
    expect(mapped.utterances).toEqual([
      { startTime: 4860, endTime: 6870, text: "I've been on hold for an hour.", speaker: 'S1', channel: 1 },
      { startTime: 8500, endTime: 9250, text: 'Sorry about that.', speaker: 'S2', channel: 2 },
    ]);
    expect(JSON.stringify(mapped)).not.toContain('ch_');
  });

  it('reads the channel items when the document has no merged item list', () => {
    const document = fixture('channel-identification') as { results: { items?: unknown[] } };
    delete document.results.items;
    const mapped = mapTranscribeOutput(document, options({ dual_channel: true, punctuate: false }));
    expect(mapped.transcript).toBe("i've been on hold for an hour sorry about that");
    expect(new Set(mapped.words.map((word) => word.channel))).toEqual(new Set([1, 2]));
  });

  it('orders the words of both channels by time when they overlap', () => {
    const document = fixture('channel-identification') as {
      results: { items: { channel_label: string; start_time?: string; end_time?: string }[] };
    };
    // The second speaker starts while the first is still talking.
    for (const entry of document.results.items) {
      if (entry.channel_label === 'ch_1' && entry.start_time) {
        entry.start_time = String(Number(entry.start_time) - 3);
        entry.end_time = String(Number(entry.end_time) - 3);
      }
    }
    const mapped = mapTranscribeOutput(document, options({ dual_channel: true }));
    const starts = mapped.words.map((word) => word.startTime);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(mapped.words.map((word) => word.channel)).toEqual([1, 1, 1, 1, 2, 1, 2, 2, 1, 1]);
  });
});
