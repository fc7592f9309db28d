/**
 * whisper.cpp model files: the official ggml models with pinned checksums, their download (resumed,
 * with progress, verified before it is kept), and a structural check of any model file that finds a
 * truncated or foreign file before whisper.cpp loads it (whisper.cpp 1.7 reads a truncated tensor
 * without complaint). Node built-ins and relative imports only: the worker image's build runs the
 * download before it copies the rest of the sources.
 */
import { createHash } from 'node:crypto';
import { closeSync, createReadStream, openSync, readSync, statSync } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Where whisper.cpp's own download script fetches the pre-converted models from. */
export const OFFICIAL_MODEL_BASE_URL = 'https://huggingface.co/ggerganov/whisper.cpp/resolve/main';

export interface OfficialModel {
  file: string;
  /** SHA-256 of the file, as the Hugging Face repository records it for the LFS object. */
  sha256: string;
  /** SHA-1 of the file, as whisper.cpp's `models/README.md` publishes it. */
  sha1: string;
  /** Disk size in MiB (whisper.cpp's `models/README.md`) and memory while transcribing in MB (its README). */
  diskMiB: number;
  memoryMb: number;
}

/**
 * The official models this service knows, both checksums pinned: a download must match both. Figures
 * from whisper.cpp's README ("Memory usage") and models/README.md ("Available models").
 */
export const OFFICIAL_MODELS = {
  'tiny.en': {
    file: 'ggml-tiny.en.bin',
    sha256: '921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f',
    sha1: 'c78c86eb1a8faa21b369bcd33207cc90d64ae9df',
    diskMiB: 75,
    memoryMb: 273,
  },
  tiny: {
    file: 'ggml-tiny.bin',
    sha256: 'be07e048e1e599ad46341c8d2a135645097a538221678b7acdd1b1919c6e1b21',
    sha1: 'bd577a113a864445d4c299885e0cb97d4ba92b5f',
    diskMiB: 75,
    memoryMb: 273,
  },
  'base.en': {
    file: 'ggml-base.en.bin',
    sha256: 'a03779c86df3323075f5e796cb2ce5029f00ec8869eee3fdfb897afe36c6d002',
    sha1: '137c40403d78fd54d454da0f9bd998f78703390c',
    diskMiB: 142,
    memoryMb: 388,
  },
  base: {
    file: 'ggml-base.bin',
    sha256: '60ed5bc3dd14eea856493d334349b405782ddcaf0028d4b5df4088345fba2efe',
    sha1: '465707469ff3a37a2b9b8d8f89f2f99de7299dac',
    diskMiB: 142,
    memoryMb: 388,
  },
  'small.en': {
    file: 'ggml-small.en.bin',
    sha256: 'c6138d6d58ecc8322097e0f987c32f1be8bb0a18532a3f88f734d1bbf9c41e5d',
    sha1: 'db8a495a91d927739e50b3fc1cc4c6b8f6c2d022',
    diskMiB: 466,
    memoryMb: 852,
  },
  small: {
    file: 'ggml-small.bin',
    sha256: '1be3a9b2063867b937e64e2ec7483364a79917e157fa98c5d94b5c1fffea987b',
    sha1: '55356645c2b361a969dfd0ef2c5a50d530afd8d5',
    diskMiB: 466,
    memoryMb: 852,
  },
  'medium.en': {
    file: 'ggml-medium.en.bin',
    sha256: 'cc37e93478338ec7700281a7ac30a10128929eb8f427dda2e865faa8f6da4356',
    sha1: '8c30f0e44ce9560643ebd10bbe50cd20eafd3723',
    diskMiB: 1536,
    memoryMb: 2100,
  },
  medium: {
    file: 'ggml-medium.bin',
    sha256: '6c14d5adee5f86394037b4e4e8b59f1673b6cee10e3cf0b11bbdbee79c156208',
    sha1: 'fd9727b6e1217c2f614f9b698455c4ffd82463b4',
    diskMiB: 1536,
    memoryMb: 2100,
  },
  'large-v3': {
    file: 'ggml-large-v3.bin',
    sha256: '64d182b440b98d5203c4f9bd541544d84c605196c4f7b845dfa11fb23594d1e2',
    sha1: 'ad82bf6a9043ceed055076d0fd39f5f186ff8062',
    diskMiB: 2970,
    memoryMb: 3900,
  },
} as const satisfies Record<string, OfficialModel>;
export type OfficialModelName = keyof typeof OFFICIAL_MODELS;
export const OFFICIAL_MODEL_NAMES = Object.keys(OFFICIAL_MODELS) as OfficialModelName[];

export function isOfficialModelName(name: string): name is OfficialModelName {
  return Object.hasOwn(OFFICIAL_MODELS, name);
}

/** A model file that cannot be used, with a message that says what to do. */
export class WhisperModelError extends Error {
  override readonly name = 'WhisperModelError';
}

export interface FetchProgress {
  receivedBytes: number;
  totalBytes?: number;
}

export interface FetchModelOptions {
  /** Folder the model is written to (created if missing). */
  dir: string;
  /** Another copy of the official files, e.g. a mirror (tests use a local server). */
  baseUrl?: string;
  onProgress?: (progress: FetchProgress) => void;
  /** Requests time out after this long without an answer or without data. */
  stallMs?: number;
}

/**
 * Downloads an official model into `dir` as its official file name. A previous partial download
 * (`<file>.part`) is resumed with a range request; the finished file must match both pinned
 * checksums, or it is deleted and nothing is kept. A file already in place that matches is kept.
 */
export async function fetchOfficialModel(name: string, options: FetchModelOptions): Promise<string> {
  if (!isOfficialModelName(name)) {
    throw new WhisperModelError(
      `Unknown model "${name}". Official models: ${OFFICIAL_MODEL_NAMES.join(', ')}.`,
    );
  }
  return fetchModel(name, OFFICIAL_MODELS[name], options);
}

/** `fetchOfficialModel` for any file with pinned checksums (tests serve their own). */
export async function fetchModel(
  name: string,
  model: Pick<OfficialModel, 'file' | 'sha256' | 'sha1'>,
  options: FetchModelOptions,
): Promise<string> {
  await mkdir(options.dir, { recursive: true });
  const target = join(options.dir, model.file);
  if (await exists(target)) {
    if (await matchesChecksums(target, model)) return target;
    throw new WhisperModelError(
      `${target} exists but does not match the checksums of ${name}; remove it and fetch again.`,
    );
  }
  const partial = `${target}.part`;
  const url = `${options.baseUrl ?? OFFICIAL_MODEL_BASE_URL}/${model.file}`;
  await downloadResuming(url, partial, options);
  if (!(await matchesChecksums(partial, model))) {
    await rm(partial, { force: true });
    throw new WhisperModelError(
      `The download of ${name} from ${url} does not match its pinned SHA-256 ${model.sha256}; it was deleted.`,
    );
  }
  await rename(partial, target);
  return target;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

/** Appends to `file` from where it stops; a server that ignores the range starts it again. */
async function downloadResuming(url: string, file: string, options: FetchModelOptions): Promise<void> {
  const stallMs = options.stallMs ?? 60_000;
  const already = (await stat(file).catch(() => undefined))?.size ?? 0;
  const controller = new AbortController();
  let timer = setTimeout(() => controller.abort(), stallMs);
  const keepAlive = () => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(), stallMs);
  };
  try {
    const response = await fetch(url, {
      headers: already > 0 ? { range: `bytes=${already}-` } : {},
      signal: controller.signal,
      redirect: 'follow',
    });
    if (response.status === 416 && already > 0) return; // the partial file is already whole
    if (!response.ok || !response.body) {
      throw new WhisperModelError(`Downloading ${url} failed: HTTP ${response.status}.`);
    }
    const resumed = response.status === 206;
    const start = resumed ? already : 0;
    const length = Number(response.headers.get('content-length'));
    const totalBytes = Number.isFinite(length) && length > 0 ? start + length : undefined;
    const handle = await open(file, resumed ? 'a' : 'w');
    let receivedBytes = start;
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        keepAlive();
        await handle.write(chunk);
        receivedBytes += chunk.length;
        options.onProgress?.({ receivedBytes, ...(totalBytes ? { totalBytes } : {}) });
      }
    } finally {
      await handle.close();
    }
    if (totalBytes !== undefined && receivedBytes !== totalBytes) {
      throw new WhisperModelError(
        `Downloading ${url} stopped at ${receivedBytes} of ${totalBytes} bytes; run the same command again (a partial download resumes).`,
      );
    }
  } catch (error) {
    if (error instanceof WhisperModelError) throw error;
    const cause = (error as { cause?: { message?: string } }).cause?.message;
    const reason = controller.signal.aborted ? `no data for ${stallMs / 1000} s` : (cause ?? String(error));
    throw new WhisperModelError(
      `Downloading ${url} failed (${reason}); run the same command again (a partial download resumes).`,
    );
  } finally {
    clearTimeout(timer);
  }
}

async function matchesChecksums(
  file: string,
  model: Pick<OfficialModel, 'sha256' | 'sha1'>,
): Promise<boolean> {
  const sha256 = createHash('sha256');
  const sha1 = createHash('sha1');
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    sha256.update(chunk as Buffer);
    sha1.update(chunk as Buffer);
  }
  return sha256.digest('hex') === model.sha256 && sha1.digest('hex') === model.sha1;
}

/** What the structural check learned about a model file. */
export interface WhisperModelInfo {
  file: string;
  sizeBytes: number;
  multilingual: boolean;
  /** Encoder and decoder layers (4 and 4 for tiny, 6 and 6 for base, …). */
  layers: { audio: number; text: number };
  /** 0: whisper.cpp's test models, whose weights are not in the file (it runs them as zeros). */
  tensors: number;
}

/** ggml tensor types whisper models use: bytes per block and values per block (ggml.c's type traits). */
const TENSOR_TYPES: Record<number, { bytes: number; values: number }> = {
  0: { bytes: 4, values: 1 }, // F32
  1: { bytes: 2, values: 1 }, // F16
  2: { bytes: 18, values: 32 }, // Q4_0
  3: { bytes: 20, values: 32 }, // Q4_1
  6: { bytes: 22, values: 32 }, // Q5_0
  7: { bytes: 24, values: 32 }, // Q5_1
  8: { bytes: 34, values: 32 }, // Q8_0
};
const GGML_MAGIC = 0x67676d6c; // "ggml"
/** Tensors of the encoder and decoder outside their blocks, and per block (whisper.cpp's model loader). */
const OUTSIDE_BLOCKS = [
  'encoder.positional_embedding',
  'encoder.conv1.weight',
  'encoder.conv1.bias',
  'encoder.conv2.weight',
  'encoder.conv2.bias',
  'encoder.ln_post.weight',
  'encoder.ln_post.bias',
  'decoder.positional_embedding',
  'decoder.token_embedding.weight',
  'decoder.ln.weight',
  'decoder.ln.bias',
];
const LAYER_NORMS_AND_MLP = ['mlp_ln', 'mlp.0', 'mlp.2', 'attn_ln'].flatMap((part) => [
  `${part}.weight`,
  `${part}.bias`,
]);
/** Attention projections: the key has no bias. */
const attention = (name: string) =>
  ['query', 'key', 'value', 'out'].flatMap((part) =>
    part === 'key' ? [`${name}.${part}.weight`] : [`${name}.${part}.weight`, `${name}.${part}.bias`],
  );
const AUDIO_BLOCK = [...LAYER_NORMS_AND_MLP, ...attention('attn')];
const TEXT_BLOCK = [...AUDIO_BLOCK, 'cross_attn_ln.weight', 'cross_attn_ln.bias', ...attention('cross_attn')];

/** The tensor names of a model with these layers, as whisper.cpp's loader expects them. */
function expectedTensorNames(audioLayers: number, textLayers: number): Set<string> {
  const blocks = (side: string, layers: number, parts: string[]) =>
    Array.from({ length: layers }, (_, layer) =>
      parts.map((part) => `${side}.blocks.${layer}.${part}`),
    ).flat();
  return new Set([
    ...OUTSIDE_BLOCKS,
    ...blocks('encoder', audioLayers, AUDIO_BLOCK),
    ...blocks('decoder', textLayers, TEXT_BLOCK),
  ]);
}
const MULTILINGUAL_VOCAB = 51865;

/**
 * Reads a ggml whisper model file as whisper.cpp's loader does (magic, hyperparameters, mel filters,
 * vocabulary, then each tensor's header and data) without loading the weights, and throws a
 * WhisperModelError for anything whisper.cpp would reject or silently misread: a missing or empty
 * file, another format, implausible hyperparameters, a tensor of unknown type or name or cut short,
 * bytes after the last tensor, or fewer tensors than the architecture has. (Tensor shapes are left to
 * whisper.cpp: only a hand-made file has the right names and sizes but wrong shapes.)
 */
export function checkWhisperModel(file: string): WhisperModelInfo {
  let sizeBytes: number;
  try {
    const stats = statSync(file);
    if (!stats.isFile()) throw new WhisperModelError(`${file} is not a file.`);
    sizeBytes = stats.size;
  } catch (error) {
    if (error instanceof WhisperModelError) throw error;
    throw new WhisperModelError(
      `The whisper model ${file} does not exist or cannot be read (\`npm run models:fetch -- base.en\` fetches one).`,
    );
  }
  const fd = openSync(file, 'r');
  try {
    const reader = new ModelReader(fd, sizeBytes, file);
    if (reader.uint32() !== GGML_MAGIC) {
      throw new WhisperModelError(`${file} is not a ggml whisper model (no ggml magic number).`);
    }
    const [vocab = 0, audioCtx = 0, audioState = 0, audioHead = 0, audioLayers = 0, textCtx = 0] =
      reader.int32s(6);
    const [textState = 0, textHead = 0, textLayers = 0, mels = 0, ftype = 0] = reader.int32s(5);
    const plausible =
      vocab > 0 &&
      vocab < 1_000_000 &&
      [audioCtx, audioState, audioHead, textCtx, textState, textHead].every((n) => n > 0 && n <= 65_536) &&
      [audioLayers, textLayers].every((n) => n > 0 && n <= 256) &&
      mels > 0 &&
      mels <= 512 &&
      ftype >= 0;
    if (!plausible) throw new WhisperModelError(`${file} has implausible whisper hyperparameters.`);
    const [filterMels = 0, filterFft = 0] = reader.int32s(2);
    if (filterMels <= 0 || filterFft <= 0 || filterMels * filterFft > 1_000_000) {
      throw new WhisperModelError(`${file} has implausible mel filters.`);
    }
    reader.skip(filterMels * filterFft * 4);
    const tokens = reader.int32s(1)[0] ?? 0;
    if (tokens < 0 || tokens > 1_000_000)
      throw new WhisperModelError(`${file} has an implausible vocabulary.`);
    for (let i = 0; i < tokens; i++) reader.skip(reader.uint32());

    const expected = expectedTensorNames(audioLayers, textLayers);
    const seen = new Set<string>();
    let tensors = 0;
    while (!reader.atEnd()) {
      const [dims = 0, nameLength = 0, type = -1] = reader.int32s(3);
      const layout = TENSOR_TYPES[type];
      if (dims < 1 || dims > 4 || nameLength < 1 || nameLength > 256 || !layout) {
        throw new WhisperModelError(`${file} has a malformed tensor header (tensor ${tensors + 1}).`);
      }
      const values = reader.int32s(dims).reduce((product, n) => product * n, 1);
      if (values <= 0 || values % layout.values !== 0) {
        throw new WhisperModelError(`${file} has a tensor of impossible shape (tensor ${tensors + 1}).`);
      }
      const name = reader.text(nameLength);
      if (!expected.has(name) || seen.has(name)) {
        throw new WhisperModelError(`${file} has an unexpected tensor "${name}": it is not a whisper model.`);
      }
      seen.add(name);
      reader.skip((values / layout.values) * layout.bytes);
      tensors++;
    }
    if (tensors !== 0 && tensors !== expected.size) {
      throw new WhisperModelError(
        `${file} has ${tensors} tensors where its architecture has ${expected.size}: it is incomplete.`,
      );
    }
    return {
      file,
      sizeBytes,
      multilingual: vocab >= MULTILINGUAL_VOCAB,
      layers: { audio: audioLayers, text: textLayers },
      tensors,
    };
  } finally {
    closeSync(fd);
  }
}

/** Reads little-endian fields from a file by position, failing clearly where the file ends early. */
class ModelReader {
  private position = 0;

  constructor(
    private readonly fd: number,
    private readonly size: number,
    private readonly file: string,
  ) {}

  atEnd(): boolean {
    return this.position === this.size;
  }

  skip(bytes: number): void {
    this.position += bytes;
    if (this.position > this.size) this.truncated();
  }

  uint32(): number {
    return this.read(4).readUInt32LE(0);
  }

  text(bytes: number): string {
    return this.read(bytes).toString('latin1');
  }

  int32s(count: number): number[] {
    const bytes = this.read(4 * count);
    return Array.from({ length: count }, (_, index) => bytes.readInt32LE(4 * index));
  }

  private read(bytes: number): Buffer {
    if (this.position + bytes > this.size) this.truncated();
    const buffer = Buffer.alloc(bytes);
    readSync(this.fd, buffer, 0, bytes, this.position);
    this.position += bytes;
    return buffer;
  }

  private truncated(): never {
    throw new WhisperModelError(
      `${this.file} ends early (${this.size} bytes): the model file is truncated or corrupt.`,
    );
  }
}
