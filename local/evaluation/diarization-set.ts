import { createHash } from 'node:crypto';

/**
 * The diarization set (`diarization.json` beside `manifest.json`): conversations and calls kept out of
 * the manifest. Tuning looks only at part of it; the rest is held out, to measure how the method does
 * on audio nobody tuned for.
 */
export const DIARIZATION_SET_FILE = 'diarization.json';

export type DiarizationSplit = 'tuning' | 'held-out';

/**
 * A fixed split that knows nothing of the audio: an entry is held out when the first byte of the
 * SHA-256 of its id is even. The two conversations of `manifest.json`, which the first method was
 * tuned on, belong to the tuning set.
 */
export function diarizationSplit(id: string): DiarizationSplit {
  const firstByte = createHash('sha256').update(id).digest()[0] ?? 0;
  return firstByte % 2 === 0 ? 'held-out' : 'tuning';
}
