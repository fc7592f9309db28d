import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { awsServices } from '#aws/services';
import { DEFAULT_CHUNK_SECONDS, ENV, MAX_DIRECT_UPLOAD_BYTES } from '#commons/contract';
import { parseJobOptions } from '#core/options';
import { cutAround, LocalTranscriber } from '#speech/local-transcriber';
import { runProcess } from '#speech/process';
import { parseSphinxOutput, SphinxRecognizer } from '#speech/sphinx';
import { detectSpeech } from '#speech/vad';
import { keepVoicedWordsIn } from '#speech/voicing';
import { writeWavSlice } from '#speech/wav';
import { type CpuUse, cpuSnapshot, cpuUse, describeCpuUse } from './cpu-time.ts';
import { percentile, wordErrorRate } from './evaluation/metrics.ts';
import { readLocalSettings } from './settings.ts';

const usage = `Usage: npm run bench -- [--minutes 3,10,15,60] [--scaling 60] [--accuracy 15 (0: skip)] [--rounds 1] [--samples DIR]

Side by side in one run, on recordings of the given lengths built from the sample utterances:
  1. the service (submit to completed, two workers) over pocketsphinx_continuous run directly on the
     same decoded audio in one process; and, as the machine's own limit, pocketsphinx_continuous over
     the two halves of the file side by side, one process on each core;
  2. scaling: the --scaling file with 1 and 2 workers, and N workers simulated from the measured costs;
     one hour on AWS with 100 workers, from the chunk costs of one worker on two cores (the deployed
     worker has about 2.3 vCPUs) at the default chunk length and at 30 s;
  3. word error rates of both against the reference text, and, on the --accuracy file, of the service's
     own pipeline in one process over the file uncut;
  4. each worker's peak resident memory and scratch disk;
  5. status latency over HTTP against the DynamoDB and S3 reads it makes;
  6. submission latency of a presigned 100 MB upload and a 4 MB direct one.
Each worker is a process of its own pinned to one core (taskset), as a Lambda invocation has its own
CPU; the direct PocketSphinx run has one core too. Ratios are what count: the machine is shared, and its
speed moves by minutes. --rounds N repeats the direct runs and the service runs of each length N times in
mirrored order (direct, halves, 2 workers, 1 worker; then the reverse; …), and the ratios are
taken over the sums: a drift that is steady over the rounds then weighs on both sides alike.`;

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '3,10,15,60' },
    scaling: { type: 'string', default: '60' },
    accuracy: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '1' },
    samples: { type: 'string', default: '../shared/samples' },
    help: { type: 'boolean' },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const lengths = values.minutes
  .split(',')
  .map(Number)
  .filter((minutes) => minutes > 0);
const scalingMinutes = Number(values.scaling);
const accuracyMinutes = Number(values.accuracy);
const rounds = Math.max(1, Math.floor(Number(values.rounds)) || 1);
const cores = availableParallelism();

const manifest = z
  .array(
    z.object({
      file: z.string(),
      kind: z.string(),
      sample_rate: z.number().nullish(),
      duration_s: z.number().nullish(),
      reference_text: z.string().nullish(),
    }),
  )
  .parse(JSON.parse(readFileSync(join(resolve(values.samples), 'manifest.json'), 'utf8')));
const utterances = manifest.filter(
  (entry) => entry.kind === 'utterance' && entry.sample_rate === 16_000 && entry.reference_text,
);

interface Recording {
  minutes: number;
  file: string;
  reference: string;
  audioSeconds: number;
}

/** Utterances one after another until the length is reached, as one 16 kHz WAV; its reference text beside it. */
async function buildRecording(minutes: number, workDir: string): Promise<Recording> {
  const parts: typeof utterances = [];
  let seconds = 0;
  for (let index = 0; seconds < minutes * 60; index++) {
    const entry = utterances[index % utterances.length];
    if (!entry) throw new Error('No 16 kHz utterances with reference texts in the samples.');
    parts.push(entry);
    seconds += entry.duration_s ?? 0;
  }
  const list = join(workDir, `list-${minutes}.txt`);
  const quote = (path: string) => `file '${path.replaceAll("'", "'\\''")}'`;
  await writeFile(list, parts.map((entry) => quote(join(resolve(values.samples), entry.file))).join('\n'));
  const file = join(workDir, `recording-${minutes}.wav`);
  const args = ['-v', 'error', '-f', 'concat', '-safe', '0', '-i', list, '-ac', '1', '-ar', '16000', file];
  const { code, stderr } = await runProcess('ffmpeg', args, 600_000);
  if (code !== 0) throw new Error(`ffmpeg: ${stderr}`);
  const reference = parts.map((entry) => entry.reference_text ?? '').join(' ');
  return { minutes, file, reference, audioSeconds: seconds };
}

/** What one worker process did: its messages, and its peaks. */
interface WorkerReport {
  handled: {
    kind: string;
    outcome: string;
    ms: number;
    assemblyMs?: number | undefined;
    transcriptionMs?: number | undefined;
    /** When the bench read the line (its own clock, `performance.now()`): the message's end. */
    endedAt: number;
  }[];
  peakRssBytes: number;
  peakScratchBytes: number;
}

const handledLine = z.object({
  message: z.literal('Message handled'),
  workerMessage: z.object({ kind: z.string() }),
  outcome: z.string(),
  ms: z.number(),
  assemblyMs: z.number().optional(),
  transcriptionMs: z.number().optional(),
});

/** Sizes of the files under `dir` now (a worker's temporary directory). */
async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (!entry.isFile()) continue;
    total += (await stat(join(entry.parentPath, entry.name)).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

async function peakRss(pid: number | undefined): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

/** How each worker process of a run is set up. */
interface WorkerShape {
  /** Cores each worker is pinned to (its own, as long as there are enough). */
  coresEach: number;
  /** `CHUNK_SECONDS` for the run (the service's default when not given). */
  chunkSeconds?: number;
}

const ONE_CORE: WorkerShape = { coresEach: 1 };

/** Worker processes running now: a bench stopped by a signal stops them too, else they would poll on. */
const running = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    for (const child of running) child.kill('SIGTERM');
    process.exit(1);
  });

/** Starts `count` worker processes, each pinned to cores of its own, with their own scratch directory. */
async function startWorkers(count: number, workDir: string, shape: WorkerShape = ONE_CORE) {
  const workers: { child: ChildProcess; report: WorkerReport; scratch: string }[] = [];
  for (let index = 0; index < count; index++) {
    const scratch = join(workDir, `worker-${index}`);
    await mkdir(scratch, { recursive: true });
    const pinned = Array.from({ length: shape.coresEach }, (_, k) => (index * shape.coresEach + k) % cores);
    const child = spawn(
      'taskset',
      ['-c', pinned.join(','), process.execPath, '--import', 'tsx', 'local/worker-process.ts'],
      {
        env: {
          ...process.env,
          TMPDIR: scratch,
          [ENV.logLevel]: 'INFO',
          ...(shape.chunkSeconds ? { [ENV.chunkSeconds]: String(shape.chunkSeconds) } : {}),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    running.add(child);
    child.once('exit', () => running.delete(child));
    const report: WorkerReport = { handled: [], peakRssBytes: 0, peakScratchBytes: 0 };
    const ready = new Promise<void>((done) => {
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        if (line === 'ready') done();
        try {
          const parsed = handledLine.safeParse(JSON.parse(line));
          if (parsed.success)
            report.handled.push({
              kind: parsed.data.workerMessage.kind,
              outcome: parsed.data.outcome,
              ms: parsed.data.ms,
              assemblyMs: parsed.data.assemblyMs,
              transcriptionMs: parsed.data.transcriptionMs,
              endedAt: performance.now(),
            });
        } catch {
          // Not a log line.
        }
      });
    });
    await ready;
    workers.push({ child, report, scratch });
  }
  const sampler = setInterval(async () => {
    for (const worker of workers) {
      worker.report.peakRssBytes = Math.max(worker.report.peakRssBytes, await peakRss(worker.child.pid));
      worker.report.peakScratchBytes = Math.max(
        worker.report.peakScratchBytes,
        await treeBytes(worker.scratch),
      );
    }
  }, 250);
  return {
    pids: workers.map((worker) => worker.child.pid ?? 0),
    /** When a worker said it completed a job (the bench's clock): its line may come just after the status. */
    async completedAt(): Promise<number> {
      for (let attempt = 0; attempt < 100; attempt++) {
        const completed = workers
          .flatMap((worker) => worker.report.handled)
          .find((h) => h.outcome === 'completed');
        if (completed) return completed.endedAt;
        await new Promise((done) => setTimeout(done, 50));
      }
      throw new Error('No worker said it completed the job.');
    },
    async stop(): Promise<WorkerReport[]> {
      clearInterval(sampler);
      for (const worker of workers) {
        worker.report.peakRssBytes = Math.max(worker.report.peakRssBytes, await peakRss(worker.child.pid));
        const exited = new Promise((done) => worker.child.once('exit', done));
        worker.child.kill('SIGTERM');
        await exited;
      }
      return workers.map((worker) => worker.report);
    },
  };
}

interface Service {
  url: string;
  apiKey: string;
  stop(): Promise<void>;
}

const statusRecord = z.object({
  id: z.string(),
  status: z.string(),
  error: z.object({ code: z.string() }).optional(),
  results: z.object({ results: z.object({ transcript: z.string() }) }).optional(),
});

function address(service: Service, path: string, query: Record<string, string> = {}): string {
  return `${service.url}${path}?${new URLSearchParams({ 'x-api-key': service.apiKey, ...query })}`;
}

/** Submits a file as a client would: directly when the gateway takes it, else through a presigned upload. */
async function submit(service: Service, file: string): Promise<string> {
  const bytes = (await stat(file)).size;
  const form = new FormData();
  form.append('punctuate', 'false');
  if (bytes <= MAX_DIRECT_UPLOAD_BYTES - 64 * 1024) {
    form.append('audio', new Blob([new Uint8Array(await readFile(file))]), 'recording.wav');
  } else {
    const ticketResponse = await fetch(address(service, '/v1-beta/upload'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ size: bytes, content_type: 'audio/wav' }),
    });
    const ticket = z
      .object({ audio_ref: z.string(), upload_url: z.string(), headers: z.record(z.string(), z.string()) })
      .parse(await ticketResponse.json());
    // The file in memory: this is the client's side, not the service's.
    const put = await fetch(ticket.upload_url, {
      method: 'PUT',
      headers: ticket.headers,
      body: new Uint8Array(await readFile(file)),
    });
    if (!put.ok) throw new Error(`Upload refused: ${put.status} ${await put.text()}`);
    form.append('audio_ref', ticket.audio_ref);
  }
  const response = await fetch(address(service, '/v1-beta/transcript'), { method: 'POST', body: form });
  if (!response.ok) throw new Error(`Submission refused: ${response.status} ${await response.text()}`);
  return statusRecord.parse(await response.json()).id;
}

const statusLatencies: number[] = [];

/**
 * Polls the status route until the job ends, every second (the first pause of the project's client);
 * answers the transcript. The polls are served on the workers' cores, so a bench that polled much faster
 * would slow the run it times; when the job ended is taken from the worker's own log line instead.
 */
async function waitForJob(service: Service, id: string): Promise<string> {
  for (;;) {
    const started = performance.now();
    const response = await fetch(address(service, '/v1-beta/transcript/status', { id }));
    statusLatencies.push(performance.now() - started);
    const record = statusRecord.parse(await response.json());
    if (record.status === 'error') throw new Error(`Job ${id} failed: ${record.error?.code}`);
    if (record.status === 'completed') return record.results?.results.transcript ?? '';
    await new Promise((done) => setTimeout(done, 1000));
  }
}

interface ServiceRun {
  seconds: number;
  wer: number;
  workers: WorkerReport[];
  /** The bench's clock at submission and when the worker that completed the job said so. */
  startedAt: number;
  endedAt: number;
  cpu: CpuUse;
}

/**
 * Where a run's wall time went, from the workers' own timings: how long each worker was busy with
 * messages, and how long it waited before its first one (submission, the cut, the queue), between them
 * (the queue) and after its last (for the other workers' last chunks, and the poll that saw the job done).
 */
function idleTimes(run: ServiceRun): string {
  return run.workers
    .map((worker, index) => {
      const spans = worker.handled.map((h) => ({ start: h.endedAt - h.ms, end: h.endedAt }));
      if (spans.length === 0) return `worker ${index + 1} handled no message`;
      const busy = spans.reduce((sum, span) => sum + span.end - span.start, 0);
      const first = Math.min(...spans.map((span) => span.start));
      const last = Math.max(...spans.map((span) => span.end));
      const between = last - first - busy;
      const seconds = (ms: number) => `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
      return (
        `worker ${index + 1} busy ${seconds(busy)} (${worker.handled.length} messages), waiting ${seconds(first - run.startedAt)} before its first, ` +
        `${seconds(between)} between, ${seconds(run.endedAt - last)} after its last`
      );
    })
    .join('; ');
}

async function runService(
  service: Service,
  recording: Recording,
  workers: number,
  workDir: string,
  shape: WorkerShape = ONE_CORE,
): Promise<ServiceRun> {
  const pool = await startWorkers(workers, workDir, shape);
  try {
    const before = await cpuSnapshot();
    const startedAt = performance.now();
    const id = await submit(service, recording.file);
    const transcript = await waitForJob(service, id);
    const endedAt = await pool.completedAt();
    const cpu = cpuUse(before, await cpuSnapshot(), pool.pids);
    return {
      seconds: (endedAt - startedAt) / 1000,
      wer: wordErrorRate(recording.reference, transcript),
      workers: await pool.stop(),
      startedAt,
      endedAt,
      cpu,
    };
  } catch (error) {
    await pool.stop();
    throw error;
  }
}

/**
 * What a run's messages cost, as its workers timed them: the cut, each chunk (in the order they were
 * handled, which with one worker is the order they were cut and queued), and the assembly (seconds).
 * The assembly is done by the last chunk's worker, or by a start message when every chunk was done
 * before the cut ended.
 */
function messageCosts(run: ServiceRun): { cut: number; chunks: number[]; assembly: number } {
  const handled = run.workers.flatMap((worker) => worker.handled).sort((a, b) => a.endedAt - b.endedAt);
  const cut = handled.filter((h) => h.outcome === 'fanned-out').reduce((sum, h) => sum + h.ms, 0) / 1000;
  const last = handled.find((h) => h.outcome === 'completed');
  // The last chunk's worker logs its chunk and the assembly apart.
  const assembly = ((last?.kind === 'chunk' ? last.assemblyMs : last?.ms) ?? 0) / 1000;
  const chunks = handled
    .filter((h) => h.kind === 'chunk' && (h.outcome === 'chunk-done' || h.outcome === 'completed'))
    .map((h) => (h.ms - (h.outcome === 'completed' ? (h.assemblyMs ?? 0) : 0)) / 1000);
  return { cut, chunks, assembly };
}

/**
 * PocketSphinx alone, with the service's settings, over `files` side by side, each in one process on a core
 * of its own: the whole recording, as one worker has it; or its two halves, what two cores can do at best
 * on this machine, with no service at all.
 */
async function runDirect(
  recording: Recording,
  files = [recording.file],
): Promise<{ seconds: number; wer: number; cpu: CpuUse }> {
  const before = await cpuSnapshot();
  const started = performance.now();
  const outputs = await Promise.all(
    files.map(async (file, core) => {
      const args = ['-infile', file, '-time', 'yes', '-logfn', '/dev/null'];
      const { code, stdout } = await runProcess(
        'taskset',
        ['-c', String(core % cores), 'pocketsphinx_continuous', ...args],
        4 * 3_600_000,
      );
      if (code !== 0) throw new Error(`pocketsphinx_continuous exited with code ${code}.`);
      return stdout;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuUse(before, await cpuSnapshot(), []);
  const transcript = outputs
    .flatMap((stdout) => parseSphinxOutput(stdout).map((word) => word.text))
    .join(' ');
  return { seconds, wer: wordErrorRate(recording.reference, transcript), cpu };
}

type DirectRun = Awaited<ReturnType<typeof runDirect>>;

/**
 * The runs on one recording: PocketSphinx directly, over the two halves side by side, the service with two
 * workers and (when asked) with one.
 */
interface LengthRuns {
  direct: DirectRun[];
  halves: DirectRun[];
  two: ServiceRun[];
  one: ServiceRun[];
}

/**
 * Each run of a recording `rounds` times, in mirrored order (direct, halves, two workers, one worker;
 * then the reverse; …): a drift of the machine's speed that is steady over the rounds weighs on every kind of run
 * alike, so the ratios of their sums are free of it.
 */
async function measureRecording(
  service: Service,
  recording: Recording,
  withOneWorker: boolean,
  workDir: string,
): Promise<LengthRuns> {
  const runs: LengthRuns = { direct: [], halves: [], two: [], one: [] };
  const middleMs = (recording.audioSeconds * 1000) / 2;
  const halves = [join(workDir, 'first-half.wav'), join(workDir, 'second-half.wav')];
  await writeWavSlice(recording.file, 0, middleMs, halves[0] as string);
  await writeWavSlice(recording.file, middleMs, recording.audioSeconds * 1000, halves[1] as string);
  const steps = [
    async () => runs.direct.push(await runDirect(recording)),
    async () => runs.halves.push(await runDirect(recording, halves)),
    async () => runs.two.push(await runService(service, recording, 2, workDir)),
    ...(withOneWorker ? [async () => runs.one.push(await runService(service, recording, 1, workDir))] : []),
  ];
  for (let round = 0; round < rounds; round++)
    for (const step of round % 2 === 0 ? steps : [...steps].reverse()) await step();
  return runs;
}

const totalSeconds = (runs: { seconds: number }[]) => runs.reduce((sum, run) => sum + run.seconds, 0);
const listSeconds = (runs: { seconds: number }[]) =>
  `${runs.map((run) => run.seconds.toFixed(1)).join(' + ')} s`;

/** List scheduling in the order chunks are cut and queued: when the last of `costs` ends on `workers` workers. */
function makespan(costs: number[], workers: number): number {
  const loads = new Array<number>(workers).fill(0);
  for (const cost of costs) {
    const least = loads.indexOf(Math.min(...loads));
    loads[least] = (loads[least] ?? 0) + cost;
  }
  return Math.max(...loads);
}

/**
 * Published figures for Lambda reading an SQS queue (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html):
 * in standard mode it starts with five concurrent invocations and adds up to 300 a minute; provisioned
 * mode scales three times faster (1,000 a minute). A new execution environment starts in "under 100 ms to
 * over 1 second" (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html); the
 * worker is a container image, so 2 s is assumed.
 */
const AWS_WORKERS = 100;
const SQS_INITIAL_INVOCATIONS = 5;
const SQS_STANDARD_PER_SECOND = 300 / 60;
const SQS_PROVISIONED_PER_SECOND = 1000 / 60;
const COLD_START_SECONDS = 2;

/**
 * When one hour of audio would be done on AWS: a cold start for the start message, then the cut
 * (measured, scaled to the hour), which queues chunk k once it has passed it (the cut's time spread
 * evenly over the chunks); chunk k starts when it is queued, the poller has scaled to k invocations
 * (counted from the first chunk's message) and a new execution environment is up, and takes a measured
 * chunk's time; the job is assembled once the last chunk is done and the cut has ended. One worker per
 * chunk, as long as there are no more chunks than workers (else chunks wait for a free worker).
 */
function awsEstimate(
  cutSeconds: number,
  chunkCosts: number[],
  assemblySeconds: number,
  scale: number,
): { standard: number; provisioned: number } {
  const count = Math.round(chunkCosts.length * scale);
  const costs = Array.from({ length: count }, (_, k) => chunkCosts[k % chunkCosts.length] ?? 0);
  const cut = cutSeconds * scale;
  const queuedAt = (k: number) => COLD_START_SECONDS + (cut * (k + 1)) / count;
  const finish = (perSecond: number) => {
    const free = new Array<number>(AWS_WORKERS).fill(0);
    let last = 0;
    costs.forEach((cost, k) => {
      const scaled = k < SQS_INITIAL_INVOCATIONS ? 0 : (k + 1 - SQS_INITIAL_INVOCATIONS) / perSecond;
      const polled = Math.max(queuedAt(k), queuedAt(0) + scaled);
      const worker = free.indexOf(Math.min(...free));
      const start = Math.max(polled + COLD_START_SECONDS, free[worker] ?? 0);
      free[worker] = start + cost;
      last = Math.max(last, start + cost);
    });
    return Math.max(COLD_START_SECONDS + cut, last) + assemblySeconds;
  };
  return { standard: finish(SQS_STANDARD_PER_SECOND), provisioned: finish(SQS_PROVISIONED_PER_SECOND) };
}

/**
 * What a chunk's own steps cost over the recognition itself, on a slice of the recording as long as
 * the mean chunk: voice activity, the speech gate around the slice's words (the bench's jobs ask for no
 * diarization, which would need the whole voicing track instead), and what a kept decoder spends on a
 * piece besides its words (the cepstral-mean pass and the decode of a 100 ms file; the model's start-up
 * is paid once per worker).
 */
async function chunkStepCosts(file: string, seconds: number, workDir: string) {
  const slice = join(workDir, 'slice.wav');
  const tiny = join(workDir, 'tiny.wav');
  await writeWavSlice(file, 0, seconds * 1000, slice);
  await writeWavSlice(file, 0, 100, tiny);
  const median = async (step: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      await step();
      times.push((performance.now() - started) / 1000);
    }
    return percentile(times, 50);
  };
  const recognizer = new SphinxRecognizer();
  // A chunk is recognised in pieces of at most maxPieceMs, each a request to a kept decoder.
  const pieces = Math.ceil((seconds * 1000) / recognizer.maxPieceMs);
  await recognizer.recognize(tiny);
  const words = await recognizer.recognize(slice);
  return [
    { name: 'voice activity', seconds: await median(() => detectSpeech(slice)) },
    {
      name: `speech gate (${words.length} words)`,
      seconds: await median(() => keepVoicedWordsIn(slice, words)),
    },
    {
      name: `decoder request × ${pieces} pieces`,
      seconds: pieces * (await median(() => recognizer.recognize(tiny))),
    },
  ];
}

/** Item 3: the service's own pipeline in one process over the file uncut, against the fanned-out run. */
async function compareUncut(
  recording: Recording,
  measured: Map<number, LengthRuns>,
  service: Service,
  workDir: string,
): Promise<void> {
  console.log(
    `\n3. fan-out against the same pipeline in one process, uncut, on the ${recording.minutes}-minute file`,
  );
  const uncut = await new LocalTranscriber(new SphinxRecognizer(), {
    cut: cutAround(recording.minutes * 60),
  }).transcribe({
    audioFile: recording.file,
    workDir,
    options: parseJobOptions({ punctuate: 'false' }),
  });
  const uncutWer = wordErrorRate(recording.reference, uncut.transcript);
  const fanned =
    measured.get(recording.minutes)?.two[0] ?? (await runService(service, recording, 2, workDir));
  console.log(
    `  WER uncut ${pct(uncutWer)}, fanned out ${pct(fanned.wer)} (${((fanned.wer - uncutWer) * 100).toFixed(1)} points)`,
  );
}

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
/** The highest peak of any worker over the given service runs. */
const peakOf = (runs: ServiceRun[], key: 'peakRssBytes' | 'peakScratchBytes') =>
  mib(Math.max(...runs.flatMap((run) => run.workers.map((worker) => worker[key]))));
const pct = (value: number) => `${(value * 100).toFixed(1)}%`;
const average = (values: number[]) =>
  values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);

async function main(): Promise<void> {
  const workDir = await mkdtemp(join(tmpdir(), 'bench-'));
  process.env[ENV.logLevel] = 'ERROR';
  const { startLocalRuntime } = await import('./runtime.ts');
  const service = await startLocalRuntime(
    { ...readLocalSettings(), port: 0, workerConcurrency: 0 },
    () => undefined,
  );
  try {
    const recordings = new Map<number, Recording>();
    for (const minutes of new Set([...lengths, scalingMinutes, accuracyMinutes]))
      if (minutes > 0) recordings.set(minutes, await buildRecording(minutes, workDir));

    console.log(`${cores} cores; each worker and the direct run on one core\n`);
    console.log('1, 3, 4. service (2 workers) against PocketSphinx run directly on the same audio');
    if (rounds > 1) console.log(`  ${rounds} rounds in mirrored order each; ratios over the sums`);
    const measured = new Map<number, LengthRuns>();
    for (const minutes of lengths) {
      const recording = recordings.get(minutes) as Recording;
      const runs = await measureRecording(service, recording, minutes === scalingMinutes, workDir);
      measured.set(minutes, runs);
      const [direct, served] = [runs.direct[0] as DirectRun, runs.two[0] as ServiceRun];
      const chunks = served.workers
        .flatMap((worker) => worker.handled)
        .filter((h) => h.kind === 'chunk').length;
      console.log(
        `  ${String(minutes).padStart(3)} min: direct ${listSeconds(runs.direct)}, service ${listSeconds(runs.two)} ` +
          `= ${(totalSeconds(runs.two) / totalSeconds(runs.direct)).toFixed(2)}× (${chunks} chunks); ` +
          `WER direct ${pct(direct.wer)}, service ${pct(served.wer)} (${((served.wer - direct.wer) * 100).toFixed(1)} points); ` +
          `worker peak RSS ${peakOf(runs.two, 'peakRssBytes')}, scratch ${peakOf(runs.two, 'peakScratchBytes')}`,
      );
      const halves = totalSeconds(runs.halves) / totalSeconds(runs.direct);
      console.log(
        `        PocketSphinx over the two halves side by side, one core each (two cores at best, no service): ` +
          `${listSeconds(runs.halves)} = ${halves.toFixed(2)}× the direct run, WER ${pct((runs.halves[0] as DirectRun).wer)}; ` +
          `the service ${(totalSeconds(runs.two) / totalSeconds(runs.halves)).toFixed(2)}× the halves`,
      );
      for (const run of runs.direct) console.log(`        direct run ${describeCpuUse(run.cpu)}`);
      for (const run of runs.halves) console.log(`        halves ${describeCpuUse(run.cpu)}`);
      for (const run of runs.two) {
        console.log(`        service run ${run.seconds.toFixed(1)} s: ${idleTimes(run)}`);
        console.log(`          ${describeCpuUse(run.cpu, 'workers and their decoders')}`);
      }
    }

    console.log(`\n2. scaling on the ${scalingMinutes}-minute file`);
    const recording = recordings.get(scalingMinutes) as Recording;
    const scaling =
      measured.get(scalingMinutes) ?? (await measureRecording(service, recording, true, workDir));
    const one = scaling.one[0] as ServiceRun;
    console.log(`  1 worker ${listSeconds(scaling.one)}; 2 workers ${listSeconds(scaling.two)}`);
    for (const run of scaling.one) {
      console.log(`  1 worker, ${run.seconds.toFixed(1)} s: ${idleTimes(run)}`);
      console.log(`    ${describeCpuUse(run.cpu, 'the worker and its decoders')}`);
    }
    const speedUp = totalSeconds(scaling.one) / totalSeconds(scaling.two);
    const machine = totalSeconds(scaling.direct) / totalSeconds(scaling.halves);
    console.log(
      `  speed-up ${speedUp.toFixed(2)}×, efficiency ${pct(speedUp / 2)}; ` +
        `the machine's own, PocketSphinx over the halves side by side against the whole file: ${machine.toFixed(2)}× (${pct(machine / 2)})`,
    );
    const handled = one.workers.flatMap((worker) => worker.handled);
    const { cut: plan, chunks: allChunks, assembly } = messageCosts(one);
    const meanChunk = average(allChunks);
    const chunkAudioSeconds = recording.audioSeconds / allChunks.length;
    // Over all rounds: the one-worker runs against the direct runs, per chunk.
    const directSeconds = totalSeconds(scaling.direct) / scaling.direct.length;
    const overhead = (totalSeconds(scaling.one) / scaling.one.length - directSeconds) / allChunks.length;
    // Timed in the worker itself, so free of the machine's drift between runs: a chunk message's time
    // outside the transcriber (claim, download, result, job record) and the assembly.
    const chunkMessages = handled.filter((h) => h.kind === 'chunk' && h.transcriptionMs !== undefined);
    const outsideTranscriber =
      chunkMessages.reduce((sum, h) => sum + h.ms - (h.assemblyMs ?? 0) - (h.transcriptionMs ?? 0), 0) /
      Math.max(1, chunkMessages.length) /
      1000;
    console.log(
      `  measured with 1 worker: cutting ${plan.toFixed(1)} s, ${allChunks.length} chunks of ${chunkAudioSeconds.toFixed(1)} s of audio taking ${meanChunk.toFixed(1)} s on average ` +
        `(longest ${Math.max(...allChunks).toFixed(1)} s), assembly ${assembly.toFixed(1)} s; ` +
        `overhead over the direct run (${directSeconds.toFixed(1)} s): ${overhead.toFixed(2)} s per chunk, ` +
        `of which ${outsideTranscriber.toFixed(2)} s outside the transcriber (claim, download, result, job record; timed in the worker)`,
    );
    // The steps are timed on a slice as long as the mean chunk's audio.
    const steps = await chunkStepCosts(recording.file, chunkAudioSeconds, workDir);
    const named = steps.reduce((sum, step) => sum + step.seconds, 0);
    console.log(
      `  a chunk's steps, timed on a ${chunkAudioSeconds.toFixed(1)} s slice of audio (median of 3): ` +
        `${steps.map((step) => `${step.name} ${step.seconds.toFixed(2)} s`).join(', ')}; ` +
        `the rest (the decode against the direct run's, and the machine's drift between the two runs) ${(overhead - named - outsideTranscriber).toFixed(2)} s`,
    );
    for (const workers of [2, 4, 8, 16, 100]) {
      const simulated = plan + makespan(allChunks, workers) + assembly;
      console.log(
        `  simulated ${String(workers).padStart(3)} workers: ${simulated.toFixed(1)} s, speed-up ${(one.seconds / simulated).toFixed(2)}×`,
      );
    }
    // One hour on AWS, from chunk costs measured with one worker the size of the deployed one (4,096 MB,
    // about 2.3 vCPUs: here this machine's cores, at most two), at the default chunk length and at 30 s.
    const toHour = (60 * 60) / recording.audioSeconds;
    const lambdaCores = Math.min(cores, 2);
    console.log(
      `  on AWS, one hour of audio, ${AWS_WORKERS} workers, chunk costs measured with one worker on ${lambdaCores} cores and scaled to the hour (README, *Long audio*):`,
    );
    for (const chunkSeconds of [DEFAULT_CHUNK_SECONDS, 30]) {
      const sized = messageCosts(
        await runService(service, recording, 1, workDir, { coresEach: lambdaCores, chunkSeconds }),
      );
      const mean = average(sized.chunks);
      const onAws = awsEstimate(sized.cut, sized.chunks, sized.assembly, toHour);
      console.log(
        `    CHUNK_SECONDS=${chunkSeconds}: cutting ${sized.cut.toFixed(1)} s, ${sized.chunks.length} chunks taking ${mean.toFixed(1)} s on average ` +
          `(longest ${Math.max(...sized.chunks).toFixed(1)} s); ${onAws.standard.toFixed(1)} s with SQS polling in standard mode, ` +
          `${onAws.provisioned.toFixed(1)} s in provisioned mode`,
      );
    }
    const accuracyFile = recordings.get(accuracyMinutes);
    if (accuracyFile) await compareUncut(accuracyFile, measured, service, workDir);

    const rss = [...measured.entries()].map(
      ([minutes, runs]) => `${minutes} min ${peakOf(runs.two, 'peakRssBytes')}`,
    );
    console.log(`\n4. worker peak RSS by length: ${rss.join(', ')}`);

    console.log('\n5. status latency, 200 requests each, on a completed job');
    // A short job of its own: the recordings above take minutes each.
    const id = await submit(service, (await buildRecording(1, workDir)).file);
    const pool = await startWorkers(2, workDir);
    await waitForJob(service, id);
    await pool.stop();
    const http: number[] = [];
    const direct5: number[] = [];
    const { jobs, media } = awsServices();
    for (let index = 0; index < 200; index++) {
      let started = performance.now();
      await (await fetch(address(service, '/v1-beta/transcript/status', { id }))).arrayBuffer();
      http.push(performance.now() - started);
      started = performance.now();
      const job = await jobs.get(id);
      await media.getResult(job?.resultKey ?? '');
      direct5.push(performance.now() - started);
    }
    const ms = (samples: number[], p: number) => `${percentile(samples, p).toFixed(1)} ms`;
    console.log(
      `  HTTP status p50 ${ms(http, 50)} p99 ${ms(http, 99)}; DynamoDB GetItem + S3 GetObject p50 ${ms(direct5, 50)} p99 ${ms(direct5, 99)}`,
    );
    console.log(
      `  ratio p50 ${(percentile(http, 50) / percentile(direct5, 50)).toFixed(2)}×, p99 ${(percentile(http, 99) / percentile(direct5, 99)).toFixed(2)}×`,
    );
    console.log(
      `  while jobs ran: p50 ${ms(statusLatencies, 50)} p99 ${ms(statusLatencies, 99)} over ${statusLatencies.length} polls`,
    );

    console.log('\n6. submission latency (no workers running)');
    const large = join(workDir, 'large.bin');
    const small = join(workDir, 'small.bin');
    await writeFile(large, Buffer.alloc(100 * 2 ** 20, 1));
    await writeFile(small, Buffer.alloc(4 * 10 ** 6, 1));
    for (const [name, file] of [
      ['presigned 100 MiB', large],
      ['direct 4 MB', small],
    ] as const) {
      const started = performance.now();
      await submit(service, file);
      console.log(
        `  ${name}: ${((performance.now() - started) / 1000).toFixed(2)} s from the upload request to the job record`,
      );
    }
  } finally {
    await service.stop();
    await rm(workDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
