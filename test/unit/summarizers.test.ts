import { readFileSync } from 'node:fs';
import { BedrockRuntimeClient, ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { BedrockSummarizer, CHUNK_CHARS, SYSTEM_PROMPT } from '#aws/bedrock-summarizer';
import type { Transcription } from '#core/ports';
import { countWords } from '#core/text';
import { LocalSummarizer, rankSentences, summarySentences } from '#speech/summarizer';

const meeting = [
  'Okay so we looked at the budget for the new warehouse this morning.',
  'The warehouse budget is twenty five thousand dollars for the first quarter.',
  'Um, lunch was good today.',
  'Maria will send the warehouse budget to finance on Friday.',
  'Finance needs the budget numbers before the quarter starts, you know.',
  'The parking lot is being repainted next week.',
  'We agreed the warehouse opens in three months if finance approves the budget.',
  'My cat was sick yesterday.',
  'The team will review the warehouse plan again next Tuesday.',
  'Also the coffee machine is broken again.',
].join(' ');

function transcription(transcript: string): Transcription {
  let time = 0;
  const words = transcript.split(' ').map((word) => {
    time += 300;
    return { word, startTime: time, endTime: time + 250, confidence: 0.9 };
  });
  return { transcript, words, audio_duration_ms: time + 500, engine: 'sphinx' };
}

describe('LocalSummarizer', () => {
  const summarizer = new LocalSummarizer();

  it('picks central sentences within a fifth of the transcript, in spoken order', async () => {
    const { tldr = '' } = await summarizer.summarize(transcription(meeting), {
      tldr: true,
      short_hand_notes: false,
    });
    expect(countWords(tldr)).toBeLessThanOrEqual(Math.ceil(countWords(meeting) * 0.2) + 15);
    expect(countWords(tldr)).toBeLessThan(countWords(meeting));
    expect(tldr).toMatch(/warehouse/i);
    expect(tldr).not.toMatch(/cat|coffee|lunch/i);
    for (const sentence of tldr.split(/(?<=\.)\s+/)) expect(meeting).toContain(sentence);
  });

  it('writes terse bullet lines: fillers out, numbers as digits', async () => {
    const { short_hand_notes = '' } = await summarizer.summarize(transcription(meeting), {
      tldr: false,
      short_hand_notes: true,
    });
    const lines = short_hand_notes.split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line).toMatch(/^- \S/);
    expect(short_hand_notes).toMatch(/\b3 months\b/);
    expect(short_hand_notes).not.toMatch(/\b(three|twenty|thousand)\b/i);
    expect(short_hand_notes).not.toMatch(/\b(um|you know|the)\b/i);
    expect(short_hand_notes).not.toMatch(/cat|coffee/i);
  });

  it('gives only what was asked for, and nothing invented for an empty transcript', async () => {
    expect(
      await summarizer.summarize(transcription(meeting), { tldr: false, short_hand_notes: false }),
    ).toEqual({});
    expect(
      await summarizer.summarize(
        { transcript: '', words: [], audio_duration_ms: 500, engine: 'sphinx' },
        {
          tldr: true,
          short_hand_notes: true,
        },
      ),
    ).toEqual({ tldr: '', short_hand_notes: '' });
  });

  it('never makes a TL;DR longer than a one-sentence transcript', async () => {
    const { tldr } = await summarizer.summarize(transcription('Short and sweet.'), {
      tldr: true,
      short_hand_notes: false,
    });
    expect(tldr).toBe('Short and sweet.');
  });

  it('cuts unpunctuated text into sentences at pauses', () => {
    const words = [
      { word: 'first', startTime: 0, endTime: 300, confidence: 1 },
      { word: 'part', startTime: 310, endTime: 600, confidence: 1 },
      { word: 'second', startTime: 1500, endTime: 1800, confidence: 1 },
    ];
    expect(summarySentences({ transcript: 'first part second', words })).toEqual(['first part', 'second']);
  });

  it('ranks the sentence that shares most with the others first', () => {
    const ranking = rankSentences([
      'The budget is set.',
      'Birds sing.',
      'The budget needs approval.',
      'Budget review soon.',
    ]);
    expect(ranking.at(-1)).toBe(1);
  });
});

describe('BedrockSummarizer', () => {
  const bedrock = mockClient(BedrockRuntimeClient);
  const reply = (text: string) => ({
    output: { message: { role: 'assistant' as const, content: [{ text }] } },
  });

  beforeEach(() => {
    bedrock.reset();
    const recorded = JSON.parse(
      readFileSync(new URL('../fixtures/transcribe/converse-response.json', import.meta.url), 'utf8'),
    );
    bedrock.on(ConverseCommand).resolves(recorded);
  });

  it('sends a short transcript whole, with the no-invention system prompt, once per summary asked for', async () => {
    const summarizer = new BedrockSummarizer(new BedrockRuntimeClient({ region: 'us-east-1' }), 'model-x');
    const result = await summarizer.summarize(transcription(meeting), {
      tldr: true,
      short_hand_notes: false,
    });
    expect(result).toEqual({ tldr: 'A caller waited an hour on hold and got an apology.' });
    const calls = bedrock.commandCalls(ConverseCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]?.args[0].input;
    expect(input?.system).toEqual([{ text: SYSTEM_PROMPT }]);
    expect(input?.messages?.[0]?.content?.[0]?.text).toContain(meeting);
  });

  it('condenses a long transcript chunk by chunk before summarizing', async () => {
    bedrock
      .on(ConverseCommand)
      .callsFake((input: { messages: { content: { text: string }[] }[] }) =>
        reply(
          input.messages[0]?.content[0]?.text.startsWith('This is one part')
            ? '- part fact'
            : 'Final summary.',
        ),
      );
    const long = Array.from(
      { length: 600 },
      (_, i) => `Sentence number ${i} says something about the plan.`,
    ).join(' ');
    expect(long.length).toBeGreaterThan(2 * CHUNK_CHARS);
    const summarizer = new BedrockSummarizer(new BedrockRuntimeClient({ region: 'us-east-1' }), 'model-x');
    const result = await summarizer.summarize(transcription(long), { tldr: true, short_hand_notes: true });
    expect(result).toEqual({ tldr: 'Final summary.', short_hand_notes: 'Final summary.' });
    const texts = bedrock
      .commandCalls(ConverseCommand)
      .map((call) => call.args[0].input.messages?.[0]?.content?.[0]?.text ?? '');
    const chunks = texts.filter((text) => text.startsWith('This is one part'));
    expect(chunks.length).toBe(Math.ceil(long.length / CHUNK_CHARS));
    for (const text of texts) expect(text.length).toBeLessThan(CHUNK_CHARS + 1000);
    expect(texts.filter((text) => text.includes('- part fact'))).toHaveLength(2);
  });

  it('asks nothing about an empty transcript', async () => {
    const summarizer = new BedrockSummarizer(new BedrockRuntimeClient({ region: 'us-east-1' }), 'model-x');
    const empty = { transcript: '', words: [], audio_duration_ms: 0, engine: 'transcribe' };
    expect(await summarizer.summarize(empty, { tldr: true, short_hand_notes: true })).toEqual({
      tldr: '',
      short_hand_notes: '',
    });
    expect(bedrock.commandCalls(ConverseCommand)).toHaveLength(0);
  });
});
