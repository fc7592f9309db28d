import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseJobOptions } from '#core/options';
import { LocalTranscriber } from '#speech/local-transcriber';
import { runProcess } from '#speech/process';
import { SphinxRecognizer } from '#speech/sphinx';

const mode = process.argv[2];
const dir = '/tmp/chunkcost';
const t = new LocalTranscriber(new SphinxRecognizer());
const options = parseJobOptions({ punctuate: 'false' });
const stored: string[][] = [];
const plan = await t.plan({
  audio: join(dir, 'rec.wav'),
  options,
  workDir: dir,
  storeChunk: async (i, f) => {
    stored[i] = f;
  },
});
const which = process.argv.slice(3).map(Number);
const st = performance.now();
for (const index of which) {
  const f = stored[index]![0]!;
  if (mode === 'raw')
    await runProcess(
      'pocketsphinx_continuous',
      ['-infile', f, '-time', 'yes', '-logfn', '/dev/null'],
      600000,
    );
  else if (mode === 'svc') await t.transcribeChunk({ plan, index, files: [f], options, workDir: dir });
}
console.error(mode, 'wall', ((performance.now() - st) / 1000).toFixed(2));
