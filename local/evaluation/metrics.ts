import nlp from 'compromise';
import type { TranscriptResult } from '#core/result';

/**
 * Scores of a transcription against references, as the eval command prints them. Conventions differ
 * between corpora (case, punctuation, numbers), so both sides are normalised the same way first.
 */

/**
 * Words for scoring: numbers spelled out, and (unless case counts) lower case; punctuation dropped.
 * Each token written with digits is spelled out on its own (`20th` → `twentieth`, `1,000` → `one
 * thousand`): the references spell numbers, and parsing spelled numbers in context proved unstable
 * (casing and sentence breaks changed the parse, and `a second` became `0.5th`).
 */
export function normalizeWords(text: string, options: { keepCase?: boolean } = {}): string[] {
  const cased = options.keepCase ? text : text.toLowerCase();
  return cased
    .split(/\s+/)
    .map((token) => (/\d/.test(token) ? spellNumber(token) : token))
    .join(' ')
    .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
    .split(/\s+/)
    .map((word) => word.replace(/^'+|'+$/g, ''))
    .filter(Boolean);
}

function spellNumber(token: string): string {
  const document = nlp(token);
  document.numbers().toText();
  return document.text();
}

/** The p-th percentile (nearest rank) of `samples`; 0 when there are none. */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
}

/** Word error rate: (substitutions + deletions + insertions) / reference words. */
export function wordErrorRate(
  reference: string,
  hypothesis: string,
  options: { keepCase?: boolean } = {},
): number {
  const counts = wordErrors(reference, hypothesis, options);
  return counts.referenceWords === 0 ? (counts.errors === 0 ? 0 : 1) : counts.errors / counts.referenceWords;
}

export function wordErrors(
  reference: string,
  hypothesis: string,
  options: { keepCase?: boolean } = {},
): { errors: number; referenceWords: number } {
  const ref = normalizeWords(reference, options);
  const hyp = normalizeWords(hypothesis, options);
  let previous = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const current = [i];
    for (let j = 1; j <= hyp.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return { errors: previous[hyp.length] ?? 0, referenceWords: ref.length };
}

export interface SpeakerTurn {
  speaker: string;
  startMs: number;
  endMs: number;
}

const FRAME_MS = 10;

/**
 * Diarization error rate, frame by frame (10 ms): missed speech + false alarm + speaker confusion,
 * over reference speech, under the best one-to-one mapping of hypothesis to reference speakers.
 * Frames within `collarMs` of a reference turn boundary are not scored (NIST's usual 250 ms).
 */
export function diarizationErrorRate(
  reference: SpeakerTurn[],
  hypothesis: SpeakerTurn[],
  collarMs = 250,
): number {
  const end = Math.max(0, ...reference.map((turn) => turn.endMs), ...hypothesis.map((turn) => turn.endMs));
  const frames = Math.ceil(end / FRAME_MS);
  const scored = new Uint8Array(frames).fill(1);
  for (const turn of reference) {
    for (const boundary of [turn.startMs, turn.endMs]) {
      const from = Math.max(0, Math.floor((boundary - collarMs) / FRAME_MS));
      const to = Math.min(frames, Math.ceil((boundary + collarMs) / FRAME_MS));
      scored.fill(0, from, to);
    }
  }
  const speakersAt = (turns: SpeakerTurn[]) => {
    const at: Set<string>[] = Array.from({ length: frames }, () => new Set());
    for (const turn of turns) {
      for (
        let frame = Math.floor(turn.startMs / FRAME_MS);
        frame < Math.min(frames, Math.ceil(turn.endMs / FRAME_MS));
        frame++
      ) {
        at[frame]?.add(turn.speaker);
      }
    }
    return at;
  };
  const refAt = speakersAt(reference);
  const hypAt = speakersAt(hypothesis);

  // Overlap in scored frames between each hypothesis and reference speaker, for the mapping.
  const overlap = new Map<string, number>();
  for (let frame = 0; frame < frames; frame++) {
    if (!scored[frame]) continue;
    for (const hyp of hypAt[frame] ?? [])
      for (const ref of refAt[frame] ?? [])
        overlap.set(`${hyp}\u0000${ref}`, (overlap.get(`${hyp}\u0000${ref}`) ?? 0) + 1);
  }
  const mapping = bestMapping(
    [...new Set(hypothesis.map((turn) => turn.speaker))],
    [...new Set(reference.map((turn) => turn.speaker))],
    (hyp, ref) => overlap.get(`${hyp}\u0000${ref}`) ?? 0,
  );

  let referenceSpeech = 0;
  let errors = 0;
  for (let frame = 0; frame < frames; frame++) {
    if (!scored[frame]) continue;
    const refs = refAt[frame] ?? new Set<string>();
    const hyps = hypAt[frame] ?? new Set<string>();
    let correct = 0;
    for (const hyp of hyps) if (refs.has(mapping.get(hyp) ?? '')) correct += 1;
    referenceSpeech += refs.size;
    errors += Math.max(refs.size, hyps.size) - correct;
  }
  return referenceSpeech === 0 ? 0 : errors / referenceSpeech;
}

export interface AttributedWord {
  /** The speaker the system gave the word; undefined counts as a speaker of its own. */
  speaker?: string;
  startMs: number;
  endMs: number;
  /** 1-based channel of the word (dual-channel results), matched to a reference turn's 0-based channel. */
  channel?: number;
}

export interface ChannelTurn extends SpeakerTurn {
  /** 0-based channel, as `diarization.json` numbers them; absent on mono files. */
  channel?: number;
}

/** A word is judged against the reference turns its middle falls in, give or take this much. */
const WORD_TOLERANCE_MS = 250;

/**
 * Word-level diarization error: the share of words given the wrong speaker, under the one-to-one mapping
 * of system to reference speakers that gets the most words right. A word is judged when its middle lies in
 * the turns of exactly one reference speaker (on its channel, for dual-channel files); words in overlapped
 * speech or outside every turn are recognition errors, which word error rate counts, and are left out.
 */
export function wordDiarizationErrors(
  words: AttributedWord[],
  reference: ChannelTurn[],
): { wrong: number; judged: number } {
  const judged: { hyp: string; ref: string }[] = [];
  for (const word of words) {
    const middle = (word.startMs + word.endMs) / 2;
    const speakers = new Set(
      reference
        .filter(
          (turn) =>
            middle >= turn.startMs - WORD_TOLERANCE_MS &&
            middle <= turn.endMs + WORD_TOLERANCE_MS &&
            (turn.channel === undefined || word.channel === undefined || turn.channel + 1 === word.channel),
        )
        .map((turn) => turn.speaker),
    );
    const [only] = speakers;
    if (speakers.size === 1 && only !== undefined) judged.push({ hyp: word.speaker ?? '', ref: only });
  }
  const counts = new Map<string, number>();
  for (const { hyp, ref } of judged)
    counts.set(`${hyp}\u0000${ref}`, (counts.get(`${hyp}\u0000${ref}`) ?? 0) + 1);
  const mapping = bestMapping(
    [...new Set(judged.map((pair) => pair.hyp))],
    [...new Set(judged.map((pair) => pair.ref))],
    (hyp, ref) => counts.get(`${hyp}\u0000${ref}`) ?? 0,
  );
  const right = judged.filter((pair) => mapping.get(pair.hyp) === pair.ref).length;
  return { wrong: judged.length - right, judged: judged.length };
}

/** The one-to-one mapping with the most total overlap: every permutation for few speakers, greedy beyond. */
function bestMapping(
  hyps: string[],
  refs: string[],
  gain: (hyp: string, ref: string) => number,
): Map<string, string> {
  if (hyps.length <= 7 && refs.length <= 7) {
    let best: { score: number; pairs: [string, string][] } = { score: -1, pairs: [] };
    const search = (index: number, used: Set<string>, pairs: [string, string][], score: number) => {
      if (index === hyps.length) {
        if (score > best.score) best = { score, pairs: [...pairs] };
        return;
      }
      const hyp = hyps[index] as string;
      search(index + 1, used, pairs, score);
      for (const ref of refs) {
        if (used.has(ref)) continue;
        used.add(ref);
        pairs.push([hyp, ref]);
        search(index + 1, used, pairs, score + gain(hyp, ref));
        pairs.pop();
        used.delete(ref);
      }
    };
    search(0, new Set(), [], 0);
    return new Map(best.pairs);
  }
  const candidates = hyps.flatMap((hyp) => refs.map((ref) => ({ hyp, ref, score: gain(hyp, ref) })));
  candidates.sort((a, b) => b.score - a.score);
  const mapping = new Map<string, string>();
  const taken = new Set<string>();
  for (const { hyp, ref } of candidates) {
    if (mapping.has(hyp) || taken.has(ref)) continue;
    mapping.set(hyp, ref);
    taken.add(ref);
  }
  return mapping;
}

/** DER of a result's turns and the word-level diarization error of its words, against reference turns. */
export function diarizationScores(
  result: Pick<TranscriptResult, 'words' | 'utterances'>,
  reference: ChannelTurn[],
): { der: number; wrong: number; judged: number } {
  const hypothesis = (result.utterances ?? []).map((turn) => ({
    speaker: turn.speaker ?? '',
    startMs: turn.startTime,
    endMs: turn.endTime,
  }));
  const words = result.words.map((word) => ({
    startMs: word.startTime,
    endMs: word.endTime,
    ...(word.speaker !== undefined ? { speaker: word.speaker } : {}),
    ...(word.channel !== undefined ? { channel: word.channel } : {}),
  }));
  return { der: diarizationErrorRate(reference, hypothesis), ...wordDiarizationErrors(words, reference) };
}
