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

const script = join(dir, 'probe.mts');
writeFileSync(
  script,
  `import { Worker } from 'node:worker_threads';
import { analyzeFile } from ${JSON.stringify(join(root, 'src/analyze/file.ts'))};
const trace = process.argv[2]!;
const { threads } = await analyzeFile(trace, { threads: 2 });
console.log('@threads', threads);
// A worker started after the analysis, with hot functions to compile: V8 may inline the
// small one into the loop's, or compile either alone; both are named probe*.
await new Promise((resolve) => {
  const worker = new Worker('function probeStep(i) { return (i * 7) % 13; } function probeLoop() { let s = 0; for (let i = 0; i < 1e6; i++) s += probeStep(i); return s; } let s = 0; for (let k = 0; k < 20; k++) s += probeLoop(); require("node:worker_threads").parentPort.postMessage(s);', { eval: true });
  worker.once('message', resolve);
});
`,
);
// A trace long enough for both threads' hot code to be optimized.
const trace = join(dir, 'trace.jsonl');
writeSyntheticTrace(trace, { records: 30_000 });

/**
 * The probe run in a child with V8's --trace-opt (and `options`): a function name → the modes
 * of its TurboFan compiles. V8 prints its trace through a buffer of its own, with no order
 * against console.log to go by, so compiles are told apart by function.
 */
function compileModes(options: string[]): (name: RegExp) => Set<string> {
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--trace-opt', ...options, script, trace], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(child.status, child.stderr).toBe(0);
  expect(child.stdout).toContain('@threads 2');
  return (name) =>
    new Set(
      [...child.stdout.matchAll(/compiling method .*?<JSFunction (\S+) .*?mode: ConcurrencyMode::(k\w+)/g)]
        .filter((m) => name.test(m[1]!))
        .map((m) => m[2]!),
    );
}

describe('analysis workers', () => {
  it('compile synchronously, and leave concurrent compiles to every other isolate', () => {
    const modes = compileModes([]);
    // The scanner's record filler (generated JavaScript beside its WebAssembly half) is hot on
    // both threads: synchronous in the worker, concurrent on this thread.
    expect(modes(/^fillApiRecord$/)).toEqual(new Set(['kSynchronous', 'kConcurrent']));
    // A worker started after the analysis compiles concurrently again.
    expect(modes(/^probe(Step|Loop)$/)).toEqual(new Set(['kConcurrent']));
  });

  it("leave a process's own synchronous compiles as they are", () => {
    // V8's other spelling of the flag: the process asked for it, the analysis must not undo it.
    const modes = compileModes(['--no_concurrent_recompilation']);
    expect(modes(/^fillApiRecord$/)).toEqual(new Set(['kSynchronous']));
    expect(modes(/^probe(Step|Loop)$/)).toEqual(new Set(['kSynchronous']));
  });
});
