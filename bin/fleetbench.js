#!/usr/bin/env node
// Runs the TypeScript sources with no build step between a clone and a run: from a bundle of them
// cached under node_modules/.cache (rebuilt when a source changes), or through tsx's loader.
// See cli-bundle.js. The program itself (src/cli/main.ts) takes its streams and environment;
// this file gives it the process's, and owns what only a process has: its exit code and pipes.
import { loadCli } from './cli-bundle.js';

// `fleetbench analyze t.jsonl | head`: a closed pipe ends the output, it is not an error.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});
// stderr carries progress and notices, never the result: once its reader is gone (`2>&1 |
// head -1`), they go nowhere and the command carries on (a live run completes and writes its
// summary; it used to die of the EPIPE as if interrupted).
process.stderr.on('error', (error) => {
  if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
});

const { main } = await loadCli();
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
// Everything a command opens is closed before main returns. Should something still hold the
// process 10 s later (a leaked socket, a child's pipe), the command's outcome is already written:
// say so and leave with its exit code rather than hang (docs/limits.md, "Runs"). The timer is
// unref'd, so a process with nothing left open exits at once, as before.
setTimeout(() => {
  process.stderr.write(
    'fleetbench: the command has ended, but something it opened was still open 10 s later (a bug: please report it); exiting\n',
  );
  process.exit();
}, 10_000).unref();
