import { describe, expect, it } from 'vitest';
import type { TimedWord } from '#core/result';
import { formatWords, plainWords } from '#speech/punctuation';
import { type WhisperSegment, type WhisperToken, withoutLoops, wordsFromSegments } from '#speech/whisper';

/**
 * Segments as smart-whisper 0.8.1's `detail` format gives whisper.cpp's output (its
 * src/binding/transcribe.cc): every token of the segment, special ones included, with its text, its
 * probability and, with `token_timestamps`, its times in ms from the start of the audio.
 */
const token = (text: string, from: number, to: number, p = 0.9): WhisperToken => ({ text, p, from, to });
const segment = (tokens: WhisperToken[]): WhisperSegment => ({
  from: tokens[0]?.from ?? 0,
  to: tokens.at(-1)?.to ?? 0,
  text: tokens.map((t) => t.text).join(''),
  tokens,
});

const texts = (words: TimedWord[]) => words.map((word) => word.text);

describe('wordsFromSegments', () => {
  it('joins tokens into words at leading spaces, drops special tokens, and keeps times and confidences', () => {
    const words = wordsFromSegments(
      [
        segment([
          token('[_BEG_]', 0, 0, 0.5),
          token(' And', 320, 480, 0.8),
          token(' so', 480, 700, 0.6),
          token(' my', 700, 900),
          token(' fel', 900, 1100, 0.7),
          token('low', 1100, 1300, 0.9),
          token(' Americans', 1300, 1900),
          token(',', 1900, 1950, 1),
          token('[_TT_200]', 2000, 2000, 0.3),
          token('<|endoftext|>', 2000, 2000, 0.3),
        ]),
      ],
      11_000,
    );
    expect(words).toEqual([
      { text: 'And', startMs: 320, endMs: 480, confidence: 0.8 },
      { text: 'so', startMs: 480, endMs: 700, confidence: 0.6 },
      { text: 'my', startMs: 700, endMs: 900, confidence: 0.9 },
      { text: 'fellow', startMs: 900, endMs: 1300, confidence: 0.8 },
      { text: 'Americans,', startMs: 1300, endMs: 1950, confidence: 0.95 },
    ]);
  });

  it('maps non-speech annotations to nothing: [BLANK_AUDIO], (music), *laughs*, music signs and lone marks', () => {
    const words = wordsFromSegments(
      [
        segment([
          token(' [', 0, 100),
          token('BL', 100, 200),
          token('ANK', 200, 300),
          token('_AUDIO]', 300, 400),
        ]),
        segment([
          token(' (', 500, 600),
          token('up', 600, 700),
          token('beat', 700, 800),
          token(' music', 800, 900),
          token(')', 900, 950),
        ]),
        segment([
          token(' *', 1000, 1100),
          token('la', 1100, 1200),
          token('ughs', 1200, 1300),
          token('*', 1300, 1350),
        ]),
        segment([
          token(' ♪', 1400, 1500),
          token(' -', 1500, 1600),
          token(' ...', 1600, 1700),
          token(' Hello', 1700, 2000),
          token('.', 2000, 2050),
        ]),
      ],
      5_000,
    );
    expect(texts(words)).toEqual(['Hello.']);
  });

  it('drops words that start past the end of the piece and ends the others at it', () => {
    const words = wordsFromSegments(
      [segment([token(' one', 100, 400), token(' two', 2800, 3400), token(' three', 3100, 3300)])],
      3000,
    );
    expect(words.map(({ text, startMs, endMs }) => [text, startMs, endMs])).toEqual([
      ['one', 100, 400],
      ['two', 2800, 3000],
    ]);
  });

  it('keeps words in spoken order when token times step back at a segment boundary, and never negative', () => {
    const words = wordsFromSegments(
      [
        segment([token(' first', -40, 300), token(' second', 900, 1200)]),
        segment([token(' third', 850, 1100), token(' fourth', 1300, 1500)]),
      ],
      5_000,
    );
    expect(words.map(({ startMs }) => startMs)).toEqual([0, 900, 900, 1300]);
    for (const word of words) expect(word.endMs).toBeGreaterThanOrEqual(word.startMs);
  });

  it('takes a token without times at its segment start, and a probability outside 0..1 as a bound', () => {
    const [word] = wordsFromSegments(
      [{ from: 1200, to: 1800, text: ' Hi', tokens: [{ text: ' Hi', p: 1.7 }] }],
      5_000,
    );
    expect(word).toEqual({ text: 'Hi', startMs: 1200, endMs: 1200, confidence: 1 });
  });

  it('drops broken UTF-8 halves of a character split over two tokens', () => {
    const [word] = wordsFromSegments(
      [segment([token(' caf', 0, 100), token('\uFFFD', 100, 150), token('\uFFFD', 150, 200)])],
      1000,
    );
    expect(word?.text).toBe('caf');
  });

  it('removes a repetition loop that runs over several segments, keeping one copy', () => {
    const sentence = (start: number) =>
      segment([
        token(' Thank', start, start + 200),
        token(' you', start + 200, start + 400),
        token('.', start + 400, start + 450),
      ]);
    const words = wordsFromSegments([0, 1000, 2000, 3000, 4000].map(sentence), 10_000);
    expect(texts(words)).toEqual(['Thank', 'you.']);
  });

  it('drops a segment whose text compresses like a loop (ratio above 2.4) though no phrase repeats exactly', () => {
    // The six orders of three words, over and over: a period of 18 words, longer than any exact loop.
    const orders = ['a b c', 'a c b', 'b a c', 'b c a', 'c a b', 'c b a'].join(' ').split(' ');
    const names: Record<string, string> = { a: 'alpha', b: 'beta', c: 'gamma' };
    const tokens = Array.from({ length: 72 }, (_, index) =>
      token(` ${names[orders[index % 18] ?? 'a']}`, index * 80, index * 80 + 70),
    );
    const prose =
      'The committee met on Tuesday to review the budget for next year, and after a long discussion about ' +
      'travel costs and the new office lease, it agreed to postpone the decision until the auditors have ' +
      'finished their report in the spring.';
    const natural = segment(
      prose.split(' ').map((word, index) => token(` ${word}`, 6000 + index * 90, 6080 + index * 90)),
    );
    expect(texts(wordsFromSegments([segment(tokens), natural], 20_000))).toEqual(prose.split(' '));
  });

  it('gives no words for no segments, or segments of special tokens only', () => {
    expect(wordsFromSegments([], 1000)).toEqual([]);
    expect(wordsFromSegments([segment([token('[_BEG_]', 0, 0), token('[_TT_50]', 500, 500)])], 1000)).toEqual(
      [],
    );
  });
});

describe('withoutLoops', () => {
  const said = (text: string) =>
    text
      .split(' ')
      .map((word, index) => ({ text: word, startMs: index * 100, endMs: index * 100 + 90, confidence: 0.9 }));

  it('keeps what people repeat: a word two or three times, a phrase twice', () => {
    for (const text of ['no no no stop', 'very very good', 'I think, I think so', 'yes yes yes']) {
      expect(texts(withoutLoops(said(text))).join(' ')).toBe(text);
    }
  });

  it('keeps one copy of a word said four times or more, or of a phrase of up to eight words said three times', () => {
    expect(texts(withoutLoops(said('the the the the the end'))).join(' ')).toBe('the end');
    expect(texts(withoutLoops(said('go on. Go on. go on. go on, and then'))).join(' ')).toBe(
      'go on. and then',
    );
    const phrase = 'we will need to look at the numbers';
    expect(texts(withoutLoops(said(`${phrase} ${phrase} ${phrase} today`))).join(' ')).toBe(
      `${phrase} today`,
    );
  });

  it('leaves a phrase of nine words repeated three times (longer than any loop it looks for)', () => {
    const phrase = 'one two three four five six seven eight nine';
    expect(withoutLoops(said(`${phrase} ${phrase} ${phrase}`))).toHaveLength(27);
  });

  it('gives nothing for nothing', () => {
    expect(withoutLoops([])).toEqual([]);
  });
});

describe('formatWords for a recognizer that punctuates', () => {
  const written = ['"Well,', "it's", '3.5', 'percent', '-', 'in', 'the', 'U.S.!"', '$20', '10%.'].map(
    (text, index) => ({
      text,
      startMs: index * 100,
      endMs: index * 100 + 90,
      confidence: 0.9,
    }),
  );

  it('keeps the model casing and punctuation with punctuate=true', () => {
    expect(formatWords(written, true, true)).toEqual(written);
  });

  it('gives lower case without marks at word edges, and drops marks alone, with punctuate=false', () => {
    expect(texts(formatWords(written, false, true))).toEqual([
      'well',
      "it's",
      '3.5',
      'percent',
      'in',
      'the',
      'u.s',
      '$20',
      '10%',
    ]);
    expect(plainWords([])).toEqual([]);
  });

  it('punctuates by pauses, as before, the words of a recognizer that does not', () => {
    const plain = [
      { text: 'hello', startMs: 0, endMs: 300, confidence: 0.9 },
      { text: 'there', startMs: 310, endMs: 600, confidence: 0.9 },
    ];
    expect(texts(formatWords(plain, true))).toEqual(['Hello', 'there.']);
  });
});
