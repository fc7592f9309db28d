import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The `sphinx-decoder` helper (`sphinx-decoder.c`, built by `node local/setup.mjs` beside this module and by
 * the worker image's build beside `handler.mjs`): PocketSphinx loaded once per process, decoding one WAV file
 * per request as the service's two `pocketsphinx_continuous` runs did (the cepstral-mean pass, then the
 * decode), with the same output. A worker keeps one per piece it recognises at a time, so it pays the
 * model's start-up (about 0.7 s) once, not once per piece.
 */
export const DEFAULT_SPHINX_DECODER = fileURLToPath(new URL('sphinx-decoder', import.meta.url));

/** What one request answers: the decode's output as `pocketsphinx_continuous -time yes` prints it. */
export type DecodeOutcome = { output: string; timedOut: false } | { output?: undefined; timedOut: true };

/** An idle decoder is stopped after this long, giving its memory (about 110 MB) back. */
const DEFAULT_IDLE_MS = 60_000;
/** A request's output beyond this is a broken decoder, not a transcript (an hour of words is about 2 MB). */
const MAX_OUTPUT_CHARS = 32 * 1024 * 1024;
/** The end of stderr kept, for the message when a decoder dies. */
const STDERR_TAIL_CHARS = 4096;
const END = '#end';
const ERROR = '#error ';

interface Request {
  resolve: (outcome: DecodeOutcome) => void;
  reject: (error: Error) => void;
  lines: string[];
  chars: number;
  timer: NodeJS.Timeout;
}

/** One helper process: one request at a time. */
class DecoderProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private request: Request | undefined;
  private partialLine = '';
  private stderrTail = '';
  private idleTimer: NodeJS.Timeout | undefined;
  /** Set once it has exited or been stopped: it takes no more requests. */
  ended = false;

  constructor(
    private readonly command: string,
    private readonly onEnd: (decoder: DecoderProcess) => void,
  ) {
    this.child = spawn(command, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (text: string) => this.read(text));
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (text: string) => {
      this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_CHARS);
    });
    // A write to a decoder that has just died fails here; its exit answers the request.
    this.child.stdin.on('error', () => undefined);
    this.child.on('error', (error) =>
      this.end(
        new Error(`${command} could not be started (${error.message}); node local/setup.mjs builds it.`),
      ),
    );
    this.child.on('close', (code, signal) =>
      this.end(
        new Error(
          `${this.command} exited (${signal ?? `code ${code}`}): ${this.stderrTail.trim().split('\n').slice(-3).join(' / ')}`,
        ),
      ),
    );
  }

  decode(wavFile: string, timeoutMs: number): Promise<DecodeOutcome> {
    clearTimeout(this.idleTimer);
    this.hold(true);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.finish({ timedOut: true });
        this.stop();
      }, timeoutMs);
      this.request = { resolve, reject, lines: [], chars: 0, timer };
      this.child.stdin.write(`${wavFile}\n`);
    });
  }

  /** Idle from now on: stopped after `idleMs` unless given work, and never what keeps Node running. */
  idle(idleMs: number): void {
    this.hold(false);
    this.idleTimer = setTimeout(() => this.stop(), idleMs);
    this.idleTimer.unref();
  }

  stop(): void {
    this.ended = true;
    this.child.kill('SIGKILL');
  }

  private read(text: string): void {
    const lines = (this.partialLine + text).split('\n');
    this.partialLine = lines.pop() ?? '';
    const request = this.request;
    if (!request) return;
    for (const line of lines) {
      if (line === END) {
        this.finish({ output: request.lines.join('\n'), timedOut: false });
        return;
      }
      if (line.startsWith(ERROR)) {
        this.finish(new Error(`${this.command} could not read its file: ${line.slice(ERROR.length)}`));
        return;
      }
      request.lines.push(line);
      request.chars += line.length + 1;
      if (request.chars > MAX_OUTPUT_CHARS) {
        this.finish(new Error(`${this.command} printed more than ${MAX_OUTPUT_CHARS} characters.`));
        this.stop();
        return;
      }
    }
  }

  private finish(outcome: DecodeOutcome | Error): void {
    const request = this.request;
    if (!request) return;
    this.request = undefined;
    clearTimeout(request.timer);
    if (outcome instanceof Error) request.reject(outcome);
    else request.resolve(outcome);
  }

  private end(error: Error): void {
    clearTimeout(this.idleTimer);
    this.ended = true;
    this.finish(error);
    this.onEnd(this);
  }

  /** Whether the process and its pipes keep Node's event loop alive: while it works, and only then. */
  private hold(busy: boolean): void {
    for (const handle of [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as {
      ref?: () => void;
      unref?: () => void;
    }[])
      busy ? handle.ref?.() : handle.unref?.();
  }
}

/**
 * The decoders of one helper binary: a request takes an idle one or starts another, so there are as
 * many as requests run at once (the pieces a worker recognises in parallel, one per core).
 */
export class SphinxDecoderPool {
  private readonly idle: DecoderProcess[] = [];

  constructor(
    private readonly command = DEFAULT_SPHINX_DECODER,
    private readonly idleMs = DEFAULT_IDLE_MS,
  ) {}

  async decode(wavFile: string, timeoutMs: number): Promise<DecodeOutcome> {
    // The protocol is a path per line.
    if (/[\n\r]/.test(wavFile)) throw new Error('A file path with a line break cannot be decoded.');
    let decoder = this.idle.pop();
    while (decoder?.ended) decoder = this.idle.pop();
    decoder ??= new DecoderProcess(this.command, (ended) => this.forget(ended));
    try {
      return await decoder.decode(wavFile, timeoutMs);
    } finally {
      // A file it could not read leaves it as good as before; one that ended (timed out, died) is gone.
      if (!decoder.ended) {
        decoder.idle(this.idleMs);
        this.idle.push(decoder);
      }
    }
  }

  /** Stops every idle decoder now. */
  close(): void {
    for (const decoder of this.idle.splice(0)) decoder.stop();
  }

  private forget(decoder: DecoderProcess): void {
    const index = this.idle.indexOf(decoder);
    if (index >= 0) this.idle.splice(index, 1);
  }
}

const pools = new Map<string, SphinxDecoderPool>();

/** The process's pool for a helper binary: shared by every recognizer that uses it. */
export function sphinxDecoderPool(command = DEFAULT_SPHINX_DECODER): SphinxDecoderPool {
  let pool = pools.get(command);
  if (!pool) {
    pool = new SphinxDecoderPool(command);
    pools.set(command, pool);
  }
  return pool;
}
