#!/usr/bin/env node
// The agent-orchestrator process of the `ao` target (started, restarted and stopped by
// src/targets/ao/target.ts). Like bin/fleetbench.js it starts from the cached bundle
// (cli-bundle.js), else the sources through tsx, and loads only what it needs: AO's packages and
// the stand-in plugins.
import { runEntry } from './cli-bundle.js';

await runEntry('ao-child');
