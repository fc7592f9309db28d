import type { TestProject } from 'vitest/node';
import { type EmulatorEndpoints, startEmulators } from '#local/emulators';
import { startWorkerPackagesBuild } from './worker-image.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    emulatorEndpoints: EmulatorEndpoints;
  }
}

/** Whether this run may include the worker image test: no file filter, or one it matches. */
function runsWorkerImageTest(): boolean {
  const filters = process.argv.slice(2).filter((arg) => !arg.startsWith('-') && arg !== 'run');
  return (
    filters.length === 0 || filters.some((filter) => 'test/integration/worker-image.test.ts'.includes(filter))
  );
}

/**
 * One DynamoDB Local and one fauxqs for the whole run; each test file makes its own resources. The
 * worker image's slow packages phase starts building at once, on the core the tests leave idle.
 */
export default async function setup(project: TestProject) {
  const stopBuild = runsWorkerImageTest() ? startWorkerPackagesBuild() : () => {};
  const emulators = await startEmulators();
  project.provide('emulatorEndpoints', emulators.endpoints);
  return async () => {
    stopBuild();
    await emulators.stop();
  };
}
