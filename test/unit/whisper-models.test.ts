import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  checkWhisperModel,
  type FetchProgress,
  fetchModel,
  fetchOfficialModel,
  OFFICIAL_MODEL_NAMES,
  OFFICIAL_MODELS,
  WhisperModelError,
} from '#speech/whisper-models';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TEST_MODEL = join(ROOT, '..', 'shared', 'models', 'for-tests-ggml-tiny.en.bin');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'whisper-models-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const int32s = (...values: number[]) => {
  const buffer = Buffer.alloc(4 * values.length);
  for (const [index, value] of values.entries()) buffer.writeInt32LE(value, 4 * index);
  return buffer;
};

/** The tensor names whisper.cpp's loader expects of a model with one encoder and one decoder block. */
function tensorNames(): string[] {
  const normsAndMlp = ['mlp_ln', 'mlp.0', 'mlp.2', 'attn_ln'].flatMap((part) => [
    `${part}.weight`,
    `${part}.bias`,
  ]);
  const attention = (name: string) =>
    ['query.weight', 'query.bias', 'key.weight', 'value.weight', 'value.bias', 'out.weight', 'out.bias'].map(
      (part) => `${name}.${part}`,
    );
  const audio = [...normsAndMlp, ...attention('attn')];
  const text = [...audio, 'cross_attn_ln.weight', 'cross_attn_ln.bias', ...attention('cross_attn')];
  return [
    ...['positional_embedding', 'conv1.weight', 'conv1.bias', 'conv2.weight', 'conv2.bias'].map(
      (n) => `encoder.${n}`,
    ),
    ...['ln_post.weight', 'ln_post.bias'].map((n) => `encoder.${n}`),
    ...['positional_embedding', 'token_embedding.weight', 'ln.weight', 'ln.bias'].map((n) => `decoder.${n}`),
    ...audio.map((part) => `encoder.blocks.0.${part}`),
    ...text.map((part) => `decoder.blocks.0.${part}`),
  ];
}

interface TensorSpec {
  name: string;
  type: number;
  dims: number[];
}

/** A ggml whisper file laid out as whisper.cpp's loader reads it, with one block each side and tiny tensors. */
function ggmlModel(
  tensors: TensorSpec[] = tensorNames().map((name, i) => ({ name, type: i % 2, dims: [2, 2] })),
) {
  const bytesPerValue: Record<number, number> = { 0: 4, 1: 2 };
  const vocab = ['a', 'b', 'hello'];
  return Buffer.concat([
    Buffer.from([0x6c, 0x6d, 0x67, 0x67]), // "ggml" as a little-endian uint32
    int32s(3, 4, 8, 2, 1, 4, 8, 2, 1, 80, 1), // vocab, audio ctx/state/head/layers, text ctx/state/head/layers, mels, ftype
    int32s(2, 3),
    Buffer.alloc(2 * 3 * 4),
    int32s(vocab.length),
    ...vocab.flatMap((word) => [int32s(word.length), Buffer.from(word)]),
    ...tensors.flatMap(({ name, type, dims }) => [
      int32s(dims.length, name.length, type),
      int32s(...dims),
      Buffer.from(name),
      Buffer.alloc(Math.max(0, dims.reduce((a, b) => a * b, 1) * (bytesPerValue[type] ?? 1))),
    ]),
  ]);
}

const write = (name: string, bytes: Buffer | string) => {
  const file = join(dir, name);
  writeFileSync(file, bytes);
  return file;
};
const rejection = (file: string) => {
  try {
    checkWhisperModel(file);
  } catch (error) {
    expect(error).toBeInstanceOf(WhisperModelError);
    return (error as Error).message;
  }
  throw new Error(`${file} was accepted`);
};

describe('checkWhisperModel', () => {
  it("accepts whisper.cpp's test model, whose weights are not in the file", () => {
    expect(checkWhisperModel(TEST_MODEL)).toMatchObject({
      multilingual: false,
      layers: { audio: 4, text: 4 },
      tensors: 0,
      sizeBytes: statSync(TEST_MODEL).size,
    });
  });

  it('accepts a whole model: every tensor of its architecture, the file ending after the last', () => {
    expect(checkWhisperModel(write('whole.bin', ggmlModel()))).toMatchObject({
      tensors: 50,
      layers: { audio: 1, text: 1 },
    });
  });

  it('refuses a missing file, a folder, an empty file, and files of other formats', () => {
    expect(rejection(join(dir, 'missing.bin'))).toMatch(/does not exist/);
    mkdirSync(join(dir, 'folder'));
    expect(rejection(join(dir, 'folder'))).toMatch(/not a file/);
    expect(rejection(write('empty.bin', Buffer.alloc(0)))).toMatch(/ends early/);
    expect(rejection(write('page.bin', '<html>Rate limited</html>'))).toMatch(/not a ggml whisper model/);
    expect(rejection(write('gguf.bin', Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(64)])))).toMatch(
      /not a ggml/,
    );
  });

  it('refuses the model cut short anywhere, and with bytes after its last tensor', () => {
    const model = ggmlModel();
    const lengths = new Set([1, 4, 10, 47, 60, 83, model.length - 1]);
    for (let length = 0; length < model.length; length += 37) lengths.add(length);
    for (const length of lengths) {
      expect(rejection(write('cut.bin', model.subarray(0, length))), `cut at ${length}`).toMatch(
        /ends early|malformed|incomplete/,
      );
    }
    expect(rejection(write('longer.bin', Buffer.concat([model, Buffer.from([0])])))).toMatch(
      /ends early|malformed/,
    );
  });

  it('refuses a tensor missing, repeated, foreign, of an unknown type or of an impossible shape', () => {
    const names = tensorNames();
    const spec = (name: string, type = 0, dims = [2, 2]) => ({ name, type, dims });
    const cases: [string, TensorSpec[], RegExp][] = [
      ['missing', names.slice(1).map((name) => spec(name)), /49 tensors where its architecture has 50/],
      ['repeated', [...names.map((name) => spec(name)), spec(names[0] ?? '')], /unexpected tensor/],
      [
        'foreign',
        [spec('model.embed_tokens.weight'), ...names.map((name) => spec(name))],
        /unexpected tensor/,
      ],
      ['unknown type', names.map((name, i) => spec(name, i === 3 ? 42 : 0)), /malformed tensor header/],
      [
        'impossible shape',
        names.map((name, i) => spec(name, 0, i === 5 ? [2, -2] : [2, 2])),
        /impossible shape/,
      ],
      ['quantized shape', names.map((name, i) => spec(name, i === 5 ? 8 : 0)), /impossible shape/],
    ];
    for (const [label, tensors, message] of cases) {
      expect(rejection(write(`${label}.bin`, ggmlModel(tensors))), label).toMatch(message);
    }
  });

  it('refuses implausible hyperparameters, mel filters and vocabulary', () => {
    const model = ggmlModel();
    const patched = (offset: number, value: number) => {
      const copy = Buffer.from(model);
      copy.writeInt32LE(value, offset);
      return copy;
    };
    expect(rejection(write('layers.bin', patched(4 + 4 * 4, -1)))).toMatch(/hyperparameters/);
    expect(rejection(write('vocab.bin', patched(4, 0)))).toMatch(/hyperparameters/);
    expect(rejection(write('mel.bin', patched(4 + 11 * 4, 1 << 20)))).toMatch(/mel filters/);
    expect(rejection(write('tokens.bin', patched(4 + 13 * 4 + 24, -5)))).toMatch(/vocabulary/);
  });
});

/** A stand-in for the model host: serves one file with range requests, and misbehaves when told to. */
interface Host {
  url: string;
  requests: { url: string; range?: string }[];
  body: Buffer;
  mode: 'normal' | 'cut' | 'ignore-range' | 'stall' | 'missing';
}
let host: Host;
let server: Server;

beforeAll(async () => {
  host = { url: '', requests: [], body: Buffer.alloc(0), mode: 'normal' };
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    host.requests.push({
      url: request.url ?? '',
      ...(request.headers.range ? { range: request.headers.range } : {}),
    });
    const { body, mode } = host;
    if (mode === 'missing') return response.writeHead(404).end('Entry not found');
    const range = /^bytes=(\d+)-$/.exec(request.headers.range ?? '');
    const start = range && mode !== 'ignore-range' ? Number(range[1]) : 0;
    if (start >= body.length && start > 0) return response.writeHead(416).end();
    response.writeHead(start > 0 ? 206 : 200, { 'content-length': body.length - start });
    if (mode === 'cut') {
      response.write(body.subarray(start, start + Math.floor((body.length - start) / 2)));
      setTimeout(() => response.destroy(), 20);
    } else if (mode === 'stall') {
      response.write(body.subarray(start, start + 1000)); // …and nothing more
    } else {
      response.end(body.subarray(start));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  host.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A model file of random bytes and its checksums, served by the host. */
function serveModel(size = 1024 * 1024 + 17) {
  host.body = Buffer.from(Array.from({ length: size }, (_, i) => (i * 2654435761) >>> 24));
  host.requests = [];
  host.mode = 'normal';
  return {
    file: 'ggml-test.bin',
    sha256: createHash('sha256').update(host.body).digest('hex'),
    sha1: createHash('sha1').update(host.body).digest('hex'),
  };
}

async function fetchFailure(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(WhisperModelError);
  return (error as Error).message;
}

describe('fetchModel', () => {
  it('downloads a model whose checksums match, reporting progress up to its size', async () => {
    const model = serveModel();
    const progress: FetchProgress[] = [];
    const file = await fetchModel('test', model, {
      dir,
      baseUrl: host.url,
      onProgress: (p) => progress.push(p),
    });
    expect(file).toBe(join(dir, model.file));
    expect(readFileSync(file).equals(host.body)).toBe(true);
    expect(existsSync(`${file}.part`)).toBe(false);
    expect(host.requests).toEqual([{ url: `/${model.file}` }]);
    const received = progress.map((p) => p.receivedBytes);
    expect(received).toEqual([...received].sort((a, b) => a - b));
    expect(progress.at(-1)).toEqual({ receivedBytes: host.body.length, totalBytes: host.body.length });
  });

  it('deletes a download that does not match its pinned SHA-256, or its SHA-1, and keeps nothing', async () => {
    for (const wrong of ['sha256', 'sha1'] as const) {
      const model = { ...serveModel(), [wrong]: '0'.repeat(wrong === 'sha256' ? 64 : 40) };
      expect(await fetchFailure(fetchModel('test', model, { dir, baseUrl: host.url }))).toMatch(
        /does not match/,
      );
      expect(existsSync(join(dir, model.file))).toBe(false);
      expect(existsSync(join(dir, `${model.file}.part`))).toBe(false);
    }
  });

  it('resumes a cut download from where it stopped', async () => {
    const model = serveModel();
    host.mode = 'cut';
    expect(await fetchFailure(fetchModel('test', model, { dir, baseUrl: host.url }))).toMatch(/resumes/);
    const partial = statSync(join(dir, `${model.file}.part`)).size;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(host.body.length);

    host.mode = 'normal';
    const file = await fetchModel('test', model, { dir, baseUrl: host.url });
    expect(host.requests.at(-1)?.range).toBe(`bytes=${partial}-`);
    expect(readFileSync(file).equals(host.body)).toBe(true);
  });

  it('starts again when the server ignores the range, and checks a partial file the server calls whole', async () => {
    const model = serveModel();
    writeFileSync(join(dir, `${model.file}.part`), host.body.subarray(0, 1000));
    host.mode = 'ignore-range';
    expect(readFileSync(await fetchModel('test', model, { dir, baseUrl: host.url })).equals(host.body)).toBe(
      true,
    );

    rmSync(join(dir, model.file));
    writeFileSync(join(dir, `${model.file}.part`), host.body);
    host.mode = 'normal';
    expect(readFileSync(await fetchModel('test', model, { dir, baseUrl: host.url })).equals(host.body)).toBe(
      true,
    );
    expect(host.requests.at(-1)?.range).toBe(`bytes=${host.body.length}-`);
  });

  it('reports a missing file, a stalled download and an unreachable host without keeping a file', async () => {
    const model = serveModel();
    host.mode = 'missing';
    expect(await fetchFailure(fetchModel('test', model, { dir, baseUrl: host.url }))).toMatch(/HTTP 404/);
    host.mode = 'stall';
    expect(await fetchFailure(fetchModel('test', model, { dir, baseUrl: host.url, stallMs: 300 }))).toMatch(
      /no data for 0.3 s/,
    );
    expect(await fetchFailure(fetchModel('test', model, { dir, baseUrl: 'http://127.0.0.1:9' }))).toMatch(
      /failed/,
    );
    expect(existsSync(join(dir, model.file))).toBe(false);
  });

  it('keeps a model already in place that matches, without a request, and refuses one that does not', async () => {
    const model = serveModel();
    writeFileSync(join(dir, model.file), host.body);
    await fetchModel('test', model, { dir, baseUrl: host.url });
    expect(host.requests).toEqual([]);
    writeFileSync(join(dir, model.file), 'something else');
    expect(await fetchFailure(fetchModel('test', model, { dir, baseUrl: host.url }))).toMatch(/remove it/);
    expect(readFileSync(join(dir, model.file), 'utf8')).toBe('something else');
  });
});

describe('the official models', () => {
  it('pin a SHA-256 and a SHA-1 of the right form for each, and name their ggml files', () => {
    for (const name of OFFICIAL_MODEL_NAMES) {
      const model = OFFICIAL_MODELS[name];
      expect(model.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(model.sha1).toMatch(/^[0-9a-f]{40}$/);
      expect(model.file).toBe(`ggml-${name}.bin`);
    }
  });

  it('refuses a name that is not an official model, listing those that are', async () => {
    expect(await fetchFailure(fetchOfficialModel('large-v9', { dir }))).toMatch(
      /Official models: tiny.en, .*base.en/,
    );
  });
});

const run = (args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      join(ROOT, 'node_modules', '.bin', 'tsx'),
      [join(ROOT, 'local', 'models-fetch.ts'), ...args],
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });

describe('npm run models:fetch', () => {
  it('refuses a download from a mirror that does not match the pinned checksums of base.en, and keeps nothing', async () => {
    serveModel(64 * 1024);
    const { code, stderr } = await run(['base.en', '--dir', dir, '--base-url', host.url]);
    expect(code).toBe(1);
    expect(stderr).toContain(`does not match its pinned SHA-256 ${OFFICIAL_MODELS['base.en'].sha256}`);
    expect(host.requests.map((request) => request.url)).toEqual(['/ggml-base.en.bin']);
    expect(existsSync(join(dir, 'ggml-base.en.bin'))).toBe(false);
    expect(existsSync(join(dir, 'ggml-base.en.bin.part'))).toBe(false);
  });

  it('prints its usage without a model name', async () => {
    const { code, stderr } = await run([]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/usage: npm run models:fetch -- NAME/);
  });
});
