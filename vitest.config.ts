import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-emulators.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    setupFiles: ['test/helpers/emulator-env.ts'],
    // A guard against hangs, not a speed check: the machine may be shared, and end-to-end tests transcribe.
    testTimeout: 240_000,
    hookTimeout: 120_000,
    env: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true', AWS_REGION: 'us-east-1' },
  },
});
