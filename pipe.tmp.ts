import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJobOptions } from '#core/options';
import { LocalTranscriber } from '#speech/local-transcriber';
import { runProcess } from '#speech/process';
import { SphinxRecognizer } from '#speech/sphinx';

const minutes = Number(process.argv[2] ?? 6);
const dir = '/tmp/chunkcost';
const samples = '../shared/samples';
const manifest = JSON.parse(readFileSync(join(samples, 'manifest.json'), 'utf8'));
const utt = manifest.filter(
  (e: any) => e.kind === 'utterance' && e.sample_rate === 16000 && e.reference_text,
);
const parts: string[] = [];
let s = 0;
for (let i = 0; s < minutes * 60; i++) {
  const e = utt[i % utt.length];
  parts.push(join(process.cwd(), samples, e.file));
  s += e.duration_s;
}
await writeFile(join(dir, 'list6.txt'), parts.map((p) => `file '${p}'`).join('\n'));
const file = join(dir, `rec${minutes}.wav`);
await runProcess(
  'ffmpeg',
  [
    '-y',
    '-v',
    'error',
    '-f',
    'concat',
    '-safe',
    '0',
    '-i',
    join(dir, 'list6.txt'),
    '-ac',
    '1',
    '-ar',
    '16000',
    file,
  ],
  600000,
);
const t = new LocalTranscriber(new SphinxRecognizer());
const options = parseJobOptions({ punctuate: 'false' });
await t.transcribe({ audioFile: join(dir, 'chunk-0-0.wav'), workDir: dir, options }).catch(() => undefined);
for (let rep = 0; rep < 2; rep++) {
  let st = performance.now();
  await runProcess(
    'pocketsphinx_continuous',
    ['-infile', file, '-time', 'yes', '-logfn', '/dev/null'],
    6000000,
  );
  const direct = (performance.now() - st) / 1000;
  st = performance.now();
  await t.transcribe({ audioFile: file, workDir: dir, options });
  const pipe = (performance.now() - st) / 1000;
  console.log('direct', direct.toFixed(1), 'pipeline', pipe.toFixed(1), 'ratio', (pipe / direct).toFixed(3));
}
