import { RequestError } from './errors.ts';
import type { TranscriptResult, Word } from './result.ts';

export const EXPORT_FORMATS = ['txt', 'srt', 'vtt'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  txt: 'text/plain; charset=utf-8',
  srt: 'application/x-subrip; charset=utf-8',
  vtt: 'text/vtt; charset=utf-8',
};

/** Subtitle cues stay short enough to read: at most this long, this many words, and split at pauses. */
const MAX_CUE_MS = 6000;
const MAX_CUE_WORDS = 14;
const CUE_PAUSE_MS = 1000;

interface Cue {
  startTime: number;
  endTime: number;
  speaker?: string;
  text: string;
}

export function parseExportFormat(value: string | undefined): ExportFormat {
  const format = EXPORT_FORMATS.find((candidate) => candidate === value?.toLowerCase());
  if (!format) {
    throw new RequestError(
      'invalid_request',
      `format must be one of: ${EXPORT_FORMATS.join(', ')}.`,
      'format',
    );
  }
  return format;
}

/** A finished transcript as plain text (speaker turns when known), SRT or WebVTT subtitles. */
export function exportTranscript(result: TranscriptResult, format: ExportFormat): string {
  if (format === 'txt') {
    const turns = result.utterances?.filter((turn) => turn.speaker);
    const body = turns?.length
      ? turns.map((turn) => `${turn.speaker}: ${turn.text}`).join('\n')
      : result.transcript;
    return `${body}\n`;
  }
  const cues = cuesOf(result.words);
  if (format === 'srt') {
    return cues
      .map(
        (cue, index) =>
          `${index + 1}\n${timestamp(cue.startTime, ',')} --> ${timestamp(cue.endTime, ',')}\n${speakerPrefix(cue)}${cue.text}\n`,
      )
      .join('\n');
  }
  const body = cues
    .map(
      (cue) =>
        `${timestamp(cue.startTime, '.')} --> ${timestamp(cue.endTime, '.')}\n${cue.speaker ? `<v ${cue.speaker}>` : ''}${escapeVtt(cue.text)}\n`,
    )
    .join('\n');
  return `WEBVTT\n\n${body}`;
}

function cuesOf(words: Word[]): Cue[] {
  const cues: (Cue & { words: number })[] = [];
  for (const word of words) {
    const cue = cues.at(-1);
    const startsNew =
      !cue ||
      cue.speaker !== word.speaker ||
      word.startTime - cue.endTime > CUE_PAUSE_MS ||
      word.endTime - cue.startTime > MAX_CUE_MS ||
      cue.words >= MAX_CUE_WORDS ||
      /[.!?]$/.test(cue.text);
    if (startsNew) {
      cues.push({
        startTime: word.startTime,
        endTime: word.endTime,
        text: word.word,
        words: 1,
        ...(word.speaker ? { speaker: word.speaker } : {}),
      });
    } else {
      cue.endTime = Math.max(cue.endTime, word.endTime);
      cue.text += ` ${word.word}`;
      cue.words += 1;
    }
  }
  return cues.map(({ words: _count, ...cue }) => cue);
}

function speakerPrefix(cue: Cue): string {
  return cue.speaker ? `${cue.speaker}: ` : '';
}

function escapeVtt(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (WebVTT). */
export function timestamp(ms: number, separator: ',' | '.'): string {
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = Math.floor((ms % 60_000) / 1000);
  const pad = (value: number, size = 2) => String(value).padStart(size, '0');
  return `${pad(hours)}:${pad(minutes)}:${pad(seconds)}${separator}${pad(ms % 1000, 3)}`;
}
