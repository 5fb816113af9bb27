import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // Integration tests spawn real processes; forks keep each file's children apart.
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Transition coverage: model and integration test files record what the real machines
    // take; `npm test` then runs tests/coverage/vitest.config.ts to check it.
    setupFiles: ['tests/coverage/transition-recorder.setup.ts'],
    globalSetup: ['tests/coverage/clear-records.global-setup.ts'],
  },
});
