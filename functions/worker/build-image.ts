/**
 * The worker image's build steps, run from the repository's root, in phases so that Docker can cache
 * the slow ones:
 *
 *   tsx functions/worker/build-image.ts packages TASK_ROOT     # runtime client and external packages
 *   tsx functions/worker/build-image.ts model TASK_ROOT [NAME] # an official whisper model, verified
 *   tsx functions/worker/build-image.ts bundle TASK_ROOT       # the handler (esbuild), the sphinx-decoder
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
  const direct = Object.fromEntries(
    WORKER_IMAGE.directPackages.map((dependency) => {
      const range = source.dependencies[dependency];
      if (!range) throw new Error(`package.json does not depend on ${dependency}.`);
      return [dependency, range];
    }),
  );
  const { name, version } = WORKER_IMAGE.runtimeInterfaceClient;
  const whisper = WORKER_IMAGE.whisperBinding;
  const manifest = {
    name: 'transcription-worker-image',
    private: true,
    type: 'module',
    dependencies: { ...direct, [name]: version },
    // npm 11 runs no dependency's install script unless allowed: the runtime client's builds its
    // native part, the whisper binding's compiles whisper.cpp.
    allowScripts: { [name]: true, [whisper]: true },
  };
  writeFileSync(join(taskRoot, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // The repository's lock keeps every package it shares with the task root at the tested version.
  copyFileSync(join(sourceRoot, 'package-lock.json'), join(taskRoot, 'package-lock.json'));
  npm(taskRoot, ['install', '--omit=dev', '--ignore-scripts']);
  // Then only the runtime client's scripts run: they compile curl, aws-lambda-cpp and its addon.
  npm(taskRoot, ['rebuild', name, '--foreground-scripts']);
  const addon = join(taskRoot, 'node_modules', name, 'rapid-client.node');
  if (!existsSync(addon)) throw new Error(`${name} built no native client (${addon} is missing).`);
  // whisper.cpp for the CPUs Lambda runs this architecture on, on every core of the build machine.
  const flags = WORKER_IMAGE.whisperCompilerFlags[process.arch];
  if (!flags) throw new Error(`No whisper.cpp compiler flags for ${process.arch}.`);
  execFileSync('npm', ['rebuild', whisper, '--foreground-scripts', '--no-audit', '--no-fund'], {
    cwd: taskRoot,
    stdio: 'inherit',
    env: { ...process.env, CFLAGS: flags, CXXFLAGS: flags, JOBS: 'max' },
  });
  const binding = join(taskRoot, 'node_modules', whisper, 'build', 'Release', `${whisper}.node`);
  if (!existsSync(binding)) throw new Error(`${whisper} built no binding (${binding} is missing).`);
  for (const external of WORKER_IMAGE.externalPackages) {
    if (!existsSync(join(taskRoot, 'node_modules', external, 'package.json'))) {
      throw new Error(`${external} is missing from ${taskRoot}/node_modules.`);
    }
  }
  const entrypoint = join(taskRoot, WORKER_IMAGE.entrypoint);
  copyFileSync(join(HERE, WORKER_IMAGE.entrypoint), entrypoint);
  chmodSync(entrypoint, 0o755);
}

/**
 * The worker's handler as one ES module, `handler.mjs`, with the external packages left beside it, and
 * the PocketSphinx helper it runs (`sphinx-decoder`, which the bundled recognizer finds beside itself).
 */
export async function bundleHandler(taskRoot: string, sourceRoot = process.cwd()): Promise<void> {
  execFileSync(
    'sh',
    [
      join(sourceRoot, WORKER_IMAGE.sphinxDecoder.buildScript),
      join(taskRoot, WORKER_IMAGE.sphinxDecoder.file),
    ],
    { stdio: 'inherit' },
  );
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

/**
 * The official whisper model a deployment names, downloaded into the task root's model folder and
 * kept only if it matches its pinned checksums; nothing for no name. Imported here, not above: the
 * Dockerfile copies the model table only for this phase.
 */
export async function installModel(taskRoot: string, name: string | undefined): Promise<void> {
  if (!name) return;
  const { fetchOfficialModel } = await import('../speech/whisper-models.ts');
  const file = await fetchOfficialModel(name, { dir: join(taskRoot, WORKER_IMAGE.modelDir) });
  console.log(`${file}: ${name}, checksums verified`);
}

const [phase, taskRoot, modelName] = process.argv.slice(2);
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!taskRoot || (phase !== 'packages' && phase !== 'model' && phase !== 'bundle')) {
    console.error('usage: tsx functions/worker/build-image.ts packages|model|bundle TASK_ROOT [MODEL]');
    process.exit(2);
  }
  if (phase === 'packages') installPackages(resolve(taskRoot));
  else if (phase === 'model') await installModel(resolve(taskRoot), modelName);
  else await bundleHandler(resolve(taskRoot));
}
