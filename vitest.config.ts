import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-emulators.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    setupFiles: ['test/helpers/emulator-env.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true', AWS_REGION: 'us-east-1' },
  },
});
