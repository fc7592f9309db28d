/**
 * The worker image's build steps, run from the repository's root, in two phases so that Docker can
 * cache the slow one:
 *
 *   tsx functions/worker/build-image.ts packages TASK_ROOT   # runtime client and external packages
 *   tsx functions/worker/build-image.ts bundle TASK_ROOT     # the handler, bundled by esbuild
 *
 * The Dockerfile runs both into /var/task; a test runs both on the CI host (Debian bookworm too) into
 * a temporary task root, then starts it as Lambda would. Only relative imports: the Dockerfile runs
 * the first phase before copying the rest of the sources.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WORKER_IMAGE } from './image-settings.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

function npm(taskRoot: string, args: string[]): void {
  execFileSync('npm', [...args, '--no-audit', '--no-fund'], { cwd: taskRoot, stdio: 'inherit' });
}

/**
 * The task root's own package.json and lock: the external packages at the versions the repository
 * locks, and the runtime client. With a package.json of its own, installing the runtime client
 * cannot prune the other packages as extraneous (an `npm install --no-save` in a folder that has
 * node_modules but no package.json removes them).
 */
export function installPackages(taskRoot: string, sourceRoot = process.cwd()): void {
  mkdirSync(taskRoot, { recursive: true });
  const source = JSON.parse(readFileSync(join(sourceRoot, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const [direct] = WORKER_IMAGE.externalPackages;
  const range = source.dependencies[direct];
  if (!range) throw new Error(`package.json does not depend on ${direct}.`);
  const { name, version } = WORKER_IMAGE.runtimeInterfaceClient;
  const manifest = {
    name: 'transcription-worker-image',
    private: true,
    type: 'module',
    dependencies: { [direct]: range, [name]: version },
    // npm 11 runs no dependency's install script unless allowed; the runtime client's builds its native part.
    allowScripts: { [name]: true },
  };
  writeFileSync(join(taskRoot, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // The repository's lock keeps every package it shares with the task root at the tested version.
  copyFileSync(join(sourceRoot, 'package-lock.json'), join(taskRoot, 'package-lock.json'));
  npm(taskRoot, ['install', '--omit=dev', '--ignore-scripts']);
  // Then only the runtime client's scripts run: they compile curl, aws-lambda-cpp and its addon.
  npm(taskRoot, ['rebuild', name, '--foreground-scripts']);
  const addon = join(taskRoot, 'node_modules', name, 'rapid-client.node');
  if (!existsSync(addon)) throw new Error(`${name} built no native client (${addon} is missing).`);
  for (const external of WORKER_IMAGE.externalPackages) {
    if (!existsSync(join(taskRoot, 'node_modules', external, 'package.json'))) {
      throw new Error(`${external} is missing from ${taskRoot}/node_modules.`);
    }
  }
  const entrypoint = join(taskRoot, WORKER_IMAGE.entrypoint);
  copyFileSync(join(HERE, WORKER_IMAGE.entrypoint), entrypoint);
  chmodSync(entrypoint, 0o755);
}

/** The worker's handler as one ES module, `handler.mjs`, with the external packages left beside it. */
export async function bundleHandler(taskRoot: string, sourceRoot = process.cwd()): Promise<void> {
  const { build } = await import('esbuild');
  const [module] = WORKER_IMAGE.handler.split('.');
  await build({
    entryPoints: [join(sourceRoot, WORKER_IMAGE.handlerSource)],
    outfile: join(taskRoot, `${module}.mjs`),
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    minify: true,
    sourcemap: true,
    mainFields: ['module', 'main'],
    external: [...WORKER_IMAGE.externalPackages],
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
}

const [phase, taskRoot] = process.argv.slice(2);
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!taskRoot || (phase !== 'packages' && phase !== 'bundle')) {
    console.error('usage: tsx functions/worker/build-image.ts packages|bundle TASK_ROOT');
    process.exit(2);
  }
  if (phase === 'packages') installPackages(resolve(taskRoot));
  else await bundleHandler(resolve(taskRoot));
}
