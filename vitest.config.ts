import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: run test files on both, but never more (servers and subprocesses share them).
    maxWorkers: 2,
    pool: 'forks',
  },
});
