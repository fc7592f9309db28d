import { describe, expect, it } from 'vitest';
import { runProcess } from '#speech/process';

const LIMIT_MS = 60_000;
// One process that can be killed whole (a shell's own children would outlive it, holding its output open).
const node = process.execPath;

describe('runProcess', () => {
  it('collects the output and the exit code of a process left to finish', async () => {
    const result = await runProcess('sh', ['-c', 'echo out; echo err >&2; exit 3'], LIMIT_MS);
    expect(result).toEqual({ code: 3, stdout: 'out\n', stderr: 'err\n', timedOut: false });
  });

  it('kills a process at its time limit', async () => {
    const result = await runProcess(node, ['-e', "setTimeout(() => console.log('never'), 30000)"], 200);
    expect(result).toMatchObject({ timedOut: true, stdout: '' });
  });
});
