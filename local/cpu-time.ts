import { readdir, readFile } from 'node:fs/promises';

/**
 * Where a run's CPU went, read from Linux's /proc: the bench's workers share the machine's cores with the
 * emulators, the gateway and whatever else runs, and wall times alone cannot say which took what.
 */

/** `/proc/stat` and `/proc/<pid>/stat` count in clock ticks; Linux's USER_HZ is 100 on every common build. */
const TICKS_PER_SECOND = 100;

interface ProcessTicks {
  parent: number;
  name: string;
  /** CPU of the process itself. */
  ownTicks: number;
  /** CPU of its children that ended and that it waited for. */
  childTicks: number;
}

export interface CpuSnapshot {
  /** Ticks every core spent busy (all but idle and I/O wait), summed over cores. */
  busyTicks: number;
  idleTicks: number;
  processes: Map<number, ProcessTicks>;
}

async function readProcess(pid: number): Promise<ProcessTicks | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  // The name is in parentheses and may hold spaces or parentheses itself: the fields follow the last one.
  const nameEnd = text.lastIndexOf(')');
  const fields = text.slice(nameEnd + 2).split(' ');
  const field = (index: number) => Number(fields[index] ?? 0);
  // After the name: state, ppid, …, utime (12th), stime, cutime, cstime.
  return {
    parent: field(1),
    name: text.slice(text.indexOf('(') + 1, nameEnd),
    ownTicks: field(11) + field(12),
    childTicks: field(13) + field(14),
  };
}

export async function cpuSnapshot(): Promise<CpuSnapshot> {
  const stat = await readFile('/proc/stat', 'utf8');
  // cpu user nice system idle iowait irq softirq steal …
  const total = (stat.split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const at = (index: number) => total[index] ?? 0;
  const processes = new Map<number, ProcessTicks>();
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const process = await readProcess(pid);
    if (process) processes.set(pid, process);
  }
  return {
    busyTicks: at(0) + at(1) + at(2) + at(5) + at(6) + at(7),
    idleTicks: at(3) + at(4),
    processes,
  };
}

export interface CpuUse {
  /** Seconds of CPU each of the `roots` took with its descendants. */
  rootsSeconds: number[];
  /**
   * Seconds of CPU every other process took itself, by name, largest first (what ended children took
   * is in the cores' busy time, but for the bench's own children).
   */
  others: { name: string; seconds: number }[];
  /** Seconds the cores spent busy in all, and idle. */
  busySeconds: number;
  idleSeconds: number;
}

/** CPU taken between two snapshots by each process tree under `roots`, and by everything else by name. */
export function cpuUse(before: CpuSnapshot, after: CpuSnapshot, roots: number[]): CpuUse {
  const rootOf = new Map(roots.map((pid) => [pid, pid]));
  // Parents come before children often but not always: repeat until no process joins.
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, process] of after.processes) {
      const root = rootOf.get(process.parent);
      if (root !== undefined && !rootOf.has(pid)) {
        rootOf.set(pid, root);
        grew = true;
      }
    }
  }
  const rootsTicks = new Map<number, number>();
  const others = new Map<string, number>();
  const addOther = (name: string, ticks: number) => {
    if (ticks > 0) others.set(name, (others.get(name) ?? 0) + ticks);
  };
  for (const [pid, process] of after.processes) {
    const earlier = before.processes.get(pid);
    const ownTicks = process.ownTicks - (earlier?.ownTicks ?? 0);
    const childTicks = process.childTicks - (earlier?.childTicks ?? 0);
    const root = rootOf.get(pid);
    if (root !== undefined) rootsTicks.set(root, (rootsTicks.get(root) ?? 0) + ownTicks + childTicks);
    else if (pid === globalThis.process.pid) {
      // The bench's process hosts the gateway and the emulators but DynamoDB Local; what it ran and
      // waited for (a direct decode) is apart.
      addOther('the bench (gateway, fauxqs, S3 front)', ownTicks);
      addOther('processes the bench ran', childTicks);
    } else addOther(process.name, ownTicks);
  }
  return {
    rootsSeconds: roots.map((pid) => (rootsTicks.get(pid) ?? 0) / TICKS_PER_SECOND),
    others: [...others]
      .map(([name, ticks]) => ({ name, seconds: ticks / TICKS_PER_SECOND }))
      .sort((a, b) => b.seconds - a.seconds),
    busySeconds: (after.busyTicks - before.busyTicks) / TICKS_PER_SECOND,
    idleSeconds: (after.idleTicks - before.idleTicks) / TICKS_PER_SECOND,
  };
}

/** One line: the roots' CPU (when named), the largest others, and the cores' busy and idle time. */
export function describeCpuUse(use: CpuUse, rootsName?: string): string {
  const seconds = (value: number) => `${value.toFixed(1)} s`;
  const largest = use.others.slice(0, 5).map((other) => `${other.name} ${seconds(other.seconds)}`);
  const roots = rootsName ? `${rootsName} ${use.rootsSeconds.map(seconds).join(' + ')}; others ` : '';
  return `CPU: ${roots}${largest.join(', ')}; cores busy ${seconds(use.busySeconds)} in all, idle ${seconds(use.idleSeconds)}`;
}
