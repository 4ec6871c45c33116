// A matrix child process: the parent forks this file with an IPC channel and sends it runs, one
// at a time. Child processes do not inherit the tsx loader bin/fleetbench.js registers
// in-process, so the child registers it before loading its TypeScript code.
import { register } from 'tsx/esm/api';

register();
await import('./child.ts');
