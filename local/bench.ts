import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseJobOptions } from '#core/options';
import { LocalTranscriber } from '#speech/local-transcriber';
import { SphinxRecognizer } from '#speech/sphinx';
import { wordErrorRate } from './evaluation/metrics.ts';

/**
 * `npm run bench`: the local engine on a long recording made of the sample utterances, decoded in one
 * process and as silence-split chunks in parallel, side by side in one run (the machine is shared, so
 * the ratio is what counts). Prints real-time factors, the speed-up, word error rates and peak memory.
 */
const { values } = parseArgs({
  options: {
    samples: { type: 'string', default: '../shared/samples' },
    repeat: { type: 'string', default: '1' },
  },
});
const directory = resolve(values.samples ?? '');
const manifest: { file: string; kind: string; sample_rate?: number; reference_text?: string }[] = JSON.parse(
  readFileSync(join(directory, 'manifest.json'), 'utf8'),
);
const utterances = manifest.filter((entry) => entry.kind === 'utterance' && entry.sample_rate === 16_000);
const workDir = await mkdtemp(join(tmpdir(), 'bench-'));
try {
  const repeat = Math.max(1, Number(values.repeat));
  const parts = Array.from({ length: repeat }, () => utterances).flat();
  const list = join(workDir, 'list.txt');
  await writeFile(
    list,
    parts.map((entry) => `file '${join(directory, entry.file).replaceAll("'", "'\\''")}'`).join('\n'),
  );
  const long = join(workDir, 'long.wav');
  execFileSync('ffmpeg', ['-v', 'error', '-f', 'concat', '-safe', '0', '-i', list, '-c', 'copy', long]);
  const reference = parts.map((entry) => entry.reference_text ?? '').join(' ');

  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 100);
  const run = async (name: string, transcriber: LocalTranscriber) => {
    const started = Date.now();
    const result = await transcriber.transcribe({ audioFile: long, workDir, options: parseJobOptions({}) });
    const seconds = (Date.now() - started) / 1000;
    const rtf = seconds / (result.audio_duration_ms / 1000);
    const wer = wordErrorRate(reference, result.transcript);
    console.log(
      `${name.padEnd(34)} ${seconds.toFixed(1).padStart(6)} s   RTF ${rtf.toFixed(3)}   WER ${(wer * 100).toFixed(1)}%`,
    );
    return { seconds, audioSeconds: result.audio_duration_ms / 1000 };
  };
  const cores = availableParallelism();
  const single = await run(
    'one process',
    new LocalTranscriber(new SphinxRecognizer(), { parallelism: 1, chunkAboveMs: Number.POSITIVE_INFINITY }),
  );
  const chunked = await run(
    `silence-split chunks, ${cores} at once`,
    new LocalTranscriber(new SphinxRecognizer()),
  );
  clearInterval(sampler);
  console.log(`audio ${single.audioSeconds.toFixed(1)} s of ${parts.length} utterances`);
  console.log(`speed-up of chunked decoding: ${(single.seconds / chunked.seconds).toFixed(2)}×`);
  console.log(`peak resident memory of the service process: ${Math.round(peakRss / 2 ** 20)} MiB`);
} finally {
  await rm(workDir, { recursive: true, force: true });
}
