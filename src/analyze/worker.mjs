// Worker threads do not inherit the tsx loader the main thread runs under (bin/fleetbench.js
// registers it in-process), so each worker registers it before loading its TypeScript code.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
