import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';

export interface ProcessOutput {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The process ran past its time limit and was killed. */
  timedOut: boolean;
  /** Its stderr showed `stopWhen`, and it was stopped there: what was wanted had been said. */
  stopped: boolean;
}

/** Output kept per stream: enough for any result we parse, bounded against a process that floods it. */
const MAX_OUTPUT_BYTES = 32 * 1024 * 1024;
/** A line watched for `stopWhen` is cut to this, against a process that never ends one. */
const MAX_LINE_CHARS = 64 * 1024;

/**
 * Runs a command to completion and collects its output; kills it (and answers `timedOut`) when it runs
 * longer than `timeoutMs`. With `stopWhen`, kills it as soon as a complete line of its stderr matches
 * (and answers `stopped`). Rejects only when it cannot be started.
 */
export function runProcess(
  command: string,
  args: string[],
  timeoutMs: number,
  options: { stopWhen?: RegExp } = {},
): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (stream: NodeJS.ReadableStream, onData?: (chunk: Buffer) => void) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_OUTPUT_BYTES) chunks.push(chunk);
        onData?.(chunk);
      });
      return chunks;
    };
    let stopped = false;
    const { stopWhen } = options;
    const decoder = new StringDecoder('utf8');
    // The unfinished last line of stderr: complete lines are looked at once each.
    let partialLine = '';
    const watch = (chunk: Buffer) => {
      if (!stopWhen || stopped) return;
      const text = partialLine + decoder.write(chunk);
      const end = text.lastIndexOf('\n') + 1;
      partialLine = text.slice(end).slice(-MAX_LINE_CHARS);
      if (stopWhen.test(text.slice(0, end))) {
        stopped = true;
        child.kill('SIGKILL');
      }
    };
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr, watch);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        timedOut,
        stopped,
      });
    });
  });
}

/**
 * Starts a command whose output is read as a stream (a decoder feeding its caller); kills it at the
 * time limit. `done` resolves with its exit code once it has ended; stderr is kept, bounded.
 */
export function streamProcess(
  command: string,
  args: string[],
  timeoutMs: number,
): {
  stdout: NodeJS.ReadableStream;
  done: Promise<{ code: number | null; stderr: string; timedOut: boolean }>;
  /** Stops it early, when its caller has failed and reads no more. */
  kill(): void;
} {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: Buffer[] = [];
  let size = 0;
  child.stderr.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_OUTPUT_BYTES) stderr.push(chunk);
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  const done = new Promise<{ code: number | null; stderr: string; timedOut: boolean }>((resolve, reject) => {
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr: Buffer.concat(stderr).toString('utf8'), timedOut });
    });
  });
  return { stdout: child.stdout, done, kill: () => child.kill('SIGKILL') };
}
