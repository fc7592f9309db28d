import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { WORKER_IMAGE } from '#worker/image-settings';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
const BUILD_SCRIPT = join(ROOT, 'functions', 'worker', 'build-image.ts');
/**
 * Inside the clone's node_modules: reused by later test runs of the same checkout (one CI run), never
 * carried to another clone or CI run.
 */
const CACHE = join(ROOT, 'node_modules', '.cache', 'worker-image');

/** What the slow packages phase depends on: a change to any of them builds it again. */
function packagesKey(): string {
  const hash = createHash('sha256');
  for (const file of [
    'package.json',
    'package-lock.json',
    'functions/worker/build-image.ts',
    'functions/worker/image-settings.ts',
    `functions/worker/${WORKER_IMAGE.entrypoint}`,
  ]) {
    hash.update(readFileSync(join(ROOT, file)));
  }
  hash.update(`${process.platform}-${process.arch}-${process.versions.modules}`);
  return hash.digest('hex').slice(0, 16);
}

/** Runs one phase of the image's build script, as the Dockerfile does, its output kept in `log`. */
function runPhase(phase: 'packages' | 'bundle', taskRoot: string, log: string): void {
  try {
    execFileSync(TSX, [BUILD_SCRIPT, phase, taskRoot], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 256 * 1024 * 1024,
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: Buffer; stderr?: Buffer };
    writeFileSync(log, `${stdout}\n${stderr}`);
    throw new Error(`build-image.ts ${phase} failed; its output is in ${log}`);
  }
}

/** Where the packages phase for the current inputs lives, and the markers of a build in the background. */
function packagesFolder() {
  const folder = join(CACHE, `packages-${packagesKey()}`);
  return { folder, complete: join(folder, '.complete'), building: `${folder}.building` };
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Starts the packages phase in the background (from the run's global setup): it compiles for minutes on
 * one core while the tests, which run one file at a time, use the other. Returns what stops it (at the
 * end of the run) if it is still going. Nothing starts when the cache is complete already.
 */
export function startWorkerPackagesBuild(): () => void {
  const { folder, complete, building } = packagesFolder();
  if (existsSync(complete)) return () => {};
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(CACHE, { recursive: true });
  const log = openSync(join(CACHE, 'packages.log'), 'w');
  const builder = spawn(TSX, [BUILD_SCRIPT, 'packages', folder], { cwd: ROOT, stdio: ['ignore', log, log] });
  writeFileSync(building, String(builder.pid));
  builder.once('exit', (code) => {
    if (code === 0) writeFileSync(complete, new Date().toISOString());
    rmSync(building, { force: true });
  });
  return () => {
    if (builder.exitCode === null) builder.kill('SIGTERM');
  };
}

/**
 * A task root built by the image's build script into a temporary folder: the packages phase (the
 * runtime client compiles for minutes) comes from the clone's cache when its inputs have not changed,
 * or from the build the global setup started in the background; the handler is bundled afresh every time.
 */
export async function buildWorkerTaskRoot(): Promise<string> {
  const { folder, complete, building } = packagesFolder();
  for (;;) {
    const pid = existsSync(building) ? Number(readFileSync(building, 'utf8')) : 0;
    if (existsSync(complete) || !pid || !isAlive(pid)) break;
    await sleep(1000);
  }
  if (!existsSync(complete)) {
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(CACHE, { recursive: true });
    runPhase('packages', folder, join(CACHE, 'packages.log'));
    writeFileSync(complete, new Date().toISOString());
  }
  const taskRoot = join(mkdtempSync(join(tmpdir(), 'worker-image-')), 'task');
  cpSync(folder, taskRoot, { recursive: true, verbatimSymlinks: true });
  runPhase('bundle', taskRoot, join(CACHE, 'bundle.log'));
  return taskRoot;
}

/**
 * The folder of a `node` of the image's major version (the CI host's may be older), from the npm
 * registry's per-platform Node.js package, cached in the clone like the task root's packages.
 */
export function imageNodeBinDir(): string {
  const major = WORKER_IMAGE.baseImage.match(/^node:(\d+)-/)?.[1];
  if (!major) throw new Error(`No Node.js version in ${WORKER_IMAGE.baseImage}.`);
  if (process.versions.node.split('.')[0] === major) return dirname(process.execPath);
  const folder = join(CACHE, `node-${major}-${process.platform}-${process.arch}`);
  const node = join(folder, 'package', 'bin', 'node');
  if (!existsSync(node)) {
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    const tarball = execFileSync(
      'npm',
      ['pack', `node-${process.platform}-${process.arch}@${major}`, '--silent', '--pack-destination', folder],
      { cwd: folder, encoding: 'utf8' },
    ).trim();
    execFileSync('tar', ['xzf', join(folder, tarball), '-C', folder, 'package/bin/node']);
    rmSync(join(folder, tarball));
  }
  return dirname(node);
}
