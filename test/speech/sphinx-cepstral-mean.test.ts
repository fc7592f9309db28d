import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wordErrors } from '#local/evaluation/metrics';
import { decodeToWav } from '#speech/media';
import { SphinxRecognizer } from '#speech/sphinx';
import { writeWav } from '#speech/wav';
import { samplePath, samplesOfKind } from '../helpers/samples.ts';

let dir: string;
let wavFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sphinx-cmn-'));
  wavFile = join(dir, 'piece.wav');
  await writeWav(wavFile, new Int16Array(16_000), 16_000);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/**
 * A stand-in for pocketsphinx_continuous that logs as it does: on the cheap pass (told by `-keyphrase`)
 * the model's feature parameters and the running cepstral mean (`updates`); on the decode, one word,
 * and a copy of the feature parameters it was given.
 */
async function fakeSphinx(
  updates: string[],
  afterLog = 'exit 0',
): Promise<{ command: string; calls: string; seen: string }> {
  const model = join(dir, 'model.params');
  await writeFile(model, '-lowerf 130\n-cmn batch\n-cmninit 41.00,-5.29,-0.12\n-varnorm no\n');
  const calls = join(dir, 'calls.txt');
  const seen = join(dir, 'seen.params');
  await rm(calls, { force: true });
  await rm(seen, { force: true });
  const command = join(dir, 'fake-sphinx');
  const log = [
    `INFO: pocketsphinx.c(151): Parsed model-specific feature parameters from ${model}`,
    ...updates,
  ]
    .map((line) => `echo '${line}' >&2`)
    .join('\n');
  await writeFile(
    command,
    `#!/bin/sh
echo "$*" >> '${calls}'
case " $* " in *" -keyphrase "*) ${log.replaceAll('\n', '; ')}; ${afterLog} ;; esac
while [ $# -gt 0 ]; do [ "$1" = -featparams ] && cp "$2" '${seen}'; shift; done
echo 'hello 0.100 0.400 0.900'
`,
  );
  await chmod(command, 0o755);
  return { command, calls, seen };
}

describe('PocketSphinx decodes from the cepstral mean of the audio it is given', () => {
  it("writes the model's feature parameters with the first logged mean as the start, and removes them and its dictionary after", async () => {
    const fake = await fakeSphinx([
      'INFO: cmn_live.c(105): Update to   < 57.44  8.12 -2.51 >',
      'INFO: cmn_live.c(138): Update to   < 58.50  3.50  5.09 >',
    ]);
    const words = await new SphinxRecognizer({ command: fake.command }).recognize(wavFile);
    expect(words.map((word) => word.text)).toEqual(['hello']);
    const calls = (await readFile(fake.calls, 'utf8')).trim().split('\n');
    expect(calls).toHaveLength(2);
    expect(calls[0]).toContain('-keyphrase');
    expect(calls[1]).toContain('-featparams');
    expect(await readFile(fake.seen, 'utf8')).toBe(
      '-lowerf 130\n-cmn batch\n-varnorm no\n-cmninit 57.44,8.12,-2.51\n',
    );
    expect((await readdir(dir)).filter((name) => /\.(feat\.params|dict)$/.test(name))).toEqual([]);
  });

  it('stops the pass at the first logged mean, which is all it is run for', async () => {
    // Had the pass been left to run, it would have logged "late" before ending.
    const fake = await fakeSphinx(
      ['INFO: cmn_live.c(105): Update to   < 57.44  8.12 -2.51 >'],
      `sleep 1; echo late >> '${join(dir, 'calls.txt')}'; exit 0`,
    );
    const words = await new SphinxRecognizer({ command: fake.command }).recognize(wavFile);
    expect(words.map((word) => word.text)).toEqual(['hello']);
    const calls = (await readFile(fake.calls, 'utf8')).trim().split('\n');
    expect(calls).toHaveLength(2);
    expect(calls).not.toContain('late');
    expect(await readFile(fake.seen, 'utf8')).toContain('-cmninit 57.44,8.12,-2.51');
  });

  it("keeps the model's own start when the pass heard no speech, or logged something else", async () => {
    for (const updates of [[], ['INFO: cmn_live.c(138): Update to   < 57.44  nan  1 >']]) {
      const fake = await fakeSphinx(updates);
      await new SphinxRecognizer({ command: fake.command }).recognize(wavFile);
      const calls = (await readFile(fake.calls, 'utf8')).trim().split('\n');
      expect(calls[1]).not.toContain('-featparams');
    }
  });

  it('is PocketSphinx as it comes, one pass, when asked for the yardstick', async () => {
    const fake = await fakeSphinx(['INFO: cmn_live.c(138): Update to   < 57.44  8.12 -2.51 >']);
    await new SphinxRecognizer({ command: fake.command, estimateCepstralMean: false }).recognize(wavFile);
    expect((await readFile(fake.calls, 'utf8')).trim().split('\n')).toHaveLength(1);
  });

  it('makes fewer word errors than PocketSphinx as it comes on short recordings', async () => {
    // Every fourth utterance of the samples: short files, decoded wholly before the mean converges.
    const utterances = samplesOfKind('utterance')
      .filter((sample) => sample.reference_text)
      .filter((_, index) => index % 4 === 0);
    expect(utterances.length).toBeGreaterThan(5);
    const totals = { estimated: 0, raw: 0, words: 0 };
    for (const [index, entry] of utterances.entries()) {
      const workDir = join(dir, `utterance-${index}`);
      await mkdir(workDir);
      const [wav] = await decodeToWav(samplePath(entry), workDir);
      const reference = entry.reference_text ?? '';
      const score = async (recognizer: SphinxRecognizer) =>
        wordErrors(reference, (await recognizer.recognize(wav ?? '')).map((word) => word.text).join(' '));
      const estimated = await score(new SphinxRecognizer());
      const raw = await score(new SphinxRecognizer({ estimateCepstralMean: false }));
      totals.estimated += estimated.errors;
      totals.raw += raw.errors;
      totals.words += raw.referenceWords;
    }
    // Measured over all the utterances (npm run eval): 49.4% of words wrong as it comes, 28.4% in the service.
    expect(totals.estimated).toBeLessThan(0.8 * totals.raw);
  });
});
