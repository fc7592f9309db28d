import { type BedrockRuntimeClient, ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import type { Summarizer, SummaryRequest, Transcription } from '#core/ports';
import type { TranscriptResult } from '#core/result';
import { chunkText } from '#core/text';

/** Characters of transcript sent in one request; longer transcripts are condensed chunk by chunk first. */
export const CHUNK_CHARS = 12_000;

export const SYSTEM_PROMPT = [
  'You summarize transcripts of recorded speech.',
  'Use only information stated in the transcript. Do not invent, infer or add facts, names, numbers, dates or opinions.',
  'If the transcript is unclear or too short to summarize, say less rather than guess.',
  'Answer with the requested text only, without a preamble.',
].join(' ');

export const TLDR_INSTRUCTIONS =
  'Write a TL;DR of this transcript: one short paragraph of at most three sentences covering its main points.';

export const NOTES_INSTRUCTIONS = [
  'Write shorthand notes of this transcript: terse bullet lines, each starting with "- ",',
  'one idea per line, no filler words, numbers written as digits. No headings, no other text.',
].join(' ');

const CONDENSE_INSTRUCTIONS = [
  'This is one part of a longer transcript. List every fact, decision, number and name it states,',
  'as terse bullet lines starting with "- ". Add nothing that is not in this part.',
].join(' ');

/** Summaries by a Bedrock model through the Converse API. */
export class BedrockSummarizer implements Summarizer {
  constructor(
    private readonly client: BedrockRuntimeClient,
    private readonly modelId: string,
  ) {}

  async summarize(
    transcription: Transcription,
    request: SummaryRequest,
  ): Promise<Pick<TranscriptResult, 'tldr' | 'short_hand_notes'>> {
    const transcript = transcription.transcript.trim();
    // Nothing was said: there is nothing to summarize, and a model would only make something up.
    const source = transcript ? await this.condense(transcript) : '';
    return {
      ...(request.tldr ? { tldr: source ? await this.ask(TLDR_INSTRUCTIONS, source) : '' } : {}),
      ...(request.short_hand_notes
        ? { short_hand_notes: source ? await this.ask(NOTES_INSTRUCTIONS, source) : '' }
        : {}),
    };
  }

  /** Map-reduce: notes per chunk until the whole fits in one request. */
  private async condense(text: string): Promise<string> {
    let current = text;
    while (current.length > CHUNK_CHARS) {
      const notes: string[] = [];
      for (const chunk of chunkText(current, CHUNK_CHARS))
        notes.push(await this.ask(CONDENSE_INSTRUCTIONS, chunk));
      const next = notes.join('\n');
      // Notes that do not shrink the text would loop for ever; send what there is.
      if (next.length >= current.length) break;
      current = next;
    }
    return current;
  }

  private async ask(instructions: string, text: string): Promise<string> {
    const response = await this.client.send(
      new ConverseCommand({
        modelId: this.modelId,
        system: [{ text: SYSTEM_PROMPT }],
        messages: [
          { role: 'user', content: [{ text: `${instructions}\n\n<transcript>\n${text}\n</transcript>` }] },
        ],
        inferenceConfig: { maxTokens: 1024, temperature: 0 },
      }),
    );
    const content = response.output?.message?.content ?? [];
    return content
      .map((block) => block.text ?? '')
      .join('')
      .trim();
  }
}
