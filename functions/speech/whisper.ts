import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { deflateSync } from 'node:zlib';
import type { TimedWord } from '#core/result';
import type { Recognizer } from './recognizer.ts';
import { readWavLayout } from './wav.ts';
import { checkWhisperModel, type WhisperModelInfo } from './whisper-models.ts';

/** A token of smart-whisper's `detail` format: text, probability, times in ms from the start of the audio. */
export interface WhisperToken {
  text: string;
  p: number;
  from?: number;
  to?: number;
}

/** A segment of smart-whisper's `detail` format. */
export interface WhisperSegment {
  from: number;
  to: number;
  text: string;
  tokens: WhisperToken[];
}

interface WhisperModelHandle {
  readonly handle: unknown;
  free(): Promise<void>;
}
interface SmartWhisper {
  WhisperModel: { load(file: string, gpu?: boolean): Promise<WhisperModelHandle> };
  transcribe(
    handle: unknown,
    pcm: Float32Array,
    params: Record<string, unknown>,
    finish: (results: WhisperSegment[] | Error) => void,
    progress: (result: WhisperSegment) => void,
  ): void;
}

/** The binding, loaded once; it is CommonJS, and absent from deployments of other engines. */
let binding: SmartWhisper | undefined;
function loadBinding(): SmartWhisper {
  if (!binding) {
    try {
      const smart = createRequire(import.meta.url)('smart-whisper') as { binding: SmartWhisper };
      binding = smart.binding;
    } catch (error) {
      throw new Error(
        `The whisper engine's binding (smart-whisper) is not built: run \`node local/setup.mjs\` (${String(error)}).`,
      );
    }
  }
  return binding;
}

export interface WhisperSettings {
  /** Threads of one recognition; recognitions run one at a time, so all cores by default. */
  threads?: number;
  /** Beams of the beam search (1: greedy decoding). */
  beamSize?: number;
}

/**
 * whisper.cpp's decoding settings. Beam search of 5 with a temperature fallback of 0.2 steps when a
 * window's entropy or average log probability shows a failed decode (whisper.cpp's `entropy_thold`
 * 2.4, its stand-in for OpenAI's compression-ratio threshold, and `logprob_thold` -1): the settings of
 * OpenAI's own evaluation and whisper.cpp's command line. Each piece is decoded without the text of
 * earlier ones (`no_context`), which keeps one piece's loop from seeding the next; non-speech tokens
 * (brackets, music signs) are suppressed. English only: the service transcribes `enUs`.
 */
function decodingParams(threads: number, beamSize: number): Record<string, unknown> {
  return {
    format: 'detail',
    language: 'en',
    token_timestamps: true,
    n_threads: threads,
    strategy: beamSize > 1 ? 1 : 0,
    beam_size: beamSize,
    best_of: 5,
    temperature: 0,
    temperature_inc: 0.2,
    entropy_thold: 2.4,
    logprob_thold: -1,
    no_context: true,
    suppress_blank: true,
    suppress_non_speech_tokens: true,
    print_progress: false,
    print_realtime: false,
    print_timestamps: false,
    print_special: false,
  };
}

/**
 * whisper.cpp through smart-whisper, in this process. The model file is checked when the recognizer
 * is made (so that a missing or corrupt model stops the worker at start-up, not a job), loaded once
 * on first use, and kept. Recognitions run one at a time, each on all cores.
 */
export class WhisperRecognizer implements Recognizer {
  readonly name = 'whisper';
  /** whisper writes cased, punctuated text; the pipeline keeps it (or plains it for `punctuate=false`). */
  readonly punctuates = true;
  /** whisper hears 30 s at a time. */
  readonly maxPieceMs = 30_000;
  readonly model: WhisperModelInfo;
  private readonly binding: SmartWhisper;
  private readonly params: Record<string, unknown>;
  private handle: Promise<WhisperModelHandle> | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(modelFile: string, settings: WhisperSettings = {}) {
    this.model = checkWhisperModel(modelFile);
    this.binding = loadBinding();
    this.params = decodingParams(settings.threads ?? availableParallelism(), settings.beamSize ?? 5);
  }

  recognize(wavFile: string): Promise<TimedWord[]> {
    const run = this.queue.then(async () => {
      const { samples, durationMs } = await readPcm(wavFile);
      if (samples.length === 0) return [];
      const { handle } = await this.loaded();
      const segments = await new Promise<WhisperSegment[]>((resolve, reject) => {
        this.binding.transcribe(
          handle,
          samples,
          this.params,
          (results) => (results instanceof Error ? reject(results) : resolve(results)),
          () => undefined,
        );
      });
      return wordsFromSegments(segments, durationMs);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Frees the model (tests; a worker keeps it for its life). */
  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await this.queue;
    if (handle) await (await handle).free();
  }

  private loaded(): Promise<WhisperModelHandle> {
    this.handle ??= this.binding.WhisperModel.load(this.model.file, false);
    // A failed load is tried again by the next recognition instead of being remembered.
    this.handle.catch(() => {
      this.handle = undefined;
    });
    return this.handle;
  }
}

/** The samples of a 16 kHz mono 16-bit WAV file as whisper.cpp takes them: floats in [-1, 1]. */
async function readPcm(wavFile: string): Promise<{ samples: Float32Array; durationMs: number }> {
  const layout = await readWavLayout(wavFile);
  if (layout.sampleRate !== 16_000 || layout.channels !== 1 || layout.bitsPerSample !== 16) {
    throw new Error('whisper needs 16 kHz mono 16-bit PCM.');
  }
  const data = (await readFile(wavFile)).subarray(layout.dataOffset, layout.dataOffset + layout.dataBytes);
  const samples = new Float32Array(Math.floor(data.length / 2));
  for (let i = 0; i < samples.length; i++) samples[i] = data.readInt16LE(i * 2) / 32_768;
  return { samples, durationMs: (samples.length / 16_000) * 1000 };
}

/** whisper.cpp's special tokens: `[_BEG_]`, `[_TT_150]`, `<|endoftext|>`, … */
const SPECIAL_TOKEN = /^(\[_[A-Z]+_?\d*\]|<\|[^|]*\|>)$/;
/** Characters a partial UTF-8 sequence of one token decodes to. */
const REPLACEMENT = /\uFFFD/g;
/** What whisper writes for non-speech: `[BLANK_AUDIO]`, `(music)`, `*laughs*`, `♪`; the openers and closers. */
const OPENERS = new Set(['[', '(', '*']);
const CLOSERS: Record<string, string> = { '[': ']', '(': ')', '*': '*' };
/** A word with no letter or digit (a lone dash, an ellipsis, music signs) is not a word. */
const HAS_WORD_CHARACTER = /[\p{L}\p{N}]/u;

/**
 * The words of whisper's segments in the piece's time: tokens joined into words (a token that starts
 * with a space starts a word), special tokens and non-speech annotations dropped, times kept inside
 * the piece and in spoken order, each word's confidence the mean probability of its tokens; then
 * repetition loops removed.
 */
export function wordsFromSegments(segments: WhisperSegment[], durationMs: number): TimedWord[] {
  const words: TimedWord[] = [];
  for (const segment of segments) {
    const segmentWords = withoutLoops(withoutAnnotations(joinTokens(segment)));
    if (segmentWords.length > 0 && isRepetitive(segmentWords)) continue;
    words.push(...segmentWords);
  }
  return withoutLoops(inPiece(words, durationMs));
}

interface Heard {
  text: string;
  startMs: number;
  endMs: number;
  probabilities: number[];
}

function joinTokens(segment: WhisperSegment): TimedWord[] {
  const heard: Heard[] = [];
  for (const token of segment.tokens) {
    const text = token.text.replace(REPLACEMENT, '');
    if (SPECIAL_TOKEN.test(token.text) || text === '') continue;
    const startMs = finiteOr(token.from, segment.from);
    const endMs = finiteOr(token.to, startMs);
    const current = heard.at(-1);
    if (!current || /^\s/.test(text)) {
      heard.push({ text: text.trim(), startMs, endMs, probabilities: [token.p] });
    } else {
      current.text += text;
      current.endMs = Math.max(current.endMs, endMs);
      current.probabilities.push(token.p);
    }
  }
  return heard
    .filter((word) => word.text !== '')
    .map((word) => ({
      text: word.text,
      startMs: word.startMs,
      endMs: Math.max(word.startMs, word.endMs),
      confidence: Number(
        (word.probabilities.reduce((sum, p) => sum + clamp01(p), 0) / word.probabilities.length).toFixed(3),
      ),
    }));
}

/** Drops bracketed, parenthesised and starred spans (`[BLANK_AUDIO]`, `(upbeat music)`), and non-words. */
function withoutAnnotations(words: TimedWord[]): TimedWord[] {
  const kept: TimedWord[] = [];
  let closer: string | undefined;
  for (const word of words) {
    if (closer === undefined && OPENERS.has(word.text[0] ?? '')) closer = CLOSERS[word.text[0] ?? ''];
    if (closer !== undefined) {
      // The span ends with the word that closes it (after its first character, for `*laughs*`).
      if (word.text.slice(1).includes(closer)) closer = undefined;
      continue;
    }
    if (HAS_WORD_CHARACTER.test(word.text)) kept.push(word);
  }
  return kept;
}

/** Longest repeated phrase looked for, in words. */
const MAX_LOOP_WORDS = 8;
/** Consecutive copies of a phrase that make a loop: a word said four times, a phrase three times. */
const loopCopies = (phraseWords: number) => (phraseWords === 1 ? 4 : 3);
const normalized = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '');

/**
 * Removes repetition loops, whisper's known failure where the decoder repeats a word or phrase
 * ("the the the the", "I'm going to. I'm going to. I'm going to."): a phrase of up to eight words
 * repeated at least three times in a row (a single word, four times) keeps its first copy.
 */
export function withoutLoops(words: TimedWord[]): TimedWord[] {
  let result = words;
  for (let size = 1; size <= MAX_LOOP_WORDS; size++) {
    const keys = result.map((word) => normalized(word.text));
    const drop = new Set<number>();
    for (let start = 0; start + size <= result.length; start++) {
      let copies = 1;
      while (
        start + (copies + 1) * size <= result.length &&
        Array.from({ length: size }, (_, i) => keys[start + i] === keys[start + copies * size + i]).every(
          Boolean,
        )
      ) {
        copies++;
      }
      if (copies >= loopCopies(size)) {
        for (let index = start + size; index < start + copies * size; index++) drop.add(index);
        start += copies * size - 1;
      }
    }
    if (drop.size > 0) result = result.filter((_, index) => !drop.has(index));
  }
  return result;
}

/**
 * OpenAI's check for a failed decode: text that gzip compresses more than 2.4 times is repetitive
 * beyond what speech is. Exact loops are removed before; this catches the looser ones. Short text
 * never compresses that well, so it never trips.
 */
const MAX_COMPRESSION_RATIO = 2.4;
function isRepetitive(words: TimedWord[]): boolean {
  const text = Buffer.from(words.map((word) => word.text).join(' '));
  return text.length / deflateSync(text).length > MAX_COMPRESSION_RATIO;
}

/**
 * Times inside the piece and in spoken order: whisper's token timestamps may run past the audio's
 * end (on the padding of its 30 s window) or step back at a segment boundary.
 */
function inPiece(words: TimedWord[], durationMs: number): TimedWord[] {
  const kept: TimedWord[] = [];
  for (const word of words) {
    const previous = kept.at(-1);
    const startMs = Math.max(0, word.startMs, previous?.startMs ?? 0);
    if (startMs >= durationMs) continue;
    const endMs = Math.min(durationMs, Math.max(startMs, word.endMs));
    kept.push({ ...word, startMs: Math.round(startMs), endMs: Math.round(endMs) });
  }
  return kept;
}

function finiteOr(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) ? value : fallback;
}

function clamp01(value: number): number {
  return Number.isFinite(value) ? Math.min(1, Math.max(0, value)) : 0;
}
