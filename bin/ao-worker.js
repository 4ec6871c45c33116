#!/usr/bin/env node
// The agent-orchestrator process of the `ao` target (started, restarted and stopped by
// src/targets/ao/target.ts). Like bin/reference-worker.js it runs the TypeScript sources
// through tsx and loads only what it needs: AO's packages and the stand-in plugins.
import { register } from 'tsx/esm/api';

register();
await import('../src/targets/ao/child.ts');
