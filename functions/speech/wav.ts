import { type FileHandle, open, writeFile } from 'node:fs/promises';

export interface WavLayout {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  dataOffset: number;
  dataBytes: number;
}

/** Reads the RIFF chunks of a PCM WAV file to find its format and where the samples are. */
export async function readWavLayout(file: string): Promise<WavLayout> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const header = Buffer.alloc(Math.min(size, 1 << 16));
    await handle.read(header, 0, header.length, 0);
    if (header.toString('ascii', 0, 4) !== 'RIFF' || header.toString('ascii', 8, 12) !== 'WAVE') {
      throw new Error(`${file} is not a WAV file.`);
    }
    let offset = 12;
    let format: Omit<WavLayout, 'dataOffset' | 'dataBytes'> | undefined;
    while (offset + 8 <= header.length) {
      const id = header.toString('ascii', offset, offset + 4);
      const length = header.readUInt32LE(offset + 4);
      if (id === 'fmt ') {
        format = {
          channels: header.readUInt16LE(offset + 10),
          sampleRate: header.readUInt32LE(offset + 12),
          bitsPerSample: header.readUInt16LE(offset + 22),
        };
      } else if (id === 'data') {
        if (!format) break;
        const dataOffset = offset + 8;
        // Streamed WAVs may declare a length larger than what was written.
        return { ...format, dataOffset, dataBytes: Math.min(length, size - dataOffset) };
      }
      offset += 8 + length + (length % 2);
    }
    throw new Error(`${file} has no fmt and data chunks.`);
  } finally {
    await handle.close();
  }
}

/**
 * The samples `from` to `to` (sample indexes) of a mono 16-bit PCM WAV file open in `handle`: a part of
 * the file read without the rest.
 */
export async function readSampleRange(
  handle: FileHandle,
  layout: WavLayout,
  from: number,
  to: number,
): Promise<Int16Array> {
  const bytes = Buffer.alloc(Math.max(0, to - from) * 2);
  const { bytesRead } = await handle.read(bytes, 0, bytes.length, layout.dataOffset + from * 2);
  return new Int16Array(bytes.buffer, bytes.byteOffset, Math.floor(bytesRead / 2));
}

/** Number of milliseconds of audio in a WAV file. */
export async function wavDurationMs(file: string): Promise<number> {
  const layout = await readWavLayout(file);
  const frameBytes = layout.channels * (layout.bitsPerSample / 8);
  return Math.round((layout.dataBytes / frameBytes / layout.sampleRate) * 1000);
}

/**
 * Copies the samples between two times of a PCM WAV file into a WAV file of its own, without decoding
 * the rest: how long audio is cut into chunks.
 */
export async function writeWavSlice(
  source: string,
  startMs: number,
  endMs: number,
  target: string,
): Promise<void> {
  const layout = await readWavLayout(source);
  const frameBytes = layout.channels * (layout.bitsPerSample / 8);
  const byteAt = (ms: number) =>
    Math.min(layout.dataBytes, Math.max(0, Math.round((ms / 1000) * layout.sampleRate) * frameBytes));
  const from = byteAt(startMs);
  const length = Math.max(0, byteAt(endMs) - from);
  const header = pcmWavHeader(layout.sampleRate, layout.channels, layout.bitsPerSample, length);
  const samples = Buffer.alloc(length);
  const handle = await open(source, 'r');
  try {
    await handle.read(samples, 0, length, layout.dataOffset + from);
  } finally {
    await handle.close();
  }
  await writeFile(target, Buffer.concat([header, samples]));
}

/** The plain 44-byte header of a PCM WAV file (what PocketSphinx expects: it skips 44 bytes). */
function pcmWavHeader(
  sampleRate: number,
  channels: number,
  bitsPerSample: number,
  dataBytes: number,
): Buffer {
  const frameBytes = channels * (bitsPerSample / 8);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * frameBytes, 28);
  header.writeUInt16LE(frameBytes, 32);
  header.writeUInt16LE(bitsPerSample, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

/** Writes mono 16-bit samples as a WAV file. */
export async function writeWav(target: string, samples: Int16Array, sampleRate: number): Promise<void> {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  await writeFile(target, Buffer.concat([pcmWavHeader(sampleRate, 1, 16, data.length), data]));
}
