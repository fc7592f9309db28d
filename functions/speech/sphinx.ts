import { JobFailure } from '#core/errors';
import type { TimedWord } from '#core/result';
import { runProcess } from './process.ts';
import type { Recognizer } from './recognizer.ts';
import { type SphinxDecoderPool, sphinxDecoderPool } from './sphinx-decoder.ts';
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

/** A token of the output, markers included: they hold the utterance's bounds. */
interface Token {
  text: string;
  startMs: number;
  endMs: number;
  probability: number;
}

/** Past this, an utterance's end overlapping the next one (or the audio's end) is PocketSphinx's clock. */
const CLOCK_TOLERANCE_MS = 100;

/**
 * Parses `pocketsphinx_continuous -time yes` output: per utterance a hypothesis line, then one line per
 * token `word start end confidence` with times in seconds.
 *
 * PocketSphinx drops the frames its voice activity detector calls silence, and an utterance that begins
 * with the file, in speech, can come out with all its times late by seconds, tens of seconds on a long
 * one: a piece cut inside unbroken speech had its words past its own end, and the speech gates dropped
 * them. Utterances follow one another, so one that ends after the next begins (or after the audio,
 * `audioMs`, ends) is moved back by the excess: the shift is the same for all its words, and the decoder
 * ends an utterance where the next begins. Keeping the silence frames (`-remove_silence no`) keeps the
 * clock too, but cost words on the held-out conversations (README, *PocketSphinx's clock*).
 */
export function parseSphinxOutput(output: string, audioMs = Number.POSITIVE_INFINITY): TimedWord[] {
  const utterances: Token[][] = [];
  let current: Token[] = [];
  const endUtterance = () => {
    if (current.length > 0) utterances.push(current);
    current = [];
  };
  for (const line of output.split('\n')) {
    const [text = '', ...fields] = line.trim().split(/\s+/);
    const numbers = fields.map(Number);
    if (numbers.length !== 3 || numbers.some((value) => !Number.isFinite(value))) {
      // A hypothesis line: the next utterance's tokens follow.
      if (text) endUtterance();
      continue;
    }
    if (/^<s>$/i.test(text)) endUtterance();
    const [startSeconds = 0, endSeconds = 0, probability = 0] = numbers;
    current.push({
      text,
      startMs: Math.round(startSeconds * 1000),
      endMs: Math.max(Math.round(startSeconds * 1000), Math.round(endSeconds * 1000)),
      probability,
    });
  }
  endUtterance();
  let next = audioMs;
  for (const tokens of [...utterances].reverse()) {
    const late = Math.max(...tokens.map((token) => token.endMs)) - next;
    if (late > CLOCK_TOLERANCE_MS)
      for (const token of tokens) {
        token.startMs = Math.max(0, token.startMs - late);
        token.endMs = Math.max(token.startMs, token.endMs - late);
      }
    next = Math.min(next, ...tokens.map((token) => token.startMs));
  }
  return utterances
    .flat()
    .filter((token) => !NON_WORD.test(token.text))
    .map((token) => ({
      text: token.text.replace(VARIANT, '').toLowerCase(),
      startMs: token.startMs,
      endMs: token.endMs,
      // The decoder's posterior can exceed 1 by rounding; three decimals are all it means.
      confidence: Number(Math.min(1, Math.max(0, token.probability)).toFixed(3)),
    }));
}

/**
 * PocketSphinx (Debian `pocketsphinx` with the `pocketsphinx-en-us` model), kept loaded in the
 * `sphinx-decoder` helper (`sphinx-decoder.ts`).
 *
 * PocketSphinx normalises features by a running cepstral mean that starts, in every decode, at the
 * model's `-cmninit`. Audio whose level or channel differs from the model's training audio is decoded
 * against a wrong mean until it has converged: the first seconds of every piece, and the whole of a
 * short file (README, *PocketSphinx's cepstral mean*). So each request first runs PocketSphinx's front end
 * alone (a keyword search for one word of a one-word dictionary) up to the running mean's first update,
 * the audio's opening seconds, and decodes from there; the model's own mean when it finds no speech. The
 * last update did as well on short files but worse where the last speaker sounds unlike the first.
 */
export class SphinxRecognizer implements Recognizer {
  readonly name = 'sphinx';
  /**
   * Its own voice activity detection splits a piece into utterances at pauses, and unbroken speech is
   * recognised better in longer utterances (README, *Long audio*): longer pieces, less parallelism.
   */
  readonly maxPieceMs = 60_000;
  private readonly decoders: SphinxDecoderPool;

  /**
   * PocketSphinx's own decoder settings: a stronger word insertion penalty (`-wip 0.2`), tuned on the
   * manifest's utterances, gained 3.2 points there but lost 1.0 on the held-out diarization set (README,
   * *Measuring quality and speed*), so none is set.
   */
  constructor(options: { decoder?: string } = {}) {
    this.decoders = sphinxDecoderPool(options.decoder);
  }

  async recognize(wavFile: string): Promise<TimedWord[]> {
    const audioMs = await wavDurationMs(wavFile);
    const outcome = await this.decoders.decode(wavFile, timeLimitMs(audioMs));
    if (outcome.timedOut) throw tookTooLong();
    return parseSphinxOutput(outcome.output, audioMs);
  }
}

/**
 * PocketSphinx as it comes: `pocketsphinx_continuous` over the file in one process, default settings.
 * The evaluation's yardstick (`npm run eval -- --baseline`), not a recognizer the service runs.
 */
export class RawSphinxRecognizer implements Recognizer {
  readonly name = 'sphinx';
  readonly maxPieceMs = Number.POSITIVE_INFINITY;

  constructor(private readonly command = 'pocketsphinx_continuous') {}

  async recognize(wavFile: string): Promise<TimedWord[]> {
    const audioMs = await wavDurationMs(wavFile);
    const { code, stdout, timedOut } = await runProcess(
      this.command,
      ['-infile', wavFile, '-time', 'yes', '-logfn', '/dev/null'],
      timeLimitMs(audioMs),
    );
    if (timedOut) throw tookTooLong();
    if (code !== 0) throw new Error(`${this.command} exited with code ${code}.`);
    return parseSphinxOutput(stdout, audioMs);
  }
}

const tookTooLong = () => new JobFailure('transcription_failed', 'Speech recognition took too long.');
