import type { SpeechRegion } from './vad.ts';

/** Longest chunk of audio one recogniser process decodes when long audio is split. */
export const MAX_CHUNK_MS = 30_000;
/** Silence kept on each side of a chunk, so that words at its edges are whole. */
const EDGE_MS = 200;

/**
 * Groups speech regions into chunks of at most MAX_CHUNK_MS, cut in the silences between regions
 * (a region longer than a chunk becomes chunks of its own). Chunks are cut at the middle of the gap.
 */
export function planChunks(regions: SpeechRegion[], durationMs: number): SpeechRegion[] {
  const chunks: SpeechRegion[] = [];
  for (const region of regions) {
    const current = chunks.at(-1);
    if (current && region.endMs - current.startMs <= MAX_CHUNK_MS) {
      current.endMs = region.endMs;
      continue;
    }
    for (let start = region.startMs; start < region.endMs; start += MAX_CHUNK_MS) {
      chunks.push({ startMs: start, endMs: Math.min(region.endMs, start + MAX_CHUNK_MS) });
    }
  }
  return chunks.map((chunk, index) => {
    const previous = chunks[index - 1];
    const next = chunks[index + 1];
    const startMs = previous ? Math.max(chunk.startMs - EDGE_MS, (previous.endMs + chunk.startMs) / 2) : 0;
    const endMs = next ? Math.min(chunk.endMs + EDGE_MS, (chunk.endMs + next.startMs) / 2) : durationMs;
    return { startMs: Math.round(startMs), endMs: Math.round(endMs) };
  });
}
