import nlp from 'compromise';
import type { Summarizer, SummaryRequest, Transcription } from '#core/ports';
import { joinWords, type TranscriptResult, type Word } from '#core/result';
import { countWords, splitSentences } from '#core/text';
import { SENTENCE_PAUSE_MS } from './punctuation.ts';

/** Share of the transcript's words a TL;DR may use. */
const TLDR_SHARE = 0.2;
/** Share of the sentences that become notes. */
const NOTES_SHARE = 0.3;
/** A sentence cut from unpunctuated text is at most this many words. */
const MAX_SENTENCE_WORDS = 25;

const STOPWORDS = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both but by
can could did do does doing down during each few for from further had has have having he her here hers herself him
himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other
our ours ourselves out over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which while who whom why will
with would you your yours yourself yourselves i'm it's that's there's we're they're you're don't can't won't`.split(
    /\s+/,
  ),
);

/** Words that carry no content in speech. */
const FILLERS = [
  /\b(um+|uh+|er+|ah+|hmm+|mm+)\b,?/gi,
  /\b(you know|i mean|kind of|sort of|basically|actually|literally|honestly)\b,?/gi,
  /^(so|well|okay|ok|right|yeah|and|but)\b,?\s*/i,
];

/**
 * Extractive summaries without a model: sentences are ranked by how much they share with the rest
 * of the transcript (degree centrality over TF-IDF vectors), so that the TL;DR keeps what the
 * recording keeps coming back to.
 */
export class LocalSummarizer implements Summarizer {
  async summarize(
    transcription: Transcription,
    request: SummaryRequest,
  ): Promise<Pick<TranscriptResult, 'tldr' | 'short_hand_notes'>> {
    const sentences = summarySentences(transcription);
    const ranking = rankSentences(sentences);
    return {
      ...(request.tldr ? { tldr: tldrOf(sentences, ranking, countWords(transcription.transcript)) } : {}),
      ...(request.short_hand_notes ? { short_hand_notes: notesOf(sentences, ranking) } : {}),
    };
  }
}

/** Sentences by punctuation; without punctuation, by pauses between words, and by length. */
export function summarySentences(transcription: Pick<Transcription, 'transcript' | 'words'>): string[] {
  if (/[.!?]/.test(transcription.transcript)) return splitSentences(transcription.transcript);
  const sentences: Word[][] = [];
  for (const word of transcription.words) {
    const current = sentences.at(-1);
    const previous = current?.at(-1);
    if (
      !current ||
      !previous ||
      word.startTime - previous.endTime >= SENTENCE_PAUSE_MS ||
      current.length >= MAX_SENTENCE_WORDS
    ) {
      sentences.push([word]);
    } else {
      current.push(word);
    }
  }
  return sentences.map(joinWords);
}

function terms(sentence: string): string[] {
  return (sentence.toLowerCase().match(/[a-z0-9']+/g) ?? [])
    .filter((term) => !STOPWORDS.has(term) && term.length > 1)
    .map((term) => term.replace(/(?<=\w{3})s$/, ''));
}

/** Sentence indexes, most central first (ties: earlier first). */
export function rankSentences(sentences: string[]): number[] {
  const bags = sentences.map(terms);
  const documentFrequency = new Map<string, number>();
  for (const bag of bags)
    for (const term of new Set(bag)) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1);
  const vectors = bags.map((bag) => {
    const vector = new Map<string, number>();
    for (const term of bag) vector.set(term, (vector.get(term) ?? 0) + 1);
    for (const [term, count] of vector) {
      vector.set(term, count * Math.log(1 + sentences.length / (documentFrequency.get(term) ?? 1)));
    }
    return vector;
  });
  const norms = vectors.map((vector) =>
    Math.sqrt([...vector.values()].reduce((sum, value) => sum + value * value, 0)),
  );
  const scores = vectors.map((vector, i) => {
    let score = 0;
    vectors.forEach((other, j) => {
      if (i === j || !norms[i] || !norms[j]) return;
      let dot = 0;
      for (const [term, value] of vector) dot += value * (other.get(term) ?? 0);
      score += dot / ((norms[i] ?? 1) * (norms[j] ?? 1));
    });
    return score;
  });
  return sentences.map((_, index) => index).sort((a, b) => (scores[b] ?? 0) - (scores[a] ?? 0) || a - b);
}

/**
 * The most central sentences within a fifth of the words (at least one), in spoken order. Selection
 * stops at the first sentence that does not fit, so that short, peripheral ones never fill the gap.
 */
function tldrOf(sentences: string[], ranking: number[], totalWords: number): string {
  const budget = Math.max(1, Math.floor(totalWords * TLDR_SHARE));
  const chosen: number[] = [];
  let used = 0;
  for (const index of ranking) {
    const words = countWords(sentences[index] ?? '');
    if (chosen.length > 0 && used + words > budget) break;
    chosen.push(index);
    used += words;
  }
  return chosen
    .sort((a, b) => a - b)
    .map((index) => sentences[index])
    .join(' ');
}

/** Bullet lines from the most central sentences: fillers out, numbers as digits, one clause a line. */
function notesOf(sentences: string[], ranking: number[]): string {
  const count = Math.max(1, Math.ceil(sentences.length * NOTES_SHARE));
  const lines = ranking
    .slice(0, count)
    .sort((a, b) => a - b)
    .flatMap((index) => (sentences[index] ?? '').split(/;\s*|,\s*(?:and|but|so)\s+|\s+but\s+/i))
    .map(shorthand)
    .filter((line) => line.length > 0);
  return lines.map((line) => `- ${line}`).join('\n');
}

function shorthand(clause: string): string {
  let text = clause;
  for (const filler of FILLERS) text = text.replace(filler, ' ');
  const document = nlp(text);
  document.numbers().toNumber();
  return document
    .text()
    .replace(/\b(the|a|an)\s+/gi, '')
    .replace(/\s+([,.!?])/g, '$1')
    .replace(/[.!?,;:]+$/, '')
    .replace(/\s+/g, ' ')
    .trim();
}
