#!/usr/bin/env node
// Installs what `npm start` and `npm test` need and a fresh machine lacks: npm packages (npm ci) and
// the Debian packages for decoding (ffmpeg), recognition (pocketsphinx), DynamoDB Local (Java), the
// console's browser tests (Chromium) and the worker image test, whose runtime interface client compiles
// curl and aws-lambda-cpp from .tar.xz sources (the build tools of functions/worker/image-settings.ts);
// then builds the console page's assets.
// Plain JavaScript with no dependencies, because it runs before node_modules exists.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
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

// npm records the installed tree in node_modules/.package-lock.json; reinstall when the lock is newer.
const installedLock = join(root, 'node_modules', '.package-lock.json');
const lock = join(root, 'package-lock.json');
if (!existsSync(installedLock) || statSync(lock).mtimeMs > statSync(installedLock).mtimeMs) {
  say('installing npm packages (npm ci)');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
}

// The console page's script and style, bundled into a module the console handler imports.
execFileSync(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'functions', 'console', 'build.ts')], {
  cwd: root,
  stdio: 'inherit',
});
