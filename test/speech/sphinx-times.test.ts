import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TimedWord } from '#core/result';
import { runProcess } from '#speech/process';
import { SphinxRecognizer } from '#speech/sphinx';
import { wavDurationMs } from '#speech/wav';
import { samplePath, samplesOfKind } from '../helpers/samples.ts';

/**
 * PocketSphinx, dropping the frames its voice activity detector calls silence, can print an utterance
 * that begins with the file, in speech, with every time late by seconds. A piece cut inside unbroken
 * speech (what the chunk cutter makes of speech without pauses) then came back with its words past its
 * own end, and the speech gates dropped them all: 45 s of a 10-minute recording lost twice over.
 * The audio: the benchmark's unbroken speech (the 16 kHz utterances one after another), 30 s from a point
 * where PocketSphinx shows the fault; found by decoding 30 s windows every 7.5 s.
 */
const WINDOW_START_S = 172.5;
const WINDOW_S = 30;

let dir: string;
let piece: string;
let pieceMs: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sphinx-times-'));
  const utterances = samplesOfKind('utterance').filter(
    (sample) => sample.sample_rate === 16_000 && sample.reference_text,
  );
  const parts: string[] = [];
  for (let seconds = 0, index = 0; seconds < WINDOW_START_S + WINDOW_S; index++) {
    const sample = utterances[index % utterances.length];
    if (!sample) throw new Error('No 16 kHz utterances in the samples.');
    parts.push(`file '${samplePath(sample)}'`);
    seconds += sample.duration_s ?? 0;
  }
  const list = join(dir, 'list.txt');
  await writeFile(list, parts.join('\n'));
  piece = join(dir, 'piece.wav');
  const args = ['-v', 'error', '-f', 'concat', '-safe', '0', '-i', list, '-ss', String(WINDOW_START_S)];
  const cut = ['-t', String(WINDOW_S), '-ac', '1', '-ar', '16000', piece];
  const { code, stderr } = await runProcess('ffmpeg', [...args, ...cut], 60_000);
  if (code !== 0) throw new Error(`ffmpeg: ${stderr}`);
  pieceMs = await wavDurationMs(piece);
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const spoken = (words: TimedWord[]) => words.filter((word) => !/^<|^\[/.test(word.text));

describe("PocketSphinx's word times on a piece that begins inside speech", () => {
  it('stay within the piece, from its first seconds on, in order', async () => {
    const words = spoken(await new SphinxRecognizer().recognize(piece));
    expect(words.length).toBeGreaterThan(50);
    expect(words[0]?.startMs).toBeLessThan(2_000);
    expect(Math.max(...words.map((word) => word.endMs))).toBeLessThanOrEqual(pieceMs);
    const starts = words.map((word) => word.startMs);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));

    // The input still shows the fault it guards against: as printed, the first utterance starts late.
    const args = ['-infile', piece, '-time', 'yes', '-logfn', '/dev/null'];
    const { stdout } = await runProcess('pocketsphinx_continuous', args, 300_000);
    expect(Number(/^<s> (\S+)/m.exec(stdout)?.[1])).toBeGreaterThan(2);
  }, 300_000);
});
