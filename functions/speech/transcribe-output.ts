import { z } from 'zod';
import type { JobOptions } from '#core/options';
import { joinWords, SpeakerNumbering, speakerTurns, type TranscriptResult, type Word } from '#core/result';

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

interface TimedWord {
  text: string;
  startMs: number;
  endMs: number;
  confidence: number;
  speakerLabel?: string;
  channelLabel?: string;
}

const milliseconds = (seconds: string | undefined) => Math.round(Number(seconds ?? 0) * 1000);

/**
 * Maps a Transcribe output document to our words: integer milliseconds, spoken order, punctuation
 * attached to the word before it (or dropped, with the text lower-cased, when punctuate is false),
 * speakers "S1", "S2", … by first appearance (never `spk_0`), channels 1 and 2 (never `ch_0`).
 */
export function mapTranscribeOutput(
  document: unknown,
  options: Pick<JobOptions, 'punctuate' | 'dual_channel' | 'speaker_diarization'>,
): Pick<TranscriptResult, 'transcript' | 'words' | 'utterances'> {
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

  const timed: TimedWord[] = [];
  for (const entry of items) {
    const [best] = entry.alternatives;
    if (!best) continue;
    if (entry.type === 'punctuation') {
      const previous = timed.at(-1);
      if (options.punctuate && previous) previous.text += best.content;
      continue;
    }
    const speakerLabel =
      entry.speaker_label ?? (entry.start_time ? speakerAt.get(entry.start_time) : undefined);
    timed.push({
      text: options.punctuate ? best.content : best.content.toLowerCase(),
      startMs: milliseconds(entry.start_time),
      endMs: Math.max(milliseconds(entry.start_time), milliseconds(entry.end_time)),
      confidence: Math.min(1, Math.max(0, Number(best.confidence ?? 0))),
      ...(speakerLabel ? { speakerLabel } : {}),
      ...(entry.channel_label ? { channelLabel: entry.channel_label } : {}),
    });
  }

  const channelOf = (label: string | undefined) =>
    label ? Number(label.replace(/^ch_/, '')) + 1 : undefined;
  timed.sort(
    (a, b) => a.startMs - b.startMs || (channelOf(a.channelLabel) ?? 0) - (channelOf(b.channelLabel) ?? 0),
  );

  const speakers = new SpeakerNumbering<string>();
  const words: Word[] = timed.map((entry) => {
    const word: Word = {
      startTime: entry.startMs,
      endTime: entry.endMs,
      word: entry.text,
      confidence: entry.confidence,
    };
    const channel = channelOf(entry.channelLabel);
    if (options.dual_channel && channel !== undefined) {
      word.speaker = speakers.nameOf(`channel ${channel}`);
      word.channel = channel;
    } else if (options.speaker_diarization && entry.speakerLabel) {
      word.speaker = speakers.nameOf(entry.speakerLabel);
    }
    return word;
  });

  const turns = options.dual_channel || options.speaker_diarization;
  return { transcript: joinWords(words), words, ...(turns ? { utterances: speakerTurns(words) } : {}) };
}
