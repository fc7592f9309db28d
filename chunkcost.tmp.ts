import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseJobOptions } from '#core/options';
import { LocalTranscriber } from '#speech/local-transcriber';
import { runProcess } from '#speech/process';
import { SphinxRecognizer } from '#speech/sphinx';

const samples = resolve('../shared/samples');
const minutes = Number(process.argv[2] ?? 15);
const count = Number(process.argv[3] ?? 4);
const dir = '/tmp/chunkcost';
await mkdir(dir, { recursive: true });
const manifest = JSON.parse(readFileSync(join(samples, 'manifest.json'), 'utf8'));
const utt = manifest.filter(
  (e: any) => e.kind === 'utterance' && e.sample_rate === 16000 && e.reference_text,
);
const parts: string[] = [];
let s = 0;
for (let i = 0; s < minutes * 60; i++) {
  const e = utt[i % utt.length];
  parts.push(join(samples, e.file));
  s += e.duration_s;
}
await writeFile(join(dir, 'list.txt'), parts.map((p) => `file '${p}'`).join('\n'));
const file = join(dir, 'rec.wav');
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
    join(dir, 'list.txt'),
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
const stored: string[][] = [];
const plan = await t.plan({
  audio: file,
  options,
  workDir: dir,
  storeChunk: async (i, f) => {
    stored[i] = f;
  },
});
console.log('chunks', plan.chunks, plan.chunk_durations_ms);
let rawSum = 0,
  svcSum = 0;
await t.transcribeChunk({ plan, index: 0, files: stored[0]!, options, workDir: dir });
for (let rep = 0; rep < 2; rep++)
  for (let index = 0; index < Math.min(count, plan.chunks); index++) {
    const f = stored[index]![0]!;
    let st = performance.now();
    await runProcess(
      'pocketsphinx_continuous',
      ['-infile', f, '-time', 'yes', '-logfn', '/dev/null'],
      600000,
    );
    const raw = (performance.now() - st) / 1000;
    st = performance.now();
    await t.transcribeChunk({ plan, index, files: [f], options, workDir: dir });
    const svc = (performance.now() - st) / 1000;
    rawSum += raw;
    svcSum += svc;
    console.log(
      index,
      (plan.chunk_durations_ms![index]! / 1000).toFixed(1),
      'raw',
      raw.toFixed(2),
      'svc',
      svc.toFixed(2),
      'diff',
      (svc - raw).toFixed(2),
    );
  }
console.log('sum raw', rawSum.toFixed(1), 'svc', svcSum.toFixed(1));
