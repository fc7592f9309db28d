import type { Reporter, TestModule } from 'vitest/node';

/** Ends the run with the plain `tests: N passed, N failed, N skipped` line that CI reads. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const testModule of testModules) {
      let failedTests = 0;
      for (const test of testModule.children.allTests()) {
        const { state } = test.result();
        if (state === 'passed') counts.passed += 1;
        else if (state === 'failed') failedTests += 1;
        else counts.skipped += 1;
      }
      // A file that failed outside its tests (loading, a hook) counts as a failure even when no test did.
      counts.failed += testModule.state() === 'failed' ? Math.max(1, failedTests) : failedTests;
    }
    console.log(`\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  }
}
