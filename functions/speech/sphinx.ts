import { readFile, rm, writeFile } from 'node:fs/promises';
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
 * The first of the two passes needs the front end only (voice activity and features are computed as
 * in a full decode, whatever the search): a keyword search for one word of a one-word dictionary
 * spares loading the 130,000-word dictionary and the language model, most of a decode's start-up.
 */
const FRONT_END_PASS_WORD = 'hello';
const FRONT_END_PASS_DICTIONARY = `${FRONT_END_PASS_WORD} HH AH L OW\n`;
/** Logged by the live cepstral mean normalisation each time it updates its mean. */
const CEPSTRAL_MEAN_UPDATE = /Update to\s+<([^>]+)>/;
/** Logged when the model's feature parameters (among them its initial cepstral mean) are read. */
const MODEL_FEATURE_PARAMETERS = /Parsed model-specific feature parameters from (\S+)/;

/** PocketSphinx (Debian `pocketsphinx` with the `pocketsphinx-en-us` model), run as a child process. */
export class SphinxRecognizer implements Recognizer {
  readonly name = 'sphinx';
  /**
   * Its own voice activity detection splits a piece into utterances at pauses, and unbroken speech is
   * recognised better in longer utterances (README, *Long audio*): longer pieces, less parallelism.
   */
  readonly maxPieceMs = 60_000;
  private readonly command: string;
  private readonly estimateCepstralMean: boolean;

  /**
   * PocketSphinx's own decoder settings: a stronger word insertion penalty (`-wip 0.2`), tuned on the
   * manifest's utterances, gained 3.2 points there but lost 1.0 on the held-out diarization set (README,
   * *Measuring quality and speed*), so none is set. `estimateCepstralMean: false` is PocketSphinx as it
   * comes, the evaluation's yardstick.
   */
  constructor(options: { command?: string; estimateCepstralMean?: boolean } = {}) {
    this.command = options.command ?? 'pocketsphinx_continuous';
    this.estimateCepstralMean = options.estimateCepstralMean ?? true;
  }

  async recognize(wavFile: string): Promise<TimedWord[]> {
    const audioMs = await wavDurationMs(wavFile);
    const limitMs = timeLimitMs(audioMs);
    const featureParameters = this.estimateCepstralMean
      ? await this.writeFeatureParameters(wavFile, limitMs)
      : undefined;
    try {
      const { stdout } = await this.run(
        [
          ...['-infile', wavFile, '-time', 'yes', '-logfn', '/dev/null'],
          ...(featureParameters ? ['-featparams', featureParameters] : []),
        ],
        limitMs,
      );
      return parseSphinxOutput(stdout, audioMs);
    } finally {
      if (featureParameters) await rm(featureParameters, { force: true });
    }
  }

  /**
   * PocketSphinx normalises features by a running cepstral mean that starts, in every process, at the
   * model's `-cmninit` (feat.params, which overrides the command line). Audio whose level or channel
   * differs from the model's training audio is decoded against a wrong mean until it has converged: the
   * first seconds of every piece, and the whole of a short file (README, *PocketSphinx's cepstral mean*).
   * A first pass with a one-word keyword search computes the same features and logs the running
   * mean; its first update (the audio's opening seconds, what the decode starts on) becomes the start in
   * a copy of the model's feature parameters written beside the audio. The last update did as well on
   * short files but worse where the last speaker sounds unlike the first. Answers undefined when the pass
   * finds no speech (or logs no model): the model as is.
   */
  async writeFeatureParameters(wavFile: string, limitMs: number): Promise<string | undefined> {
    const dictionary = `${wavFile}.dict`;
    await writeFile(dictionary, FRONT_END_PASS_DICTIONARY);
    const pass = await this.run(
      ['-infile', wavFile, '-dict', dictionary, '-keyphrase', FRONT_END_PASS_WORD],
      limitMs,
      // Stopped at that first update: the rest of the pass would only be waited for.
      CEPSTRAL_MEAN_UPDATE,
    ).finally(() => rm(dictionary, { force: true }));
    const mean = CEPSTRAL_MEAN_UPDATE.exec(pass.stderr)?.[1]?.trim().split(/\s+/);
    const modelFile = MODEL_FEATURE_PARAMETERS.exec(pass.stderr)?.[1];
    if (!mean || !modelFile || mean.some((value) => !Number.isFinite(Number(value)))) return undefined;
    const parameters = (await readFile(modelFile, 'utf8'))
      .split('\n')
      .filter((line) => line.trim() && !line.startsWith('-cmninit'))
      .concat(`-cmninit ${mean.join(',')}`, '')
      .join('\n');
    const file = `${wavFile}.feat.params`;
    await writeFile(file, parameters);
    return file;
  }

  /**
   * One run of PocketSphinx, either pass: killed at the time limit, and a failure unless it exits
   * cleanly or was stopped once its log showed `stopWhen`.
   */
  private async run(
    args: string[],
    limitMs: number,
    stopWhen?: RegExp,
  ): Promise<{ stdout: string; stderr: string }> {
    const { code, stdout, stderr, timedOut, stopped } = await runProcess(
      this.command,
      args,
      limitMs,
      stopWhen ? { stopWhen } : {},
    );
    if (timedOut) throw new JobFailure('transcription_failed', 'Speech recognition took too long.');
    if (code !== 0 && !stopped) throw new Error(`${this.command} exited with code ${code}.`);
    return { stdout, stderr };
  }
}
