/**
 * The full 54-cell A2 matrix in virtual time, through the real CLI as a user runs it:
 * `fleetbench matrix --cells all --jobs 1` (the reference: one core) and `--jobs 2`. Figures:
 * wall time, the speed-up of 2 jobs over 1, and run time simulated per wall second (the same
 * matrix in real time would take the sum of the cells' durations). Then where the time goes:
 * process start, and every cell run in this process one after the other, engine and analysis
 * timed apart.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Baseline } from '../src/results/baseline.ts';
import { executeRun } from '../src/run/pipeline.ts';
import { planRun } from '../src/run/plan.ts';
import { allCells } from '../src/workload/cells.ts';
import { envInteger } from './env.ts';
import type { Bench } from './run.ts';
import { timedNode } from './timed.ts';

const BIN = fileURLToPath(new URL('../bin/fleetbench.js', import.meta.url));
const TARGET_S = 60;

function load(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

/** The CLI under /usr/bin/time (bench/timed.ts). */
const cli = (args: string[]) => timedNode([BIN, ...args]);

const bench: Bench = {
  name: 'matrix',
  description: 'the full 54-cell A2 matrix in virtual time, --jobs 1 against --jobs 2',
  async run() {
    const dir = mkdtempSync(join(tmpdir(), 'fleetbench-matrix-bench-'));
    const figures: Record<string, number | string> = {};
    try {
      console.log(`load average at start: ${load()}\n`);
      const startMs = (await cli(['--version'])).wallMs;
      // Rounds alternate which goes first (1, 2 then 2, 1, ...): the machine is shared, and
      // drift in what else runs on it then falls on both sides.
      const rounds = envInteger('MATRIX_BENCH_ROUNDS', 2, 1, 100);
      const samples: Record<number, Array<{ wallMs: number; cpuS: number; runsMs: number; load: string }>> = {
        1: [],
        2: [],
      };
      let simulatedMs = 0;
      let cells = 0;
      for (let round = 0; round < rounds; round++) {
        for (const jobs of round % 2 === 0 ? [1, 2] : [2, 1]) {
          const out = join(dir, `r${round}-jobs${jobs}`);
          const loadBefore = load();
          const run = await cli(['matrix', '--cells', 'all', '--jobs', String(jobs), '--out', out]);
          const b: Baseline = JSON.parse(readFileSync(join(out, 'baseline.json'), 'utf8'));
          cells = b.units.length;
          simulatedMs = b.units.reduce((n, u) => n + (u.runs[0]?.analysis.run.durationMs ?? 0), 0);
          const runsMs = Object.values(b.timing.runs).reduce((n, ms) => n + ms, 0);
          samples[jobs]!.push({ ...run, runsMs, load: loadBefore });
          rmSync(out, { recursive: true, force: true });
        }
      }
      const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)]!;
      const wall = (jobs: number) => med(samples[jobs]!.map((x) => x.wallMs));
      console.log(
        '| run | cells | wall s (median) | wall s per round | speed-up | run time simulated | run-s per wall-s | Σ per-run wall s (in children) | CPU s (user+sys) | target | load average before each round |',
      );
      console.log('| --- | --: | --: | --- | --: | --: | --: | --: | --: | --- | --- |');
      for (const jobs of [1, 2]) {
        const xs = samples[jobs]!;
        const s = wall(jobs) / 1000;
        console.log(
          `| --jobs ${jobs} | ${cells} | ${s.toFixed(1)} | ${xs.map((x) => (x.wallMs / 1000).toFixed(1)).join(' / ')} | ${jobs === 1 ? '1.00× (reference)' : `${(wall(1) / wall(jobs)).toFixed(2)}×`} | ${(simulatedMs / 3_600_000).toFixed(1)} h | ${Math.round(simulatedMs / wall(jobs))}× | ${(med(xs.map((x) => x.runsMs)) / 1000).toFixed(1)} | ${med(xs.map((x) => x.cpuS)).toFixed(1)} | ${jobs === 2 ? `< ${TARGET_S} s: ${s < TARGET_S ? 'met' : 'not met'}` : '–'} | ${xs.map((x) => x.load.split(' ')[0]).join(' / ')} |`,
        );
        figures[`jobs ${jobs} wall s`] = Number(s.toFixed(1));
        figures[`jobs ${jobs} CPU s`] = Number(med(xs.map((x) => x.cpuS)).toFixed(1));
      }
      figures['speed-up'] = Number((wall(1) / wall(2)).toFixed(2));

      // Where the time goes: every cell in this process, one after the other.
      let engineMs = 0;
      let analysisMs = 0;
      let slowest = { id: '', ms: 0 };
      const inProcess = join(dir, 'in-process');
      for (const cell of allCells()) {
        const done = await executeRun(planRun(cell.id, [], join(inProcess, cell.id)));
        engineMs += done.runMs;
        analysisMs += done.summaryMs;
        if (done.wallMs > slowest.ms) slowest = { id: cell.id, ms: done.wallMs };
      }
      console.log(
        `\nProfile (one process, cells in sequence; load average ${load()}):\n\n| part | s | share |\n| --- | --: | --: |`,
      );
      const total = engineMs + analysisMs;
      console.log(
        `| process start (\`fleetbench --version\`) | ${(startMs / 1000).toFixed(2)} | per process |`,
      );
      console.log(
        `| engine (54 virtual runs, trace written) | ${(engineMs / 1000).toFixed(1)} | ${((100 * engineMs) / total).toFixed(0)}% |`,
      );
      console.log(
        `| analysis of the 54 traces + summary.json | ${(analysisMs / 1000).toFixed(1)} | ${((100 * analysisMs) / total).toFixed(0)}% |`,
      );
      console.log(`| slowest cell | ${(slowest.ms / 1000).toFixed(2)} | ${slowest.id} |`);
      figures['process start s'] = Number((startMs / 1000).toFixed(2));
      figures['engine s (sequential)'] = Number((engineMs / 1000).toFixed(1));
      figures['analysis s (sequential)'] = Number((analysisMs / 1000).toFixed(1));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return figures;
  },
};

export default bench;
