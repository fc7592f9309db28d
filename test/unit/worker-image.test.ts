import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { WORKER_IMAGE } from '#worker/image-settings';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DOCKERFILE = readFileSync(join(ROOT, 'functions', 'worker', 'Dockerfile'), 'utf8');

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
const instructions = DOCKERFILE.replace(/\\\n/g, ' ')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'));
const named = (keyword: string) =>
  instructions.filter((line) => line.startsWith(`${keyword} `)).map((line) => line.slice(keyword.length + 1));
/** The instructions of each stage, in order. */
const stages = instructions.reduce<string[][]>((all, line) => {
  if (line.startsWith('FROM ')) all.push([]);
  all.at(-1)?.push(line);
  return all;
}, []);
const aptInstalls = (stage: string[]) =>
  stage
    .filter((line) => line.includes('apt-get install'))
    .flatMap((line) => line.split('apt-get install')[1]?.split('&&')[0]?.split(/\s+/) ?? [])
    .filter((word) => word && !word.startsWith('-'));

describe('the worker Dockerfile and its build script agree', () => {
  it('builds and runs on the base image of the settings, in two stages', () => {
    expect(named('FROM')).toEqual([`${WORKER_IMAGE.baseImage} AS build`, WORKER_IMAGE.baseImage]);
  });

  it('runs both phases of build-image.ts into the task root, and copies that task root', () => {
    const runs = named('RUN');
    for (const phase of ['packages', 'bundle']) {
      expect(runs).toContain(`npx tsx functions/worker/build-image.ts ${phase} ${WORKER_IMAGE.taskRoot}`);
    }
    expect(stages[1]).toContain(`COPY --from=build ${WORKER_IMAGE.taskRoot} ${WORKER_IMAGE.taskRoot}`);
    // The first phase runs before the sources are copied: it gets the script, its settings and the entry point.
    const early = named('COPY').find((line) => line.includes('build-image.ts')) ?? '';
    for (const file of ['build-image.ts', 'image-settings.ts', WORKER_IMAGE.entrypoint]) {
      expect(early).toContain(`functions/worker/${file}`);
    }
  });

  it('starts the entry point in the task root with the handler as CMD, and LAMBDA_TASK_ROOT as Lambda sets it', () => {
    expect(named('ENTRYPOINT').map((value) => JSON.parse(value))).toEqual([
      [`${WORKER_IMAGE.taskRoot}/${WORKER_IMAGE.entrypoint}`],
    ]);
    expect(named('CMD').map((value) => JSON.parse(value))).toEqual([[WORKER_IMAGE.handler]]);
    expect(named('ENV').join(' ')).toContain(`LAMBDA_TASK_ROOT=${WORKER_IMAGE.taskRoot}`);
    expect(named('WORKDIR').at(-1)).toBe(WORKER_IMAGE.taskRoot);
  });

  it('installs the build tools in the build stage and the audio tools in the image', () => {
    expect(aptInstalls(stages[0] ?? []).sort()).toEqual([...WORKER_IMAGE.buildPackages].sort());
    expect(aptInstalls(stages[1] ?? []).sort()).toEqual([...WORKER_IMAGE.runtimePackages].sort());
  });

  it('has local/setup.mjs install the build tools on a fresh CI host, where the test runs the same build', () => {
    const setup = readFileSync(join(ROOT, 'local', 'setup.mjs'), 'utf8');
    for (const name of WORKER_IMAGE.buildPackages) expect(setup).toContain(`package: '${name}'`);
  });

  it('keeps the entry point executable in git, since COPY keeps the mode it finds', () => {
    const entry = execFileSync('git', ['ls-files', '-s', `functions/worker/${WORKER_IMAGE.entrypoint}`], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    // Untracked while it is being written; once committed, git must record it as executable.
    if (entry) expect(entry.split(' ')[0]).toBe('100755');
  });

  it('is built by a CDK CLI that turns off the attestation manifests Lambda refuses', () => {
    // cdk-assets runs `docker build` with BUILDX_NO_DEFAULT_ATTESTATIONS=1; a CLI upgrade that stops
    // doing so must fail here, since Lambda takes a single-platform image manifest only.
    const cli = readFileSync(join(ROOT, 'node_modules', 'aws-cdk', 'lib', 'index.js'), 'utf8');
    expect(cli).toMatch(/BUILDX_NO_DEFAULT_ATTESTATIONS:\s*"1"/);
  });
});
