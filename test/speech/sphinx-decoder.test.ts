import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wordErrors } from '#local/evaluation/metrics';
import { decodeToWav } from '#speech/media';
import { runProcess } from '#speech/process';
import { RawSphinxRecognizer, SphinxRecognizer } from '#speech/sphinx';
import { SphinxDecoderPool } from '#speech/sphinx-decoder';
import { writeWav } from '#speech/wav';
import { findSample, samplePath, samplesOfKind } from '../helpers/samples.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sphinx-decoder-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const MINUTE = 60_000;
const CEPSTRAL_MEAN_UPDATE = /Update to\s+<([^>]+)>/;

/**
 * What the service did before the decoder was kept loaded, and what the helper must still do: two
 * `pocketsphinx_continuous` processes per file. A front-end pass (a keyword search for one word of a
 * one-word dictionary) up to the first update of the running cepstral mean, then the decode from that
 * mean, in a copy of the model's feature parameters; from the model's own mean if the pass logs none.
 */
async function decodeInTwoProcesses(wavFile: string): Promise<string> {
  const dictionary = join(dir, 'pass.dict');
  await writeFile(dictionary, 'hello HH AH L OW\n');
  // Run to its end: the first update it logs is the one the service stopped it at.
  const pass = await runProcess(
    'pocketsphinx_continuous',
    ['-infile', wavFile, '-dict', dictionary, '-keyphrase', 'hello'],
    10 * MINUTE,
  );
  const mean = CEPSTRAL_MEAN_UPDATE.exec(pass.stderr)?.[1]?.trim().split(/\s+/);
  const model = /Parsed model-specific feature parameters from (\S+)/.exec(pass.stderr)?.[1];
  const args = ['-infile', wavFile, '-time', 'yes', '-logfn', '/dev/null'];
  if (mean && model) {
    const parameters = join(dir, 'feat.params');
    const lines = (await readFile(model, 'utf8')).split('\n').filter((line) => line.trim());
    await writeFile(
      parameters,
      [...lines.filter((line) => !line.startsWith('-cmninit')), `-cmninit ${mean.join(',')}`, ''].join('\n'),
    );
    args.push('-featparams', parameters);
  }
  const decode = await runProcess('pocketsphinx_continuous', args, 10 * MINUTE);
  expect(decode.code).toBe(0);
  return decode.stdout.trim();
}

async function sampleWav(name: string, sample: Parameters<typeof samplePath>[0]): Promise<string> {
  const workDir = join(dir, name);
  await mkdir(workDir, { recursive: true });
  const [wav] = await decodeToWav(samplePath(sample), workDir);
  if (!wav) throw new Error(`${sample.id} decoded to nothing`);
  return wav;
}

describe('the sphinx-decoder keeps PocketSphinx loaded and decodes as two fresh processes did', () => {
  it('gives, request after request in one process, exactly the output of the two-process decode', async () => {
    const utterances = samplesOfKind('utterance').filter((_, index) => index % 9 === 0);
    const conversation = findSample((sample) => sample.kind === 'conversation');
    const files = [
      ...(await Promise.all(utterances.map((sample, index) => sampleWav(`utterance-${index}`, sample)))),
      await sampleWav('conversation', conversation),
    ];
    // Silence and quiet noise: a pass that finds no speech leaves the model's own mean.
    const silence = join(dir, 'silence.wav');
    await writeWav(silence, new Int16Array(3 * 16_000), 16_000);
    const noise = join(dir, 'noise.wav');
    await writeWav(
      noise,
      Int16Array.from({ length: 3 * 16_000 }, (_, i) => ((i * 7919) % 61) - 30),
      16_000,
    );
    files.push(silence, noise);
    expect(files.length).toBeGreaterThan(5);

    const expected = new Map<string, string>();
    for (const file of files) expected.set(file, await decodeInTwoProcesses(file));
    const pool = new SphinxDecoderPool();
    try {
      // Each file twice, the second time after others: a request must not depend on the ones before.
      for (const file of [...files, ...files.slice().reverse()]) {
        const outcome = await pool.decode(file, 10 * MINUTE);
        expect(outcome.timedOut).toBe(false);
        expect(outcome.output?.trim(), file).toBe(expected.get(file));
      }
    } finally {
      pool.close();
    }
  });

  it('makes fewer word errors than PocketSphinx as it comes on short recordings', async () => {
    // Every fourth utterance of the samples: short files, decoded wholly before the mean converges.
    const utterances = samplesOfKind('utterance')
      .filter((sample) => sample.reference_text)
      .filter((_, index) => index % 4 === 0);
    expect(utterances.length).toBeGreaterThan(5);
    const totals = { estimated: 0, raw: 0, words: 0 };
    const estimating = new SphinxRecognizer();
    const raw = new RawSphinxRecognizer();
    for (const [index, entry] of utterances.entries()) {
      const wav = await sampleWav(`scored-${index}`, entry);
      const reference = entry.reference_text ?? '';
      const score = async (recognizer: SphinxRecognizer | RawSphinxRecognizer) =>
        wordErrors(reference, (await recognizer.recognize(wav)).map((word) => word.text).join(' '));
      totals.estimated += (await score(estimating)).errors;
      const rawScore = await score(raw);
      totals.raw += rawScore.errors;
      totals.words += rawScore.referenceWords;
    }
    // Measured over all the utterances (npm run eval): 49.4% of words wrong as it comes, 29.1% in the service.
    expect(totals.estimated).toBeLessThan(0.8 * totals.raw);
  });
});

/**
 * A stand-in for the helper that speaks its protocol: it logs each start (with its process id) and
 * answers by the path it is given: a word, an unreadable file, a crash, or no answer at all.
 */
async function fakeDecoder(): Promise<{ command: string; starts: () => Promise<number[]> }> {
  const log = join(dir, `starts-${Math.random().toString(36).slice(2)}.txt`);
  const command = join(dir, `fake-decoder-${Math.random().toString(36).slice(2)}`);
  await writeFile(
    command,
    `#!/bin/sh
echo $$ >> '${log}'
while read -r path; do
  case "$path" in
    *unreadable*) echo "#error No such file or directory" ;;
    *crash*) echo "the model is gone" >&2; exit 3 ;;
    *hang*) exec sleep 30 ;;
    *) echo "hello"; echo "hello 0.100 0.400 0.900"; echo "#end" ;;
  esac
done
`,
  );
  await chmod(command, 0o755);
  const starts = async () =>
    (await readFile(log, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean).map(Number);
  return { command, starts };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the pool of decoders', () => {
  it('answers a request with its output and reuses the process for the next', async () => {
    const fake = await fakeDecoder();
    const pool = new SphinxDecoderPool(fake.command);
    for (const file of ['a.wav', 'b.wav'])
      expect(await pool.decode(file, MINUTE)).toEqual({
        output: 'hello\nhello 0.100 0.400 0.900',
        timedOut: false,
      });
    expect(await fake.starts()).toHaveLength(1);
    pool.close();
  });

  it('starts as many processes as requests run at once', async () => {
    const fake = await fakeDecoder();
    const pool = new SphinxDecoderPool(fake.command);
    const outcomes = await Promise.all(['a.wav', 'b.wav', 'c.wav'].map((file) => pool.decode(file, MINUTE)));
    expect(outcomes.every((outcome) => outcome.output === 'hello\nhello 0.100 0.400 0.900')).toBe(true);
    expect(await fake.starts()).toHaveLength(3);
    await pool.decode('d.wav', MINUTE);
    expect(await fake.starts()).toHaveLength(3);
    pool.close();
  });

  it('fails a file it cannot read, and the same process takes the next request', async () => {
    const fake = await fakeDecoder();
    const pool = new SphinxDecoderPool(fake.command);
    await expect(pool.decode('unreadable.wav', MINUTE)).rejects.toThrow(
      /could not read its file: No such file/,
    );
    expect((await pool.decode('a.wav', MINUTE)).output).toContain('hello');
    expect(await fake.starts()).toHaveLength(1);
    pool.close();
  });

  it('fails the request of a process that dies, with its exit and last words, and starts another after', async () => {
    const fake = await fakeDecoder();
    const pool = new SphinxDecoderPool(fake.command);
    await expect(pool.decode('crash.wav', MINUTE)).rejects.toThrow(/exited \(code 3\): the model is gone/);
    expect((await pool.decode('a.wav', MINUTE)).output).toContain('hello');
    expect(await fake.starts()).toHaveLength(2);
    pool.close();
  });

  it('kills a process that runs past the time limit, answers timedOut, and starts another after', async () => {
    const fake = await fakeDecoder();
    const pool = new SphinxDecoderPool(fake.command);
    expect(await pool.decode('hang.wav', 200)).toEqual({ timedOut: true });
    const [first] = await fake.starts();
    await sleep(100);
    expect(alive(first ?? 0)).toBe(false);
    expect((await pool.decode('a.wav', MINUTE)).output).toContain('hello');
    expect(await fake.starts()).toHaveLength(2);
    pool.close();
  });

  it('stops a process left idle, giving its memory back', async () => {
    const fake = await fakeDecoder();
    const pool = new SphinxDecoderPool(fake.command, 100);
    await pool.decode('a.wav', MINUTE);
    const [pid] = await fake.starts();
    expect(alive(pid ?? 0)).toBe(true);
    await sleep(400);
    expect(alive(pid ?? 0)).toBe(false);
    await pool.decode('b.wav', MINUTE);
    expect(await fake.starts()).toHaveLength(2);
    pool.close();
  });

  it('says how to build a helper that is missing, and refuses a path that would break the protocol', async () => {
    const pool = new SphinxDecoderPool(join(dir, 'no-such-decoder'));
    await expect(pool.decode('a.wav', MINUTE)).rejects.toThrow(
      /could not be started.*node local\/setup\.mjs/,
    );
    const fake = await fakeDecoder();
    await expect(new SphinxDecoderPool(fake.command).decode('a.wav\nb.wav', MINUTE)).rejects.toThrow(
      /line break/,
    );
    expect(await fake.starts()).toHaveLength(0);
  });
});
