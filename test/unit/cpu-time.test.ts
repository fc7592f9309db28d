import { spawn } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CpuSnapshot, cpuSnapshot, cpuUse, describeCpuUse } from '#local/cpu-time';

/** A snapshot of made-up processes: pid → [parent, name, own ticks, ended children's ticks]. */
function snapshot(
  busyTicks: number,
  processes: Record<number, [number, string, number, number]>,
): CpuSnapshot {
  return {
    busyTicks,
    idleTicks: 1000 - busyTicks,
    processes: new Map(
      Object.entries(processes).map(([pid, [parent, name, ownTicks, childTicks]]) => [
        Number(pid),
        { parent, name, ownTicks, childTicks },
      ]),
    ),
  };
}

describe('where a run’s CPU went (the bench’s accounting)', () => {
  it('gives each root its whole tree, ended children included, and everything else by name', () => {
    const before = snapshot(100, {
      1: [0, 'init', 5, 0],
      10: [1, 'node', 50, 0],
      20: [1, 'node', 60, 0],
      30: [1, 'java', 70, 0],
    });
    const after = snapshot(700, {
      1: [0, 'init', 6, 0],
      // Worker 10: its decoder (11) started during the run and has a child (12) of its own; an ffmpeg it ran
      // and waited for is in its children's ticks.
      10: [1, 'node', 80, 40],
      11: [10, 'sphinx-decoder', 200, 0],
      12: [11, 'helper', 10, 0],
      // A grandchild listed before its parent (the listing goes by pid, and pids wrap around).
      13: [40, 'ffmpeg', 7, 0],
      40: [10, 'sh', 3, 0],
      20: [1, 'node', 70, 0],
      21: [20, 'sphinx-decoder', 150, 0],
      30: [1, 'java', 95, 0],
      31: [1, 'java', 5, 0],
    });
    const use = cpuUse(before, after, [10, 20]);
    expect(use.rootsSeconds).toEqual([(30 + 40 + 200 + 10 + 7 + 3) / 100, (10 + 150) / 100]);
    expect(use.others).toEqual([
      { name: 'java', seconds: 0.3 },
      { name: 'init', seconds: 0.01 },
    ]);
    expect(use.busySeconds).toBe(6);
    expect(use.idleSeconds).toBe(-6);
    expect(describeCpuUse(use, 'workers')).toBe(
      'CPU: workers 2.9 s + 1.6 s; others java 0.3 s, init 0.0 s; cores busy 6.0 s in all, idle -6.0 s',
    );
  });

  it('keeps what this process ran and waited for apart from its own work', () => {
    const self = process.pid;
    const before = snapshot(0, { [self]: [1, 'node', 10, 0] });
    const after = snapshot(0, { [self]: [1, 'node', 30, 500] });
    expect(cpuUse(before, after, []).others).toEqual([
      { name: 'processes the bench ran', seconds: 5 },
      { name: 'the bench (gateway, fauxqs, S3 front)', seconds: 0.2 },
    ]);
  });

  it('reads this machine’s /proc: a busy child’s CPU lands on it as root, whatever its name', async () => {
    // A name with spaces and parentheses, as /proc/PID/stat shows it between parentheses.
    const name = 'a b) c(';
    const folder = await mkdtemp(join(tmpdir(), 'cpu-time-'));
    await symlink(process.execPath, join(folder, name));
    // The child spins for 200 ms of its own CPU, says how much it took, and lives until its stdin ends.
    const spin =
      'const { cpuUsage } = process; while (cpuUsage().user < 200_000); const { user, system } = cpuUsage(); console.log(user + system); process.stdin.resume();';
    const before = await cpuSnapshot();
    const child = spawn(join(folder, name), ['-e', spin], { stdio: ['pipe', 'pipe', 'ignore'] });
    const reported = await new Promise<number>((done) =>
      child.stdout.once('data', (data) => done(Number(String(data)) / 1e6)),
    );
    const during = await cpuSnapshot();
    child.stdin.end();
    await new Promise((done) => child.once('exit', done));
    await rm(folder, { recursive: true, force: true });
    expect(during.processes.get(child.pid ?? 0)).toMatchObject({ name, parent: process.pid });
    const use = cpuUse(before, during, [child.pid ?? 0]);
    // The kernel's ticks against the child's own account: within a few ticks.
    expect(reported).toBeGreaterThanOrEqual(0.2);
    expect(Math.abs((use.rootsSeconds[0] ?? 0) - reported)).toBeLessThanOrEqual(0.05);
    expect(use.busySeconds).toBeGreaterThanOrEqual(reported - 0.05);
  });
});
