import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that need the machine to themselves: races and storms whose assertions assume
 * idle cores (a swapper process against the sandbox, a fork storm against proc-tracking, the
 * benchmarks at smoke size, ssh keep-alive deadlines). They run one at a time, after the
 * others. See docs/testing.md, "Scheduling".
 */
const exclusiveTestFiles = [
  'tests/integration/sandbox-races.test.ts',
  'tests/integration/proc-tracking.test.ts',
  'tests/integration/bench-smoke.test.ts',
  'tests/integration/ssh-runtime.test.ts',
];

/**
 * Longest first. Vitest orders files by their durations in the last run, and files it has
 * no duration for by size, largest first; that would start the model tests (small files,
 * the longest runs) last on a fresh checkout, and leave one core idle at the end.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const untimedModelTest = (spec: TestSpecification) =>
      spec.moduleId.includes('/tests/model/') && !this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`);
    return [...sorted.filter(untimedModelTest), ...sorted.filter((spec) => !untimedModelTest(spec))];
  }
}

export default defineConfig({
  test: {
    // Integration tests spawn real processes; forks keep each file's children apart.
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Supervisors record their agent processes in a state directory (docs/containment.md):
    // the tests' records go to a scratch folder, never to the real ~/.local/state.
    env: { XDG_STATE_HOME: join(tmpdir(), 'agentvisor-test-state') },
    // Transition coverage: model and integration test files record what the real machines
    // take; `npm test` then runs tests/coverage/vitest.config.ts to check it.
    setupFiles: ['tests/coverage/transition-recorder.setup.ts'],
    globalSetup: ['tests/coverage/clear-records.global-setup.ts'],
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        // Two files at a time: vitest's default on 2 cores is one, and most of a file's time
        // is spent waiting for processes, so a second file uses the idle core.
        test: { name: 'parallel', include: ['tests/**/*.test.ts'], exclude: exclusiveTestFiles, maxWorkers: 2 },
      },
      {
        extends: true,
        // A project with maxWorkers 1 runs as a sequential group of its own, after the others.
        test: { name: 'exclusive', include: exclusiveTestFiles, maxWorkers: 1 },
      },
    ],
  },
});
