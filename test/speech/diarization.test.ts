import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diarizationErrorRate } from '#local/evaluation/metrics';
import { diarize, speakerAt } from '#speech/diarization';
import { decodeToWav } from '#speech/media';
import { detectSpeech } from '#speech/vad';
import { detectVoicing } from '#speech/voicing';
import { type Sample, samplePath, samplesOfKind } from '#test/helpers/samples';

let workDir: string;
beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'diarization-'));
});
afterAll(() => rm(workDir, { recursive: true, force: true }));

interface Speakers {
  speakers?: { speaker: string; start: number; end: number }[];
}

async function segmentsOf(sample: Sample) {
  const [wav = ''] = await decodeToWav(samplePath(sample), await mkdtemp(join(workDir, 'x-')));
  return diarize(wav, await detectSpeech(wav), await detectVoicing(wav));
}

describe('voice activity detection', () => {
  it('finds speech in an utterance and none in silence or noise', async () => {
    const utterance = samplesOfKind('utterance').find((sample) => (sample.duration_s ?? 0) > 5) as Sample;
    const [wav = ''] = await decodeToWav(samplePath(utterance), await mkdtemp(join(workDir, 'v-')));
    const regions = await detectSpeech(wav);
    const speech = regions.reduce((sum, region) => sum + region.endMs - region.startMs, 0);
    expect(speech).toBeGreaterThan((utterance.duration_s ?? 0) * 1000 * 0.5);
    for (const sample of samplesOfKind('bad').filter((entry) => entry.expect === 'empty_transcript')) {
      const [silent = ''] = await decodeToWav(samplePath(sample), await mkdtemp(join(workDir, 'v-')));
      expect(await detectSpeech(silent)).toEqual([]);
    }
  });
});

describe('diarize', () => {
  it.each(samplesOfKind('conversation').map((sample) => [sample.id, sample]))(
    'finds the two speakers of %s with a diarization error rate of at most 25%',
    async (_id, sample) => {
      const segments = await segmentsOf(sample);
      const reference = ((sample as Speakers).speakers ?? []).map((turn) => ({
        speaker: turn.speaker,
        startMs: turn.start * 1000,
        endMs: turn.end * 1000,
      }));
      expect(new Set(segments.map((segment) => segment.speaker)).size).toBe(
        new Set(reference.map((t) => t.speaker)).size,
      );
      const hypothesis = segments.map((segment) => ({ ...segment, speaker: String(segment.speaker) }));
      expect(diarizationErrorRate(reference, hypothesis)).toBeLessThanOrEqual(0.25);
    },
  );

  it('finds one speaker in single-speaker recordings', async () => {
    for (const sample of samplesOfKind('utterance').filter((_, index) => index % 6 === 0)) {
      const segments = await segmentsOf(sample);
      expect(new Set(segments.map((segment) => segment.speaker)).size, sample.id).toBe(1);
    }
  });

  it('gives a word the speaker it overlaps most, or the nearest', () => {
    const segments = [
      { startMs: 0, endMs: 1000, speaker: 0 },
      { startMs: 1000, endMs: 2000, speaker: 1 },
    ];
    expect(speakerAt(segments, 800, 1500)).toBe(1);
    expect(speakerAt(segments, 100, 300)).toBe(0);
    expect(speakerAt(segments, 2500, 2600)).toBe(1);
    expect(speakerAt([], 0, 10)).toBeUndefined();
  });
});
