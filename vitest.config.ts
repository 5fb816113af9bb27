import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // Integration tests spawn real processes; forks keep each file's children apart.
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
