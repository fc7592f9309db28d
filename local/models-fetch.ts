/**
 * `npm run models:fetch -- NAME [--dir DIR] [--base-url URL]`: downloads an official whisper.cpp model
 * (see OFFICIAL_MODELS) into `models/` of the repository (or DIR), resuming a partial download,
 * showing progress, and keeping it only if both pinned checksums match. Needs internet access (or
 * `--base-url`, a mirror of the same files).
 */
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  type FetchProgress,
  fetchOfficialModel,
  OFFICIAL_MODEL_NAMES,
  OFFICIAL_MODELS,
  WhisperModelError,
} from '#speech/whisper-models';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MB = 1024 * 1024;

const usage = `usage: npm run models:fetch -- NAME [--dir DIR] [--base-url URL]
NAME: ${OFFICIAL_MODEL_NAMES.map((name) => `${name} (${OFFICIAL_MODELS[name].diskMiB} MiB)`).join(', ')}`;

/** One progress line: rewritten in place on a terminal, every tenth otherwise (CI logs). */
function progressPrinter(name: string): (progress: FetchProgress) => void {
  let lastTenth = -1;
  return ({ receivedBytes, totalBytes }) => {
    const received = `${(receivedBytes / MB).toFixed(1)} MiB`;
    if (!totalBytes) {
      if (process.stderr.isTTY) process.stderr.write(`\r${name}: ${received}`);
      return;
    }
    const share = receivedBytes / totalBytes;
    const line = `${name}: ${received} of ${(totalBytes / MB).toFixed(1)} MiB (${Math.floor(share * 100)}%)`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line}`);
    else if (Math.floor(share * 10) > lastTenth) {
      lastTenth = Math.floor(share * 10);
      process.stderr.write(`${line}\n`);
    }
  };
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { dir: { type: 'string' }, 'base-url': { type: 'string' }, help: { type: 'boolean' } },
  });
  const [name] = positionals;
  if (values.help || !name || positionals.length > 1) {
    console.error(usage);
    return values.help ? 0 : 2;
  }
  const dir = resolve(values.dir ?? join(ROOT, 'models'));
  try {
    const file = await fetchOfficialModel(name, {
      dir,
      ...(values['base-url'] ? { baseUrl: values['base-url'] } : {}),
      onProgress: progressPrinter(name),
    });
    if (process.stderr.isTTY) process.stderr.write('\n');
    console.log(`${relative(process.cwd(), file) || file}: ${name}, both checksums verified.`);
    console.log(`Use it with: ENGINE=whisper WHISPER_MODEL=${file}`);
    return 0;
  } catch (error) {
    if (process.stderr.isTTY) process.stderr.write('\n');
    if (error instanceof WhisperModelError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
}

process.exitCode = await main();
