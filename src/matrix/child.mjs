// A matrix child process: the parent forks this file with an IPC channel and sends it runs, one
// at a time. It starts from the CLI's cached bundle (bin/cli-bundle.js), else from the
// sources through tsx: a child does not inherit the loader its parent may run under.
import { runEntry } from '../../bin/cli-bundle.js';

await runEntry('matrix-child');
