#!/usr/bin/env node
// One control-plane process of `fleetbench reference serve` (started and killed by its
// supervisor, src/reference/supervisor.ts). Like bin/fleetbench.js it starts from the cached
// bundle (cli-bundle.js), else the sources through tsx, and loads only the control plane, so a
// restart is quick.
import { runEntry } from './cli-bundle.js';

await runEntry('reference-worker');
