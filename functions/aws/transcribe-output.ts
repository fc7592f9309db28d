import { z } from 'zod';
import type { JobOptions } from '#core/options';
import { type AssembledTranscript, assembleTranscript, type TimedWord } from '#core/result';

/** One entry of `results.items` (or of a channel's items) in an Amazon Transcribe output document. */
const item = z.object({
  type: z.enum(['pronunciation', 'punctuation']),
  start_time: z.string().optional(),
  end_time: z.string().optional(),
  alternatives: z.array(z.object({ content: z.string(), confidence: z.string().optional() })).min(1),
  speaker_label: z.string().optional(),
  channel_label: z.string().optional(),
});

/** The parts of a Transcribe batch output document that the mapping reads. */
const transcribeOutput = z.object({
  results: z.object({
    items: z.array(item).default([]),
    channel_labels: z
      .object({ channels: z.array(z.object({ channel_label: z.string(), items: z.array(item) })) })
      .optional(),
    speaker_labels: z
      .object({
        segments: z
          .array(
            z.object({
              items: z.array(z.object({ start_time: z.string(), speaker_label: z.string() })).default([]),
            }),
          )
          .default([]),
      })
      .optional(),
  }),
});

type Item = z.infer<typeof item>;

const milliseconds = (seconds: string | undefined) => Math.round(Number(seconds ?? 0) * 1000);
/** Transcribe labels channels ch_0, ch_1; ours are 1 and 2. */
const channelOf = (label: string | undefined) => (label ? Number(label.replace(/^ch_/, '')) + 1 : undefined);

/**
 * Maps a Transcribe output document to our result: integer milliseconds, spoken order, punctuation
 * attached to the word before it (or dropped, with the text lower-cased, when punctuate is false),
 * speakers "S1", "S2", … by first appearance (never `spk_0`), channels 1 and 2 (never `ch_0`).
 */
export function mapTranscribeOutput(
  document: unknown,
  options: Pick<JobOptions, 'punctuate' | 'dual_channel' | 'speaker_diarization'>,
): AssembledTranscript {
  const { results } = transcribeOutput.parse(document);
  const items: Item[] =
    results.items.length > 0
      ? results.items
      : (results.channel_labels?.channels ?? []).flatMap((channel) =>
          channel.items.map((entry) => ({
            ...entry,
            channel_label: entry.channel_label ?? channel.channel_label,
          })),
        );
  // Older documents label speakers only in speaker_labels.segments, by start time.
  const speakerAt = new Map(
    (results.speaker_labels?.segments ?? []).flatMap((segment) =>
      segment.items.map((entry) => [entry.start_time, entry.speaker_label] as const),
    ),
  );

  const words: TimedWord[] = [];
  for (const entry of items) {
    const [best] = entry.alternatives;
    if (!best) continue;
    if (entry.type === 'punctuation') {
      const previous = words.at(-1);
      if (options.punctuate && previous) previous.text += best.content;
      continue;
    }
    const speakerLabel =
      entry.speaker_label ?? (entry.start_time ? speakerAt.get(entry.start_time) : undefined);
    const channel = channelOf(entry.channel_label);
    words.push({
      text: options.punctuate ? best.content : best.content.toLowerCase(),
      startMs: milliseconds(entry.start_time),
      endMs: milliseconds(entry.end_time),
      confidence: Number(best.confidence ?? 0),
      // A channel is the speaker of a dual-channel job: Transcribe cannot label speakers within one.
      ...(options.dual_channel && channel !== undefined ? { channel } : {}),
      ...(!options.dual_channel && options.speaker_diarization && speakerLabel ? { speakerLabel } : {}),
    });
  }
  return assembleTranscript(words);
}
