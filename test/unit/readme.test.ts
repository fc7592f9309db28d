import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLI_ENV } from '#client/cli';
import { DEPLOYMENT_SETTING_NAMES, ENV } from '#commons/contract';
import { LOCAL_ENV } from '#local/settings';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The rows of the first Markdown table under a `## heading`: their cells, without the header row. */
function tableRows(heading: string): string[][] {
  const section = README.split(/^## /m).find((part) => part.startsWith(`${heading}\n`));
  if (!section) throw new Error(`README has no "## ${heading}" section.`);
  // The first run of table lines: later tables of the section are not this one.
  const lines = section.split('\n');
  const start = lines.findIndex((line) => line.startsWith('|'));
  const end = lines.findIndex((line, index) => index > start && !line.startsWith('|'));
  return lines
    .slice(start, end === -1 ? undefined : end)
    .slice(2)
    .filter((line) => !/^\|\s*-/.test(line))
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

const backticked = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');

/** Files a maintainer works with: everything git tracks or would track. */
function repositoryFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}

/** Data beside code (recorded fixtures, screenshots) is described by its folder's row. */
const DATA_EXTENSIONS = new Set(['.json', '.png', '.md']);

describe('the README', () => {
  it('names every file of the repository in its layout table, under the folder that holds it', () => {
    const rows = new Map(
      tableRows('Layout').map(([path = '', what = '']) => [backticked(path)[0] ?? '', backticked(what)]),
    );
    const unmentioned = repositoryFiles().filter((file) => {
      if (rows.has(file)) return false;
      const folder = dirname(file) === '.' ? './' : `${dirname(file)}/`;
      const row = rows.get(folder);
      if (!row) return true;
      return !(row.includes(basename(file)) || (DATA_EXTENSIONS.has(extname(file)) && folder !== './'));
    });
    expect(unmentioned).toEqual([]);
  });

  it('describes no file or folder that does not exist', () => {
    const files = repositoryFiles();
    const folders = new Set(files.map((file) => `${dirname(file)}/`).concat('./'));
    for (const [path = ''] of tableRows('Layout')) {
      const listed = backticked(path)[0] ?? '';
      expect(files.includes(listed) || folders.has(listed), listed).toBe(true);
    }
  });

  it('lists exactly the environment variables the code reads in its configuration table', () => {
    const sources = repositoryFiles().filter(
      (file) => /^(functions|local|cdk|client)\//.test(file) && /\.(ts|mjs)$/.test(file),
    );
    const read = new Set<string>([
      ...Object.values(ENV),
      ...Object.values(LOCAL_ENV),
      ...Object.values(CLI_ENV),
    ]);
    for (const file of sources) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const match of text.matchAll(/\benv(?:\.|\[['"])([A-Z][A-Z0-9_]+)/g)) read.add(match[1] ?? '');
    }
    const documented = tableRows('Configuration').flatMap(([names = '']) => backticked(names));
    expect(new Set(documented)).toEqual(read);
  });

  it('lists exactly the deployment settings of the contract in its Deploy section', () => {
    const documented = tableRows('Deploy').flatMap(([names = '']) => backticked(names));
    expect(new Set(documented)).toEqual(new Set(DEPLOYMENT_SETTING_NAMES));
  });

  it("names exactly package.json's import aliases", () => {
    const aliases = Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).imports);
    const named = README.match(/`#[a-z]+\/\*`/g)?.map((alias) => alias.slice(1, -1)) ?? [];
    expect(new Set(named)).toEqual(new Set(aliases));
  });
});
