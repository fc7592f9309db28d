import { join } from 'node:path';
import { z } from 'zod';
import { MAX_AUDIO_DURATION_MS } from '#commons/contract';
import { JobFailure } from '#core/errors';
import { runProcess } from './process.ts';
import { wavDurationMs } from './wav.ts';

/** The sample rate every recognizer input is decoded to. */
const RECOGNIZER_SAMPLE_RATE = 16_000;

/**
 * Container demuxers ffmpeg may use: audio and video files only. Playlists and other indirections
 * (HLS, DASH, concat lists, SDP) are refused, so that an upload can never make ffmpeg open another
 * file or address; only the `file` protocol is allowed, for the upload itself.
 */
const DEMUXERS = [
  'wav',
  'w64',
  'mp3',
  'mov,mp4,m4a,3gp,3g2,mj2',
  'ogg',
  'matroska,webm',
  'flac',
  'aac',
  'aiff',
  'caf',
  'amr',
  'ac3',
  'eac3',
  'avi',
  'asf',
  'mpegts',
  'mpeg',
  'flv',
  'au',
  'wv',
  'ape',
  'tta',
  'dts',
  'truehd',
  'mpc',
  'mpc8',
  'voc',
  'gsm',
  'dsf',
  'rm',
  'xwma',
];
const INPUT_GUARD = ['-protocol_whitelist', 'file', '-format_whitelist', DEMUXERS.join(',')];

/** Reading a container's header: any honest file takes well under a second. */
const PROBE_TIME_LIMIT_MS = 30_000;
/** Decoding: ffmpeg decodes far faster than real time; the limit allows a tenth of the audio's length. */
const DECODE_TIME_LIMIT_MS = 60_000 + MAX_AUDIO_DURATION_MS / 10;

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

const UNREADABLE = 'The file is not a readable audio or video file.';

/** Reads the container with ffprobe; throws JobFailure for files that hold no usable audio. */
export async function probeMedia(file: string): Promise<MediaInfo> {
  const { code, stdout, timedOut } = await runProcess(
    'ffprobe',
    ['-v', 'error', ...INPUT_GUARD, '-print_format', 'json', '-show_format', '-show_streams', file],
    PROBE_TIME_LIMIT_MS,
  );
  if (timedOut) throw new JobFailure('unsupported_media', `${UNREADABLE} Reading it took too long.`);
  const parsed = code === 0 ? probeOutput.safeParse(parseJson(stdout)) : undefined;
  if (!parsed?.success) throw new JobFailure('unsupported_media', UNREADABLE);
  const { streams, format } = parsed.data;
  const audio = streams.find((stream) => stream.codec_type === 'audio');
  if (!audio) throw new JobFailure('no_audio', 'The file has no audio stream.');

  const seconds = Number(audio.duration ?? format?.duration);
  const durationMs = Number.isFinite(seconds) && seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  if (durationMs !== undefined && durationMs > MAX_AUDIO_DURATION_MS) throw tooLong(durationMs);
  return { durationMs, channels: Math.max(1, audio.channels ?? 1) };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text || '{}');
  } catch {
    return undefined;
  }
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

function tooLong(durationMs: number): JobFailure {
  return new JobFailure(
    'audio_too_long',
    `The audio lasts ${formatDuration(durationMs)}; at most ${formatDuration(MAX_AUDIO_DURATION_MS)} is accepted.`,
  );
}

function formatDuration(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  return minutes >= 120 ? `${(minutes / 60).toFixed(1)} hours` : `${minutes} minutes`;
}

/**
 * Decodes the first audio stream to 16 kHz mono 16-bit WAV files: one mixed-down file, or with
 * `channels` one file per listed input channel (0-based). Answers the paths in the same order. The
 * length limit holds for what decodes, not what the header claims: decoding stops just past it.
 */
export async function decodeToWav(file: string, workDir: string, channels?: number[]): Promise<string[]> {
  const outputs: string[] = [];
  const args = ['-nostdin', '-v', 'error', ...INPUT_GUARD, '-i', file];
  const limit = ['-t', String(MAX_AUDIO_DURATION_MS / 1000 + 1)];
  if (channels) {
    const filters = channels.map((channel, index) => `[0:a:0]pan=mono|c0=c${channel}[ch${index}]`);
    args.push('-filter_complex', filters.join(';'));
    channels.forEach((channel, index) => {
      const output = join(workDir, `channel-${channel}.wav`);
      args.push('-map', `[ch${index}]`, ...limit, ...wavOutputArgs(), output);
      outputs.push(output);
    });
  } else {
    const output = join(workDir, 'mono.wav');
    args.push('-map', '0:a:0', '-ac', '1', ...limit, ...wavOutputArgs(), output);
    outputs.push(output);
  }
  const { code, timedOut } = await runProcess('ffmpeg', ['-y', ...args], DECODE_TIME_LIMIT_MS);
  if (timedOut) throw new JobFailure('unsupported_media', 'The audio stream took too long to decode.');
  if (code !== 0) throw new JobFailure('unsupported_media', 'The audio stream could not be decoded.');
  const durations = await Promise.all(outputs.map(wavDurationMs));
  const longest = Math.max(...durations);
  if (longest > MAX_AUDIO_DURATION_MS) throw tooLong(longest);
  if (longest === 0) throw new JobFailure('no_audio', 'The audio stream holds no samples.');
  return outputs;
}

/**
 * The listed channels of the first audio stream (0-based, in order) as one lossless FLAC file at the
 * source's sample rate, for a transcriber that takes at most that many channels.
 */
export async function extractChannels(file: string, workDir: string, channels: number[]): Promise<string> {
  const output = join(workDir, `channels-${channels.join('-')}.flac`);
  const layout = channels.map((channel, index) => `c${index}=c${channel}`).join('|');
  const { code, timedOut } = await runProcess(
    'ffmpeg',
    [
      '-y',
      '-nostdin',
      '-v',
      'error',
      ...INPUT_GUARD,
      '-i',
      file,
      '-filter_complex',
      `[0:a:0]pan=${channels.length}c|${layout}[out]`,
      '-map',
      '[out]',
      '-t',
      String(MAX_AUDIO_DURATION_MS / 1000 + 1),
      '-c:a',
      'flac',
      output,
    ],
    DECODE_TIME_LIMIT_MS,
  );
  if (timedOut) throw new JobFailure('unsupported_media', 'The audio stream took too long to decode.');
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
