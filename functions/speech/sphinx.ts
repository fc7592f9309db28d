import { JobFailure } from '#core/errors';
import type { TimedWord } from '#core/result';
import { runProcess } from './process.ts';
import type { Recognizer } from './recognizer.ts';
import { wavDurationMs } from './wav.ts';

/**
 * PocketSphinx runs at about a quarter of real time here, slower on long unbroken speech and on a busy
 * machine (twice real time was seen); the limit allows sixteen times a quarter, and a minute.
 */
const timeLimitMs = (audioMs: number) => 60_000 + 4 * audioMs;

/** Markers and fillers that are not words: sentence bounds, silence, noise, `++BREATH++`-style fillers. */
const NON_WORD = /^(<\/?s>|<sil>|\[[^\]]*\]|\+\+.*\+\+)$/i;
/** Pronunciation variants are printed as `word(2)`. */
const VARIANT = /\(\d+\)$/;

/**
 * Parses `pocketsphinx_continuous -time yes` output: per utterance a hypothesis line, then one line per
 * token `word start end confidence` with times in seconds.
 */
export function parseSphinxOutput(output: string): TimedWord[] {
  const words: TimedWord[] = [];
  for (const line of output.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts.length !== 4) continue;
    const [token = '', start, end, confidence] = parts;
    const numbers = [start, end, confidence].map(Number);
    if (numbers.some((value) => !Number.isFinite(value))) continue;
    if (NON_WORD.test(token)) continue;
    const [startSeconds = 0, endSeconds = 0, probability = 0] = numbers;
    words.push({
      text: token.replace(VARIANT, '').toLowerCase(),
      startMs: Math.round(startSeconds * 1000),
      endMs: Math.max(Math.round(startSeconds * 1000), Math.round(endSeconds * 1000)),
      // The decoder's posterior can exceed 1 by rounding; three decimals are all it means.
      confidence: Number(Math.min(1, Math.max(0, probability)).toFixed(3)),
    });
  }
  return words;
}

/** PocketSphinx (Debian `pocketsphinx` with the `pocketsphinx-en-us` model), run as a child process. */
export class SphinxRecognizer implements Recognizer {
  readonly name = 'sphinx';
  /**
   * Its own voice activity detection splits a piece into utterances at pauses, and unbroken speech is
   * recognised better in longer utterances (README, *Long audio*): longer pieces, less parallelism.
   */
  readonly maxPieceMs = 60_000;

  /**
   * PocketSphinx's own decoder settings: a stronger word insertion penalty (`-wip 0.2`), tuned on the
   * manifest's utterances, gained 3.2 points there but lost 1.0 on the held-out diarization set (README,
   * *Measuring quality and speed*), so none is set.
   */
  constructor(
    private readonly command = 'pocketsphinx_continuous',
    private readonly extraArgs: string[] = [],
  ) {}

  async recognize(wavFile: string): Promise<TimedWord[]> {
    const { code, stdout, timedOut } = await runProcess(
      this.command,
      ['-infile', wavFile, '-time', 'yes', '-logfn', '/dev/null', ...this.extraArgs],
      timeLimitMs(await wavDurationMs(wavFile)),
    );
    if (timedOut) throw new JobFailure('transcription_failed', 'Speech recognition took too long.');
    if (code !== 0) {
      throw new Error(`pocketsphinx_continuous exited with code ${code}.`);
    }
    return parseSphinxOutput(stdout);
  }
}
