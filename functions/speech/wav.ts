import { open } from 'node:fs/promises';

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

/** Number of milliseconds of audio in a WAV file. */
export async function wavDurationMs(file: string): Promise<number> {
  const layout = await readWavLayout(file);
  const frameBytes = layout.channels * (layout.bitsPerSample / 8);
  return Math.round((layout.dataBytes / frameBytes / layout.sampleRate) * 1000);
}
