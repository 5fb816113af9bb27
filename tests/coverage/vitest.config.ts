/**
 * The transition-coverage check alone: `vitest run --config tests/coverage/vitest.config.ts`,
 * run by `npm test` after the main run, whose records it reads (see transition-coverage.ts).
 * Its own config so that running some test files by hand never runs, or fails, the check.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: ['tests/coverage/transition-coverage.check.ts'],
  },
});
