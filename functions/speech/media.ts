import { join } from 'node:path';
import { z } from 'zod';
import { MAX_AUDIO_DURATION_MS } from '#commons/contract';
import { JobFailure } from '#core/errors';
import { runProcess } from './process.ts';

/** The sample rate every recognizer input is decoded to. */
const RECOGNIZER_SAMPLE_RATE = 16_000;

export interface MediaInfo {
  /** Duration of the first audio stream as the container reports it; decoding gives the true length. */
  durationMs: number | undefined;
  channels: number;
}

const probeOutput = z.object({
  streams: z
    .array(
      z.object({
        codec_type: z.string().optional(),
        channels: z.number().optional(),
        duration: z.string().optional(),
      }),
    )
    .default([]),
  format: z.object({ duration: z.string().optional() }).optional(),
});

/** Reads the container with ffprobe; throws JobFailure for files that hold no usable audio. */
export async function probeMedia(file: string): Promise<MediaInfo> {
  const { code, stdout } = await runProcess('ffprobe', [
    '-v',
    'error',
    '-print_format',
    'json',
    '-show_format',
    '-show_streams',
    file,
  ]);
  const parsed = code === 0 ? probeOutput.safeParse(JSON.parse(stdout || '{}')) : undefined;
  if (!parsed?.success) {
    throw new JobFailure('unsupported_media', 'The file is not a readable audio or video file.');
  }
  const { streams, format } = parsed.data;
  const audio = streams.find((stream) => stream.codec_type === 'audio');
  if (!audio) throw new JobFailure('no_audio', 'The file has no audio stream.');

  const seconds = Number(audio.duration ?? format?.duration);
  const durationMs = Number.isFinite(seconds) ? Math.round(seconds * 1000) : undefined;
  if (durationMs !== undefined && durationMs > MAX_AUDIO_DURATION_MS) {
    throw new JobFailure(
      'audio_too_long',
      `The audio lasts ${formatDuration(durationMs)}; at most ${formatDuration(MAX_AUDIO_DURATION_MS)} is accepted.`,
    );
  }
  return {
    durationMs,
    channels: audio.channels ?? 1,
  };
}

/** The channels to transcribe separately for a dual-channel job: the first two, or a JobFailure. */
export function dualChannelSelection(media: MediaInfo): { channels: number[]; notes: string[] } {
  if (media.channels < 2) {
    throw new JobFailure(
      'not_dual_channel',
      `dual_channel is true but the audio has ${media.channels} channel; send a two-channel file or set dual_channel to false.`,
    );
  }
  const notes =
    media.channels > 2
      ? [`The audio has ${media.channels} channels; only the first two were transcribed.`]
      : [];
  return { channels: [0, 1], notes };
}

function formatDuration(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  return minutes >= 120 ? `${(minutes / 60).toFixed(1)} hours` : `${minutes} minutes`;
}

/**
 * Decodes the first audio stream to 16 kHz mono 16-bit WAV files: one mixed-down file, or with
 * `channels` one file per listed input channel (0-based). Answers the paths in the same order.
 */
export async function decodeToWav(file: string, workDir: string, channels?: number[]): Promise<string[]> {
  const outputs: string[] = [];
  const args = ['-nostdin', '-v', 'error', '-i', file];
  if (channels) {
    const filters = channels.map((channel, index) => `[0:a:0]pan=mono|c0=c${channel}[ch${index}]`);
    args.push('-filter_complex', filters.join(';'));
    channels.forEach((channel, index) => {
      const output = join(workDir, `channel-${channel}.wav`);
      args.push('-map', `[ch${index}]`, ...wavOutputArgs(), output);
      outputs.push(output);
    });
  } else {
    const output = join(workDir, 'mono.wav');
    args.push('-map', '0:a:0', '-ac', '1', ...wavOutputArgs(), output);
    outputs.push(output);
  }
  const { code } = await runProcess('ffmpeg', ['-y', ...args]);
  if (code !== 0) throw new JobFailure('unsupported_media', 'The audio stream could not be decoded.');
  return outputs;
}

/**
 * The listed channels of the first audio stream (0-based, in order) as one lossless FLAC file at the
 * source's sample rate, for a transcriber that takes at most that many channels.
 */
export async function extractChannels(file: string, workDir: string, channels: number[]): Promise<string> {
  const output = join(workDir, `channels-${channels.join('-')}.flac`);
  const layout = channels.map((channel, index) => `c${index}=c${channel}`).join('|');
  const { code } = await runProcess('ffmpeg', [
    '-y',
    '-nostdin',
    '-v',
    'error',
    '-i',
    file,
    '-filter_complex',
    `[0:a:0]pan=${channels.length}c|${layout}[out]`,
    '-map',
    '[out]',
    '-c:a',
    'flac',
    output,
  ]);
  if (code !== 0) throw new JobFailure('unsupported_media', 'The audio stream could not be decoded.');
  return output;
}

/**
 * 16 kHz 16-bit PCM WAV with the plain 44-byte header: PocketSphinx skips 44 bytes and would read any
 * further header chunk (ffmpeg's metadata, without -bitexact) as audio.
 */
function wavOutputArgs(): string[] {
  return [
    '-ar',
    String(RECOGNIZER_SAMPLE_RATE),
    '-c:a',
    'pcm_s16le',
    '-bitexact',
    '-map_metadata',
    '-1',
    '-f',
    'wav',
  ];
}
