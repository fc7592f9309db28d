import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('npm run soak', () => {
  it('runs small, loses and duplicates nothing, and prints its figures', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'local/soak.ts', '--jobs', '6', '--concurrency', '3', '--minutes', '5'],
      { env: { ...process.env, LOCAL_RUNTIME_FILE: '/tmp/soak-test-runtime.json' }, timeout: 300_000 },
    );
    const figure = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(stdout)?.[1]);
    expect(figure('submitted'), stdout).toBe(6);
    expect(figure('completed') + figure('errored')).toBe(6);
    expect(figure('lost')).toBe(0);
    expect(figure('duplicated')).toBe(0);
    expect(stdout).toMatch(/^submit p50 \d+ ms p99 \d+ ms$/m);
    expect(stdout).toMatch(/^status p50 \d+ ms p99 \d+ ms$/m);
  });

  it('refuses to run against another machine', async () => {
    const run = promisify(execFile)(process.execPath, [
      '--import',
      'tsx',
      'local/soak.ts',
      '--url',
      'http://example.com',
      '--key',
      'x'.repeat(20),
    ]);
    await expect(run).rejects.toMatchObject({ code: 2 });
  });
});
