import { defineConfig } from 'vitest/config';
import { WaitingApartSequencer } from './test/sequencer.ts';

// Two projects (docs/contributing.md): `unit` runs the CLI in-process (test/helpers/cli.ts `cli()`)
// and everything else; `e2e` (test/e2e/) runs the real bin as a process: signals, exit codes as
// a process, pipes, the bundle and the packaged install, with timeouts of their own.
export default defineConfig({
  test: {
    // Three files at once on two cores: the longest files (the real AO, the live waves, the
    // segmented live run) mostly wait on real clocks, and with two workers they ran side by side
    // while the CPU idled (`vitest run` 174 s; 137 s with three, 135 s with four).
    maxWorkers: 3,
    // ... and the files that wait are spread among those that compute (test/sequencer.ts).
    sequence: { sequencer: WaitingApartSequencer },
    pool: 'forks',
    // Transformed modules cached on disk between runs (node_modules/.experimental-vitest-cache,
    // keyed by content): transform + import 32 → 17 s of worker time, `npm test` 127-130 →
    // 122-123 s warm (docs/contributing.md). A fresh clone starts with an empty cache.
    experimental: { fsModuleCache: true },
    // Removes each file's scratch directories (test/helpers/tmp.ts), isolated or not.
    setupFiles: ['test/setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          // test/paperclip/ drives the real Paperclip: its own config (npm run test:paperclip).
          exclude: ['test/e2e/**', 'test/paperclip/**'],
          // One module graph per worker instead of one per file: importing src/ (~1-3 s of
          // CPU a file) was a third of the suite's CPU. Tests therefore keep no state in
          // modules they share (helpers keep per-file state behind setup.ts, and nothing
          // assigns process.env); docs/contributing.md says so.
          isolate: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
