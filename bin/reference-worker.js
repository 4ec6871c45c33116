#!/usr/bin/env node
// One control-plane process of `fleetbench reference serve` (started and killed by its
// supervisor, src/reference/supervisor.ts). Like bin/fleetbench.js it runs the TypeScript
// sources through tsx, but loads only the control plane, so a restart is quick.
import { register } from 'tsx/esm/api';

register();
await import('../src/reference/worker-main.ts');
