import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPieces } from '#speech/chunks';

const MAX_PIECE_MS = 30_000;

import { readWavLayout, wavDurationMs, writeWavSlice } from '#speech/wav';
import { type Sample, samplePath, samplesOfKind } from '#test/helpers/samples';

let workDir: string;
beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'chunks-'));
});
afterAll(() => rm(workDir, { recursive: true, force: true }));

describe('planPieces', () => {
  it('groups speech into chunks of at most the limit, cut in the silences between regions', () => {
    const regions = Array.from({ length: 10 }, (_, i) => ({
      startMs: i * 10_000,
      endMs: i * 10_000 + 8_000,
    }));
    const chunks = planPieces(regions, 100_000, MAX_PIECE_MS);
    expect(chunks.length).toBeGreaterThanOrEqual(4);
    expect(chunks[0]?.startMs).toBe(0);
    expect(chunks.at(-1)?.endMs).toBe(100_000);
    for (const [index, chunk] of chunks.entries()) {
      expect(chunk.endMs - chunk.startMs).toBeLessThanOrEqual(MAX_PIECE_MS + 2 * 1000);
      const next = chunks[index + 1];
      if (next) expect(next.startMs).toBeGreaterThanOrEqual(chunk.endMs);
      // No region is cut: every region lies inside one chunk.
    }
    for (const region of regions) {
      expect(chunks.some((chunk) => chunk.startMs <= region.startMs && chunk.endMs >= region.endMs)).toBe(
        true,
      );
    }
  });

  it('cuts a region longer than a piece into equal pieces', () => {
    const chunks = planPieces([{ startMs: 0, endMs: 75_000 }], 80_000, MAX_PIECE_MS);
    expect(chunks.map((chunk) => [chunk.startMs, chunk.endMs])).toEqual([
      [0, 25_000],
      [25_000, 50_000],
      [50_000, 80_000],
    ]);
  });

  it('makes as few pieces as the limit allows, of about equal length rather than full ones and a remainder', () => {
    // 75 s of utterances of 4 s with 1 s pauses: two pieces of about 37 s, not 60 s and 15 s.
    const regions = Array.from({ length: 15 }, (_, i) => ({ startMs: i * 5_000, endMs: i * 5_000 + 4_000 }));
    const pieces = planPieces(regions, 75_000, 60_000);
    expect(pieces).toHaveLength(2);
    const lengths = pieces.map((piece) => piece.endMs - piece.startMs);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(45_000);
    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(30_000);
    // Speech that fits one piece stays one piece, and no speech gives none.
    expect(planPieces(regions.slice(0, 10), 50_000, 60_000)).toEqual([{ startMs: 0, endMs: 50_000 }]);
    expect(planPieces([], 50_000, 60_000)).toEqual([]);
  });
});

describe('writeWavSlice', () => {
  it('copies the samples between two times into a WAV of their own', async () => {
    const sample = samplesOfKind('utterance').find((entry) => (entry.duration_s ?? 0) > 5) as Sample;
    const target = join(workDir, 'slice.wav');
    await writeWavSlice(samplePath(sample), 1000, 3500, target);
    expect(await wavDurationMs(target)).toBe(2500);
    expect(await readWavLayout(target)).toMatchObject({
      sampleRate: 16_000,
      channels: 1,
      bitsPerSample: 16,
      dataOffset: 44,
    });
  });
});
