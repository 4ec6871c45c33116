/**
 * Analysis workers compile their optimized code synchronously (src/analyze/file.ts
 * runWorkers): the V8 flag that does it is set only while their isolates start, so the main
 * thread's isolate and any worker started afterwards keep concurrent compiles. Observed the
 * only way V8 shows it: --trace-opt, in a child process.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeSyntheticTrace } from '../bench/synthetic.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-workers-');
const root = join(import.meta.dirname, '..');

describe('analysis workers', () => {
  it('compile synchronously, and leave concurrent compiles to every other isolate', () => {
    const script = join(dir, 'probe.mts');
    writeFileSync(
      script,
      `import { Worker } from 'node:worker_threads';
import { analyzeFile } from ${JSON.stringify(join(root, 'src/analyze/file.ts'))};
const trace = process.argv[2]!;
const { threads } = await analyzeFile(trace, { threads: 2 });
console.log('@threads', threads);
// A worker started after the analysis: a hot function it compiles (named probeAfter).
await new Promise((resolve) => {
  const worker = new Worker('function probeAfter(i) { return (i * 7) % 13; } let s = 0; for (let i = 0; i < 3e6; i++) s += probeAfter(i); require("node:worker_threads").parentPort.postMessage(s);', { eval: true });
  worker.once('message', resolve);
});
`,
    );
    // A trace long enough for both threads' hot code to be optimized.
    const trace = join(dir, 'trace.jsonl');
    writeSyntheticTrace(trace, { records: 60_000 });
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--trace-opt', script, trace], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout).toContain('@threads 2');
    // V8 prints its trace through a buffer of its own: no order against console.log to go by,
    // so compiles are told apart by function. The scanner's straight-line function is hot on
    // both threads: synchronous in the worker, concurrent on this thread.
    const modes = (name: RegExp) =>
      new Set(
        [...child.stdout.matchAll(/compiling method .*?<JSFunction (\S+) .*?mode: ConcurrencyMode::(k\w+)/g)]
          .filter((m) => name.test(m[1]!))
          .map((m) => m[2]!),
      );
    expect(modes(/^straight\d+$/)).toEqual(new Set(['kSynchronous', 'kConcurrent']));
    // A worker started after the analysis compiles concurrently again.
    expect(modes(/^probeAfter$/)).toEqual(new Set(['kConcurrent']));
  });
});
