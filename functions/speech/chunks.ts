/** Where one chunk of a file lies: the audio it is given, and the part whose words it owns. */
export interface ChunkBounds {
  /** The audio the chunk covers, in milliseconds from the file's start: its own part and an edge each side. */
  startMs: number;
  endMs: number;
  /** The part of the file whose words this chunk owns, [ownStartMs, ownEndMs): the chunks' own parts tile the file. */
  ownStartMs: number;
  ownEndMs: number;
}

export interface CutSettings {
  /** A chunk's own part is cut between these lengths, at the quietest stretch, as near the target as that allows. */
  minMs: number;
  targetMs: number;
  maxMs: number;
  /** Audio given to a chunk beyond its own part on each side, so that a word at a cut is heard whole. */
  edgeMs: number;
}

/** Energy is measured in frames of 10 ms, and smoothed over 300 ms to find a pause rather than a gap in a word. */
const FRAME_MS = 10;
const SMOOTHING_FRAMES = 30;
/** Among near-quietest stretches (within this factor of the quietest energy), the one nearest the target wins. */
const QUIET_FACTOR = 1.5;

/**
 * Cuts a stream of 16-bit PCM (interleaved channels) into chunks at the quietest stretch of each window
 * [min, max] past the last cut, holding at most one chunk's audio: its memory does not grow with the
 * file. A file no longer than `maxMs` (plus an edge) is one chunk. For several channels the cut is the
 * same for all (a call's two sides), chosen on their summed energy.
 */
export class ChunkCutter {
  private readonly samplesPerFrame: number;
  /** Interleaved samples from `bufferStart` (a sample index of the file, per channel) on; `used` of them are set. */
  private buffer = new Int16Array(1 << 16);
  private used = 0;
  private bufferStart = 0;
  private ownStart = 0;
  private total = 0;
  private pendingByte: Buffer | undefined;
  private index = 0;

  constructor(
    private readonly channels: number,
    private readonly sampleRate: number,
    private readonly settings: CutSettings,
    /** Called for each chunk in order with its audio, one Int16Array per channel; awaited before reading on. */
    private readonly emit: (
      index: number,
      bounds: ChunkBounds,
      audio: Int16Array[],
      last: boolean,
    ) => Promise<void>,
  ) {
    this.samplesPerFrame = (sampleRate * FRAME_MS) / 1000;
  }

  async push(data: Buffer): Promise<void> {
    const bytes = this.pendingByte ? Buffer.concat([this.pendingByte, data]) : data;
    const frameBytes = 2 * this.channels;
    const usable = bytes.length - (bytes.length % frameBytes);
    this.pendingByte = usable < bytes.length ? Buffer.from(bytes.subarray(usable)) : undefined;
    const count = usable / 2;
    if (this.used + count > this.buffer.length) {
      // Doubling keeps appends linear overall; the buffer never holds more than a chunk and a read.
      const grown = new Int16Array(Math.max(this.buffer.length * 2, this.used + count));
      grown.set(this.buffer.subarray(0, this.used));
      this.buffer = grown;
    }
    for (let i = 0; i < count; i++) this.buffer[this.used + i] = bytes.readInt16LE(i * 2);
    this.used += count;
    this.total += count / this.channels;
    const { maxMs, edgeMs } = this.settings;
    while (this.total - this.ownStart > this.samples(maxMs + edgeMs)) await this.cut();
  }

  /** Emits the last chunk; answers the file's length in milliseconds. */
  async end(): Promise<number> {
    const durationMs = this.ms(this.total);
    if (this.total > this.ownStart || this.index === 0) {
      const start = Math.max(0, this.ownStart - this.samples(this.settings.edgeMs));
      await this.emit(
        this.index++,
        {
          startMs: this.ms(start),
          endMs: durationMs,
          ownStartMs: this.ms(this.ownStart),
          ownEndMs: durationMs,
        },
        this.slice(start, this.total),
        true,
      );
    }
    return durationMs;
  }

  private async cut(): Promise<void> {
    const { minMs, targetMs, maxMs, edgeMs } = this.settings;
    const cutAt = this.quietest(
      this.ownStart + this.samples(minMs),
      this.ownStart + this.samples(maxMs),
      this.ownStart + this.samples(targetMs),
    );
    const start = Math.max(0, this.ownStart - this.samples(edgeMs));
    const end = Math.min(this.total, cutAt + this.samples(edgeMs));
    await this.emit(
      this.index++,
      {
        startMs: this.ms(start),
        endMs: this.ms(end),
        ownStartMs: this.ms(this.ownStart),
        ownEndMs: this.ms(cutAt),
      },
      this.slice(start, end),
      false,
    );
    this.ownStart = cutAt;
    // Keep from the next chunk's first sample (its edge before the cut) on.
    const keepFrom = Math.max(this.bufferStart, cutAt - this.samples(edgeMs));
    const dropped = (keepFrom - this.bufferStart) * this.channels;
    this.buffer.copyWithin(0, dropped, this.used);
    this.used -= dropped;
    this.bufferStart = keepFrom;
  }

  /** The sample in [from, to) at the middle of the quietest stretch, the nearest to `target` among near-ties. */
  private quietest(from: number, to: number, target: number): number {
    const frames = Math.floor((to - from) / this.samplesPerFrame);
    const energy = new Float64Array(frames);
    for (let frame = 0; frame < frames; frame++) {
      const first = (from + frame * this.samplesPerFrame - this.bufferStart) * this.channels;
      let sum = 0;
      for (let i = first; i < first + this.samplesPerFrame * this.channels; i++)
        sum += (this.buffer[i] ?? 0) ** 2;
      energy[frame] = sum;
    }
    const smoothed = new Float64Array(frames);
    let window = 0;
    for (let frame = 0; frame < frames; frame++) {
      window += energy[frame] ?? 0;
      if (frame >= SMOOTHING_FRAMES) window -= energy[frame - SMOOTHING_FRAMES] ?? 0;
      smoothed[frame] = window;
    }
    let floor = Number.POSITIVE_INFINITY;
    for (let frame = SMOOTHING_FRAMES - 1; frame < frames; frame++)
      floor = Math.min(floor, smoothed[frame] ?? 0);
    let best = { sample: target, distance: Number.POSITIVE_INFINITY };
    for (let frame = SMOOTHING_FRAMES - 1; frame < frames; frame++) {
      if ((smoothed[frame] ?? 0) > floor * QUIET_FACTOR + 1) continue;
      // The smoothing window ends at this frame: its middle is half a window back.
      const sample = from + Math.round((frame + 1 - SMOOTHING_FRAMES / 2) * this.samplesPerFrame);
      const distance = Math.abs(sample - target);
      if (distance < best.distance) best = { sample, distance };
    }
    return Math.min(to, Math.max(from, best.sample));
  }

  /** The samples [from, to) of each channel. */
  private slice(from: number, to: number): Int16Array[] {
    return Array.from({ length: this.channels }, (_, channel) => {
      const out = new Int16Array(Math.max(0, to - from));
      for (let i = 0; i < out.length; i++)
        out[i] = this.buffer[(from - this.bufferStart + i) * this.channels + channel] ?? 0;
      return out;
    });
  }

  private samples(ms: number): number {
    return Math.round((ms * this.sampleRate) / 1000);
  }

  private ms(samples: number): number {
    return Math.round((samples * 1000) / this.sampleRate);
  }
}

/** Whether a word, by its middle, lies in the part of the file a chunk owns. */
export function ownsWord(bounds: ChunkBounds, word: { startMs: number; endMs: number }): boolean {
  const middle = (word.startMs + word.endMs) / 2;
  return middle >= bounds.ownStartMs && middle < bounds.ownEndMs;
}

/** Silence kept on each side of a piece, so that words at its edges are whole. */
const PIECE_EDGE_MS = 200;

/**
 * Groups speech regions into as few pieces as `maxPieceMs` allows, of about equal length, cut in the
 * silences between regions (a region longer than a piece is cut into equal parts), each cut at the
 * middle of its gap: what one worker decodes in parallel, one recognizer call a piece. Equal pieces,
 * not full ones and a remainder: the longest piece sets when a chunk is done on a worker of several cores.
 */
export function planPieces(
  regions: { startMs: number; endMs: number }[],
  durationMs: number,
  maxPieceMs: number,
): { startMs: number; endMs: number }[] {
  const spanMs = (regions.at(-1)?.endMs ?? 0) - (regions[0]?.startMs ?? 0);
  const targetMs = spanMs / Math.max(1, Math.ceil(spanMs / maxPieceMs));
  const pieces: { startMs: number; endMs: number }[] = [];
  for (const region of regions) {
    const current = pieces.at(-1);
    if (
      current &&
      current.endMs - current.startMs < targetMs &&
      region.endMs - current.startMs <= maxPieceMs
    ) {
      current.endMs = region.endMs;
      continue;
    }
    const parts = Math.ceil((region.endMs - region.startMs) / maxPieceMs);
    const partMs = (region.endMs - region.startMs) / parts;
    for (let part = 0; part < parts; part++) {
      const startMs = region.startMs + part * partMs;
      pieces.push({ startMs, endMs: part === parts - 1 ? region.endMs : startMs + partMs });
    }
  }
  return pieces.map((piece, index) => {
    const previous = pieces[index - 1];
    const next = pieces[index + 1];
    const startMs = previous
      ? Math.max(piece.startMs - PIECE_EDGE_MS, (previous.endMs + piece.startMs) / 2)
      : 0;
    const endMs = next ? Math.min(piece.endMs + PIECE_EDGE_MS, (piece.endMs + next.startMs) / 2) : durationMs;
    return { startMs: Math.round(startMs), endMs: Math.round(endMs) };
  });
}
