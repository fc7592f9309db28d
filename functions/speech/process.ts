import { spawn } from 'node:child_process';

export interface ProcessOutput {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The process ran past its time limit and was killed. */
  timedOut: boolean;
}

/** Output kept per stream: enough for any result we parse, bounded against a process that floods it. */
const MAX_OUTPUT_BYTES = 32 * 1024 * 1024;

/**
 * Runs a command to completion and collects its output; kills it (and answers `timedOut`) when it runs
 * longer than `timeoutMs`. Rejects only when it cannot be started.
 */
export function runProcess(command: string, args: string[], timeoutMs: number): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (stream: NodeJS.ReadableStream) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_OUTPUT_BYTES) chunks.push(chunk);
      });
      return chunks;
    };
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr);
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
