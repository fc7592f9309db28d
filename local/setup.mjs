#!/usr/bin/env node
// Installs what `npm start` and `npm test` need and a fresh machine lacks: npm packages (npm ci) and
// the Debian packages for decoding (ffmpeg), recognition (pocketsphinx), DynamoDB Local (Java), the
// console's browser tests (Chromium) and the worker image test, whose runtime interface client compiles
// curl and aws-lambda-cpp from .tar.xz sources (the build tools of functions/worker/image-settings.ts,
// which also compile whisper.cpp); then builds the console page's assets.
// Plain JavaScript with no dependencies, because it runs before node_modules exists.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quiet = process.argv.includes('--quiet');
const say = (line) => quiet || console.log(`[setup] ${line}`);

const debianPackages = [
  { command: 'ffmpeg', package: 'ffmpeg' },
  { command: 'ffprobe', package: 'ffmpeg' },
  { command: 'pocketsphinx_continuous', package: 'pocketsphinx' },
  { path: '/usr/share/pocketsphinx/model/en-us/en-us', package: 'pocketsphinx-en-us' },
  { command: 'java', package: 'openjdk-17-jre-headless' },
  // The console's browser tests drive Debian's Chromium through playwright-core.
  { path: '/usr/bin/chromium', package: 'chromium' },
  // The worker image test builds aws-lambda-ric as the image does (node-gyp builds its addon against
  // the headers of the Node.js that runs npm).
  { command: 'g++', package: 'g++' },
  { command: 'make', package: 'make' },
  { command: 'cmake', package: 'cmake' },
  { command: 'python3', package: 'python3' },
  { command: 'xz', package: 'xz-utils' },
  // The sphinx-decoder (functions/speech/sphinx-decoder.c) compiles against PocketSphinx's library.
  { command: 'gcc', package: 'gcc' },
  { command: 'pkg-config', package: 'pkg-config' },
  { path: '/usr/include/pocketsphinx/pocketsphinx.h', package: 'libpocketsphinx-dev' },
];

function hasCommand(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

const missing = [
  ...new Set(
    debianPackages
      .filter((entry) => (entry.command ? !hasCommand(entry.command) : !existsSync(entry.path)))
      .map((entry) => entry.package),
  ),
];
if (missing.length > 0) {
  if (process.getuid?.() !== 0) {
    console.error(`[setup] Missing Debian packages: ${missing.join(' ')}. Install them with:`);
    console.error(`  sudo apt-get update && sudo apt-get install -y ${missing.join(' ')}`);
    process.exit(1);
  }
  say(`installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
    stdio: 'inherit',
    env,
  });
}

// The whisper engine's binding (smart-whisper) compiles whisper.cpp from its sources in its install
// script (node-gyp), with these flags for this machine's CPU: -march=native turns on the vector
// instructions ggml is written for (AVX2, FMA, F16C; NEON), 4 to 6 times faster here than the
// portable build, and zero-initialised locals cover the whisper_context_params the binding leaves
// uninitialised. JOBS=max: node-gyp compiles on every core.
const whisperBinding = join(root, 'node_modules', 'smart-whisper');
const whisperFlags = '-march=native -ftrivial-auto-var-init=zero';
const buildEnv = { ...process.env, CFLAGS: whisperFlags, CXXFLAGS: whisperFlags, JOBS: 'max' };
const whisperStamp = join(root, 'node_modules', '.cache', 'whisper-build.json');
const whisperBuild = () =>
  JSON.stringify({
    flags: whisperFlags,
    version: JSON.parse(readFileSync(join(whisperBinding, 'package.json'), 'utf8')).version,
  });

// npm records the installed tree in node_modules/.package-lock.json; reinstall when the lock is newer.
const installedLock = join(root, 'node_modules', '.package-lock.json');
const lock = join(root, 'package-lock.json');
if (!existsSync(installedLock) || statSync(lock).mtimeMs > statSync(installedLock).mtimeMs) {
  say('installing npm packages (npm ci; compiles whisper.cpp, about two minutes on two cores)');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit', env: buildEnv });
  writeStamp();
}
// node_modules installed another way (a plain `npm ci`) has the portable build: build it for this CPU.
const built = existsSync(join(whisperBinding, 'build', 'Release', 'smart-whisper.node'));
if (!built || !existsSync(whisperStamp) || readFileSync(whisperStamp, 'utf8') !== whisperBuild()) {
  say('compiling whisper.cpp for this CPU (smart-whisper)');
  execFileSync('npm', ['rebuild', 'smart-whisper', '--no-audit', '--no-fund'], {
    cwd: root,
    stdio: 'inherit',
    env: buildEnv,
  });
  writeStamp();
}

function writeStamp() {
  mkdirSync(dirname(whisperStamp), { recursive: true });
  writeFileSync(whisperStamp, whisperBuild());
}

// The sphinx engine's decoder, kept loaded by each worker: built beside its source, where the recognizer
// looks for it, whenever the source or its build script is newer.
const speechDir = join(root, 'functions', 'speech');
const decoder = join(speechDir, 'sphinx-decoder');
const decoderSources = ['sphinx-decoder.c', 'build-sphinx-decoder.sh'].map((name) => join(speechDir, name));
if (
  !existsSync(decoder) ||
  decoderSources.some((file) => statSync(file).mtimeMs > statSync(decoder).mtimeMs)
) {
  say('compiling the sphinx-decoder');
  execFileSync('sh', [join(speechDir, 'build-sphinx-decoder.sh'), decoder], { stdio: 'inherit' });
}

// The console page's script and style, bundled into a module the console handler imports.
execFileSync(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'functions', 'console', 'build.ts')], {
  cwd: root,
  stdio: 'inherit',
});
