import type { TestProject } from 'vitest/node';
import { type EmulatorEndpoints, startEmulators } from '#local/emulators';

declare module 'vitest' {
  export interface ProvidedContext {
    emulatorEndpoints: EmulatorEndpoints;
  }
}

/** One DynamoDB Local and one fauxqs for the whole run; each test file makes its own resources. */
export default async function setup(project: TestProject) {
  const emulators = await startEmulators();
  project.provide('emulatorEndpoints', emulators.endpoints);
  return () => emulators.stop();
}
