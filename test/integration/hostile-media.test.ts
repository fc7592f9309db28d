import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsServices } from '#aws/services';
import { ENV } from '#commons/contract';
import { encodeProcessMessage } from '#core/messages';
import { sqsEvent } from '#test/helpers/events';
import { useFreshResources } from '#test/helpers/fresh-resources';
import { findSample, samplePath } from '#test/helpers/samples';
import { submitForm } from '#test/helpers/submissions';
import { handler as worker } from '#worker/handler';

/**
 * Media made to break a decoder, through the real worker (ffprobe, ffmpeg, PocketSphinx): each ends
 * at once in `error` with its code or completes, on its first delivery, never retried or left waiting.
 */

let dir: string;
beforeAll(async () => {
  process.env[ENV.maxActiveJobsPerTenant] = '1000';
  await useFreshResources();
  dir = mkdtempSync(join(tmpdir(), 'hostile-media-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const speech = samplePath(findSample((entry) => entry.kind === 'utterance' && (entry.duration_s ?? 0) > 3));

/** A PCM WAV header for `dataBytes` bytes of samples, whatever the rate and channel count claimed. */
function wavHeader(sampleRate: number, channels: number, dataBytes: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE((36 + dataBytes) >>> 0, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate >>> 0, 24);
  header.writeUInt32LE((sampleRate * channels * 2) >>> 0, 28);
  header.writeUInt16LE(channels * 2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes >>> 0, 40);
  return header;
}

function ffmpeg(...args: string[]): void {
  execFileSync('ffmpeg', ['-v', 'error', '-y', ...args]);
}

/** Over four hours of silence in a small FLAC whose header says nothing of its length. */
function lengthlessBomb(): Buffer {
  const file = join(dir, 'bomb.flac');
  ffmpeg('-f', 'lavfi', '-i', 'anullsrc=r=8000:cl=mono', '-t', String(4 * 3600 + 60), '-c:a', 'flac', file);
  const data = readFileSync(file);
  // STREAMINFO's total sample count (36 bits from byte 21) to 0: "unknown".
  data[21] = (data[21] ?? 0) & 0xf0;
  data.fill(0, 22, 26);
  return data;
}

/** The speech sample copied onto sixteen channels. */
function manyChannels(): Buffer {
  const file = join(dir, 'many.wav');
  const labels = Array.from({ length: 16 }, (_, i) => `[s${i}]`).join('');
  ffmpeg(
    '-i',
    speech,
    '-filter_complex',
    `[0:a]asplit=16${labels};${labels}amerge=inputs=16`,
    '-c:a',
    'pcm_s16le',
    file,
  );
  return readFileSync(file);
}

const corpus: { name: string; file: () => Buffer; fields?: Record<string, string>; expect: RegExp }[] = [
  {
    name: 'a WAV whose samples are zero bytes',
    file: () => wavHeader(16_000, 1, 0),
    expect: /^error:no_audio$/,
  },
  {
    name: 'a header cut after RIFF/WAVE',
    file: () => wavHeader(16_000, 1, 0).subarray(0, 12),
    expect: /^error:unsupported_media$/,
  },
  {
    name: 'a sample rate of 0',
    file: () => Buffer.concat([wavHeader(0, 1, 2000), Buffer.alloc(2000)]),
    expect: /^error:unsupported_media$/,
  },
  {
    name: 'a sample rate of 4 GHz',
    file: () => Buffer.concat([wavHeader(4_000_000_000, 1, 2000), Buffer.alloc(2000)]),
    expect: /^error:unsupported_media$/,
  },
  {
    name: 'a sample rate of 1 Hz (its samples last 28 hours)',
    file: () => Buffer.concat([wavHeader(1, 1, 200_000), Buffer.alloc(200_000)]),
    expect: /^error:audio_too_long$/,
  },
  {
    name: 'a header that claims less data than follows',
    file: () => {
      const real = readFileSync(speech);
      return Buffer.concat([wavHeader(16_000, 1, 16_000), real.subarray(44)]);
    },
    expect: /^completed$/,
  },
  {
    name: 'a header that claims 4 GiB of data',
    file: () => Buffer.concat([wavHeader(16_000, 1, 0xffffffff), readFileSync(speech).subarray(44)]),
    expect: /^completed$/,
  },
  {
    name: 'a small file that decodes to over four hours',
    file: lengthlessBomb,
    expect: /^error:audio_too_long$/,
  },
  { name: 'sixteen channels', file: manyChannels, expect: /^completed$/ },
  {
    name: 'sixteen channels as a dual-channel call',
    file: manyChannels,
    fields: { dual_channel: 'true' },
    expect: /^completed$/,
  },
  {
    name: 'an HLS playlist pointing at another file',
    file: () =>
      Buffer.from(`#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile://${speech}\n#EXT-X-ENDLIST\n`),
    expect: /^error:unsupported_media$/,
  },
  {
    name: 'a concat list pointing at another file',
    file: () => Buffer.from(`ffconcat version 1.0\nfile '${speech}'\n`),
    expect: /^error:unsupported_media$/,
  },
  {
    name: 'random bytes',
    file: () => Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 251)),
    expect: /^error:unsupported_media$/,
  },
];

describe('hostile media through the worker', () => {
  for (const entry of corpus) {
    it(`gives ${entry.name} its outcome on the first delivery`, async () => {
      const form = new FormData();
      form.append('audio', new Blob([new Uint8Array(entry.file())]), 'upload');
      for (const [name, value] of Object.entries(entry.fields ?? {})) form.append(name, value);
      const { status, body } = await submitForm(form, 'tenant-media');
      expect(status, JSON.stringify(body)).toBe(200);
      const response = await worker(sqsEvent([encodeProcessMessage(body.id ?? '')]));
      expect(response.batchItemFailures).toEqual([]);
      const job = await awsServices().jobs.get(body.id ?? '');
      const outcome = job?.status === 'error' ? `error:${job.error?.code}` : (job?.status ?? 'missing');
      expect(outcome, job?.error?.message).toMatch(entry.expect);
    });
  }
});
