#!/usr/bin/env node
// A matrix child process: the parent (src/matrix/pool.ts) forks this file with an IPC channel and
// sends it runs, one at a time. Like bin/fleetbench.js it starts from the package's compiled
// modules, the cached bundle or the sources through tsx (cli-bundle.js): a child does not inherit
// the loader its parent may run under.
import { runEntry } from './cli-bundle.js';

await runEntry('matrix-child');
