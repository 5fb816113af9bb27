import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
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
  },
});
