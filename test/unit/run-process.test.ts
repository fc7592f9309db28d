import { describe, expect, it } from 'vitest';
import { runProcess } from '#speech/process';

const LIMIT_MS = 60_000;
// One process that can be killed whole (a shell's own children would outlive it, holding its output open).
const node = process.execPath;

describe('runProcess', () => {
  it('collects the output and the exit code of a process left to finish', async () => {
    const result = await runProcess('sh', ['-c', 'echo out; echo err >&2; exit 3'], LIMIT_MS);
    expect(result).toEqual({ code: 3, stdout: 'out\n', stderr: 'err\n', timedOut: false, stopped: false });
  });

  it('stops a process once a complete line of its stderr matches, even one written in pieces', async () => {
    const script = `process.stderr.write('Update');
      setTimeout(() => process.stderr.write(' to <1 2>\\nmore\\n'), 200);
      setTimeout(() => console.log('never'), 30000);`;
    const result = await runProcess(node, ['-e', script], LIMIT_MS, { stopWhen: /Update to <([^>]+)>/ });
    expect(result.stopped).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(result.stdout).not.toContain('never');
    expect(result.stderr).toContain('Update to <1 2>');
  });

  it('does not stop on a line that is never finished, nor on output that does not match', async () => {
    const script = "echo 'Update from <1>' >&2; printf 'Update to <1>' >&2; echo done";
    const result = await runProcess('sh', ['-c', script], LIMIT_MS, { stopWhen: /Update to <([^>]+)>/ });
    expect(result).toMatchObject({ code: 0, stopped: false, stdout: 'done\n' });
  });

  it('kills a process at its time limit', async () => {
    const result = await runProcess(node, ['-e', "setTimeout(() => console.log('never'), 30000)"], 200);
    expect(result).toMatchObject({ timedOut: true, stopped: false, stdout: '' });
  });
});
