import { defineConfig } from 'vitest/config';

// The real Paperclip (`npm run test:paperclip`, docs/paperclip.md): tests that start its server,
// restart it and wait on its own wall-clock timers (a lost run is found after 5 minutes), kept out
// of `npm test` so that stays fast. .ci/run installs Paperclip and runs both.
export default defineConfig({
  test: {
    include: ['test/paperclip/**/*.test.ts'],
    pool: 'forks',
    // Each file boots its own servers (~10 CPU-s a boot) and then mostly waits.
    maxWorkers: 3,
    setupFiles: ['test/setup.ts'],
    testTimeout: 20 * 60_000,
    hookTimeout: 5 * 60_000,
  },
});
