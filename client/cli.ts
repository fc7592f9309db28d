import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SingleBar } from 'cli-progress';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import ora from 'ora';
import {
  ApiError,
  type ExportFormat,
  type JobOptions,
  type StatusRecord,
  TranscriptionClient,
  type UploadProgress,
  WaitTimeout,
} from './index.ts';

/**
 * `npm run cli -- COMMAND`: the transcription API from a shell, on the typed client. Results go to
 * stdout (or --out), progress and status lines to stderr: a bar and a live line on a terminal, plain
 * lines otherwise. The exit code tells a script what happened (EXIT_CODES, and the README).
 */

/** The environment variables the CLI reads when no flag is given. */
export const CLI_ENV = { baseUrl: 'TRANSCRIPTION_API_URL', apiKey: 'TRANSCRIPTION_API_KEY' } as const;

export const EXIT_CODES = {
  ok: 0,
  /** A failure of the CLI itself: a bug. */
  unexpected: 1,
  /** Bad arguments, a missing base URL or key, a file that cannot be read. */
  usage: 2,
  /** The job ended in `error` (transcribe --wait). */
  jobFailed: 3,
  /** The API refused the request (400, 409, 413, 415, …). */
  refused: 4,
  /** The API key is missing or not valid (401, 403). */
  unauthorized: 5,
  /** No such job for this key (404). */
  notFound: 6,
  /** The service could not be reached, or kept failing or throttling after the client's retries. */
  unavailable: 7,
  /** --timeout ran out before the job ended; it goes on. */
  timedOut: 8,
  /** Interrupted (Ctrl-C). */
  interrupted: 130,
} as const;

type ResultFormat = ExportFormat | 'json';
const FORMATS: ResultFormat[] = ['json', 'txt', 'srt', 'vtt'];

class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

const stderr = process.stderr;
const interactive = Boolean(stderr.isTTY);

function clientOf(command: Command): TranscriptionClient {
  const { baseUrl, apiKey } = command.optsWithGlobals<{ baseUrl?: string; apiKey?: string }>();
  if (!baseUrl) {
    throw new CliFailure(`Give the API's base URL with --base-url or ${CLI_ENV.baseUrl}.`, EXIT_CODES.usage);
  }
  if (!apiKey) throw new CliFailure(`Give an API key with --api-key or ${CLI_ENV.apiKey}.`, EXIT_CODES.usage);
  if (!URL.canParse(baseUrl)) throw new CliFailure(`${baseUrl} is not a URL.`, EXIT_CODES.usage);
  return new TranscriptionClient({ baseUrl, apiKey });
}

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('Not a whole number.');
  return Number(value);
}

const formatOption = () =>
  new Option('--format <format>', 'the result: the status record (json) or the transcript as a file').choices(
    FORMATS,
  );

/** Writes a result to --out, or to stdout. */
async function emit(text: string, out: string | undefined): Promise<void> {
  const ended = text.endsWith('\n') ? text : `${text}\n`;
  if (out) await writeFile(out, ended);
  else process.stdout.write(ended);
}

/** The job's result in a format: the status record as JSON, or the export route's file. */
async function resultOf(
  client: TranscriptionClient,
  record: StatusRecord,
  format: ResultFormat,
): Promise<string> {
  return format === 'json' ? JSON.stringify(record, null, 2) : client.export(record.id, format);
}

/** A bar on a terminal; a line at every tenth otherwise. */
function progressReporter(): { update: (progress: UploadProgress) => void; stop: () => void } {
  let bar: SingleBar | undefined;
  let lastTenth = -1;
  const megabytes = (bytes: number) => (bytes / 1_048_576).toFixed(1);
  return {
    update({ via, bytesSent, bytesTotal }) {
      if (interactive) {
        if (!bar) {
          bar = new SingleBar({
            stream: stderr,
            format: `Uploading (${via}) [{bar}] {percentage}% {sentMb}/{totalMb} MB`,
            hideCursor: true,
          });
          bar.start(bytesTotal, 0, { sentMb: '0.0', totalMb: megabytes(bytesTotal) });
        }
        bar.update(bytesSent, { sentMb: megabytes(bytesSent), totalMb: megabytes(bytesTotal) });
        return;
      }
      const tenth = Math.floor((bytesSent / bytesTotal) * 10);
      if (tenth === lastTenth) return;
      lastTenth = tenth;
      stderr.write(`upload ${via}: ${tenth * 10}% (${bytesSent} of ${bytesTotal} bytes)\n`);
    },
    stop() {
      bar?.stop();
    },
  };
}

/** A live line on a terminal; a line per change of status otherwise. */
function statusReporter(id: string): { update: (record: StatusRecord) => void; stop: () => void } {
  const started = Date.now();
  const spinner = interactive ? ora({ stream: stderr, text: `Job ${id}: submitted` }).start() : undefined;
  let last = '';
  return {
    update(record) {
      const seconds = Math.round((Date.now() - started) / 1000);
      if (spinner) {
        spinner.text = `Job ${id}: ${record.status} (${seconds} s)`;
        if (record.status === 'completed') spinner.succeed();
        else if (record.status === 'error') spinner.fail(`Job ${id}: error: ${record.error?.message ?? ''}`);
        return;
      }
      if (record.status === last) return;
      last = record.status;
      const detail = record.status === 'error' ? `: ${record.error?.code} ${record.error?.message}` : '';
      stderr.write(`job ${id}: ${record.status}${detail}\n`);
    },
    stop() {
      if (spinner?.isSpinning) spinner.stop();
    },
  };
}

export function program(): Command {
  const cli = new Command('transcribe')
    .description('The transcription API from a shell.')
    .addOption(new Option('--base-url <url>', "the API's {base_url}").env(CLI_ENV.baseUrl))
    .addOption(new Option('--api-key <key>', 'your API key').env(CLI_ENV.apiKey))
    .showHelpAfterError()
    .exitOverride();

  cli
    .command('transcribe')
    .description('submit a file: in the request up to the direct-upload limit, by presigned upload above it')
    .argument('<file>', 'an audio or video file')
    .option('--dual-channel', 'one speaker per channel of a stereo file')
    .option('--diarize', 'tell speakers apart (speaker_diarization)')
    .option('--tldr', 'add a short summary')
    .option('--notes', 'add short-hand notes')
    .option('--no-punctuate', 'leave the transcript unpunctuated')
    .option('--language <code>', 'the language of the audio')
    .option('--speakers <n>', 'how many speakers to expect (with --diarize)', wholeNumber)
    .option('--webhook-url <url>', 'where to POST a signed webhook when the job ends')
    .option('--custom <text>', 'your own reference, echoed back')
    .option('--retention-days <n>', 'keep the job fewer than 90 days', wholeNumber)
    .option('--wait', 'wait for the job to end, and write its result')
    .addOption(formatOption().default('json'))
    .option('--out <path>', 'write the result to this file instead of stdout')
    .option('--timeout <seconds>', 'with --wait: stop waiting after this long (exit 8)', wholeNumber)
    .action(async (file: string, flags, command: Command) => {
      const client = clientOf(command);
      const options: JobOptions = {
        ...(flags.dualChannel ? { dual_channel: true } : {}),
        ...(flags.diarize ? { speaker_diarization: true } : {}),
        ...(flags.tldr ? { tldr: true } : {}),
        ...(flags.notes ? { short_hand_notes: true } : {}),
        ...(flags.punctuate === false ? { punctuate: false } : {}),
        ...(flags.language ? { language: flags.language } : {}),
        ...(flags.speakers !== undefined ? { speakers_expected: flags.speakers } : {}),
        ...(flags.webhookUrl ? { webhook_url: flags.webhookUrl } : {}),
        ...(flags.custom !== undefined ? { custom: flags.custom } : {}),
        ...(flags.retentionDays !== undefined ? { retention_days: flags.retentionDays } : {}),
      };
      const progress = progressReporter();
      let submitted: Awaited<ReturnType<TranscriptionClient['submitFile']>>;
      try {
        submitted = await client.submitFile(file, { ...options, onProgress: progress.update });
      } finally {
        progress.stop();
      }
      if (!flags.wait) {
        await emit(JSON.stringify(submitted, null, 2), flags.out);
        return;
      }
      const status = statusReporter(submitted.id);
      let record: StatusRecord;
      try {
        record = await client.wait(submitted.id, {
          onStatus: status.update,
          ...(flags.timeout !== undefined ? { timeoutMs: flags.timeout * 1000 } : {}),
        });
      } finally {
        status.stop();
      }
      if (record.status === 'error') {
        await emit(JSON.stringify(record, null, 2), flags.out);
        throw new CliFailure(
          `Job ${record.id} ended in error: ${record.error?.code}: ${record.error?.message}`,
          EXIT_CODES.jobFailed,
        );
      }
      await emit(await resultOf(client, record, flags.format), flags.out);
    });

  cli
    .command('status')
    .description("a job's status record")
    .argument('<id>', 'the job id')
    .action(async (id: string, _flags, command: Command) => {
      await emit(JSON.stringify(await clientOf(command).status(id), null, 2), undefined);
    });

  cli
    .command('list')
    .description('your jobs, newest first: one line each (id, status, submitted, custom), or JSON')
    .addOption(
      new Option('--status <status>', 'only jobs in this status').choices([
        'queued',
        'processing',
        'completed',
        'error',
      ]),
    )
    .option('--search <text>', 'only jobs whose id or custom field contains this')
    .option('--limit <n>', 'jobs per page', wholeNumber)
    .option('--all', 'every page, not only the first')
    .option('--json', 'the page (or every job) as JSON')
    .action(async (flags, command: Command) => {
      const client = clientOf(command);
      const query = {
        ...(flags.status ? { status: flags.status } : {}),
        ...(flags.search ? { q: flags.search } : {}),
        ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
      };
      const jobs = [];
      if (flags.all) for await (const job of client.listAll(query)) jobs.push(job);
      else jobs.push(...(await client.list(query)).jobs);
      if (flags.json) {
        await emit(JSON.stringify(jobs, null, 2), undefined);
        return;
      }
      const lines = jobs.map((job) => [job.id, job.status, job.timestamp_submitted, job.custom].join('\t'));
      process.stdout.write(lines.map((line) => `${line}\n`).join(''));
    });

  cli
    .command('export')
    .description("a completed job's transcript as a file, or its status record as JSON")
    .argument('<id>', 'the job id')
    .addOption(formatOption().default('txt'))
    .option('--out <path>', 'write it to this file instead of stdout')
    .action(async (id: string, flags, command: Command) => {
      const client = clientOf(command);
      const text =
        flags.format === 'json'
          ? JSON.stringify(await client.status(id), null, 2)
          : await client.export(id, flags.format);
      await emit(text, flags.out);
    });

  cli
    .command('delete')
    .description("delete a job: its audio, its result and its record's content")
    .argument('<id>', 'the job id')
    .action(async (id: string, _flags, command: Command) => {
      await emit(JSON.stringify(await clientOf(command).delete(id), null, 2), undefined);
    });

  return cli;
}

/** The exit code and message for whatever ended the command. */
export function failureOf(error: unknown): { exitCode: number; message: string } {
  if (error instanceof CliFailure) return { exitCode: error.exitCode, message: error.message };
  if (error instanceof CommanderError) {
    // Help and version end the program normally; any other is a usage error, already printed.
    const normal = error.exitCode === 0;
    return { exitCode: normal ? EXIT_CODES.ok : EXIT_CODES.usage, message: '' };
  }
  if (error instanceof WaitTimeout) return { exitCode: EXIT_CODES.timedOut, message: error.message };
  if (error instanceof ApiError) {
    const message = `${error.status} ${error.code}: ${error.message}${error.field ? ` (${error.field})` : ''}`;
    if (error.status === 401 || error.status === 403) return { exitCode: EXIT_CODES.unauthorized, message };
    if (error.status === 404) return { exitCode: EXIT_CODES.notFound, message };
    if (error.status === 429 || error.status >= 500) return { exitCode: EXIT_CODES.unavailable, message };
    return { exitCode: EXIT_CODES.refused, message };
  }
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES') {
    return { exitCode: EXIT_CODES.usage, message: (error as Error).message };
  }
  // fetch's own failures: no connection, DNS, TLS.
  if (error instanceof TypeError && error.message === 'fetch failed') {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? '';
    return { exitCode: EXIT_CODES.unavailable, message: `Could not reach the API: ${cause}` };
  }
  return {
    exitCode: EXIT_CODES.unexpected,
    message: error instanceof Error ? (error.stack ?? '') : String(error),
  };
}

async function main(): Promise<void> {
  process.once('SIGINT', () => {
    stderr.write('\nInterrupted; a submitted job goes on.\n');
    process.exit(EXIT_CODES.interrupted);
  });
  try {
    await program().parseAsync(process.argv);
  } catch (error) {
    const { exitCode, message } = failureOf(error);
    if (message) stderr.write(`${message}\n`);
    process.exitCode = exitCode;
  }
}

// Run as a program, not when a test imports it.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
