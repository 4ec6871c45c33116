/**
 * `fleetbench matrix`: runs A2 cells (and built-in scenarios) in virtual time on a pool of child
 * processes and writes baseline.json and baseline.md, with per-cell run directories.
 */

import { join } from 'node:path';
import type { Command } from 'commander';
import { ExitCode } from '../base/errors.ts';
import { resolveSegment } from '../base/segment.ts';
import { keptSelector } from '../matrix/markdown.ts';
import { type Judge, type MatrixOutcome, type MatrixSpec, runMatrices } from '../matrix/run.ts';
import { SELECTOR_HELP } from '../matrix/select.ts';
import { fmtMs, textTable } from '../report/table.ts';
import type { Baseline } from '../results/baseline.ts';
import {
  budgetFooter,
  failingUnits,
  incompleteUnits,
  OVERVIEW_COLUMNS,
  overviewCells,
} from '../results/overview.ts';
import { onInterrupt } from './interrupt.ts';
import { runMatrixSegmentCommand } from './matrix-segment.ts';
import { collect, defaultJobs, parseCount, parseSeed, TARGET_JOBS_NOTE, withTarget } from './options.ts';
import type { CommandIo } from './output.ts';
import { createMatrixProgress } from './progress.ts';

interface MatrixFlags {
  target?: string;
  cells: string;
  jobs?: string;
  out?: string;
  seed?: string;
  set: string[];
  repeat: string;
  check?: boolean;
  segment?: string;
}

/**
 * Runs matrices (one, or the two sides of a comparison) on one pool, with a progress bar on
 * stderr and Ctrl-C handling: the first stops the running cells early and writes the baseline
 * with what finished (exit 130), the second leaves at once.
 */
export async function runMatricesInteractive(
  io: CommandIo,
  specs: MatrixSpec[],
  jobs: number,
  label = 'matrix',
  judge?: Judge,
): Promise<{ outcomes: MatrixOutcome[]; interrupted: boolean }> {
  const interrupt = onInterrupt(
    'stopping; running cells end early, the baseline is written with what finished',
    io,
  );
  const progress = createMatrixProgress(label, io);
  try {
    const outcomes = await runMatrices(specs, {
      jobs,
      judge,
      signal: interrupt.signal,
      onPlan: (runs) => progress.plan(runs),
      onStart: (_job, running) => progress.started(running),
      onDone: (result, running) => progress.done(result.job.key, result.wallMs, running),
    });
    return { outcomes, interrupted: interrupt.signal.aborted };
  } finally {
    progress.stop();
    interrupt.dispose();
  }
}

export function matrixTable(b: Baseline): string[] {
  return textTable(
    [...OVERVIEW_COLUMNS, { header: 'run time', align: 'right' }, { header: 'wall', align: 'right' }],
    b.units.map((u) => {
      const a = u.runs[0]?.analysis;
      if (!a) return [u.id, 'did not run'];
      const wall = u.runs.reduce((n, r) => n + (b.timing.runs[runKey(u.id, r.seed, b.repeats)] ?? 0), 0);
      return [...overviewCells(u, a), fmtMs(a.run.durationMs), fmtMs(wall)];
    }),
    '  ',
  );
}

export function runKey(unitId: string, seed: number, repeats: number): string {
  return repeats > 1 ? `${unitId}#${seed}` : unitId;
}

export function register(program: Command, io: CommandIo): void {
  program
    .command('matrix')
    .description('run the A2 cost matrix (scenario × topology × scale) in virtual time and write a baseline')
    .option('--cells <selector>', SELECTOR_HELP, 'all')
    .option('--jobs <n>', 'child processes running cells in parallel (default: the number of cores)')
    .option(
      '--out <dir>',
      'where baseline.json, baseline.md and cells/<id>/ go',
      join('fleetbench-out', 'matrix'),
    )
    .option('--seed <n>', 'seed of every cell (default: each scenario’s own); repeat i uses seed + i')
    .option('--repeat <n>', 'runs per cell with consecutive seeds (for compare’s noise estimate)', '1')
    .option('--set <key=value>', 'override a scenario field in every cell (repeatable)', collect, [])
    .option('--target <target>', `shorthand for --set target=...; ${TARGET_JOBS_NOTE}`)
    .option(
      '--check',
      'exit 99 when a cell fails a judged Track B rule or a judged row of its own budgets (without it: exit 0, the failures listed; demo checks by default)',
    )
    .option(
      '--segment <i/n>',
      'run only segment i of n (0-based; default: JOB_COMPLETION_INDEX and FLEETBENCH_SEGMENTS when set), then fleetbench merge (docs/distributed.md)',
    )
    .addHelpText(
      'after',
      `
Examples:
  fleetbench matrix                          # all 54 cells, one per core
  fleetbench matrix --cells priority --jobs 2
  fleetbench matrix --cells 'S2-*-50,S4-T1-10' --set polling.strategy=naive --out runs/naive
  fleetbench matrix --cells priority --repeat 5 --out runs/before   # then: fleetbench compare runs/before runs/after

Writes <out>/baseline.json (every metric of every run), <out>/baseline.md (one section per cell,
the pruning table) and <out>/cells/<id>/{trace.jsonl,summary.json}. See docs/matrix.md.
Exit codes: 0 done, 2 bad input, 99 a judged rule failed (--check), 3 a run did not complete (--check: not judged, never a pass), 130 interrupted.`,
    )
    .action(async (flags: MatrixFlags) => {
      const outDir = flags.out ?? join('fleetbench-out', 'matrix');
      const overrides = withTarget(flags.set, flags.target);
      const segment = resolveSegment(flags.segment, io.env);
      if (segment) {
        const spec = {
          selection: flags.cells,
          overrides,
          seed: parseSeed(flags.seed),
          repeats: parseCount('--repeat', flags.repeat, 1),
          outDir,
        };
        return runMatrixSegmentCommand(
          spec,
          segment,
          parseCount('--jobs', flags.jobs, defaultJobs(flags.target)),
          io,
        );
      }
      const { outcomes, interrupted } = await runMatricesInteractive(
        io,
        [
          {
            selection: flags.cells,
            overrides,
            seed: parseSeed(flags.seed),
            repeats: parseCount('--repeat', flags.repeat, 1),
            outDir,
          },
        ],
        parseCount('--jobs', flags.jobs, defaultJobs(flags.target)),
      );
      const outcome = outcomes[0]!;
      const b = outcome.baseline;
      const out: string[] = [
        '',
        `fleetbench matrix: ${b.units.length} units, ${b.repeats > 1 ? `${b.repeats} seeds each, ` : ''}${b.timing.jobs} jobs, ${fmtMs(b.timing.wallMs)} wall`,
        '',
      ];
      out.push(...matrixTable(b), '');
      const failing = failingUnits(b);
      out.push(`  ${budgetFooter(b)}`);
      // The matrix measures (a small cell may fail on a projection its 50-session sibling
      // holds); a CI gate asks for the exit code. Said where it is missed: beside the failures.
      if (!flags.check && !interrupted && failing.length > 0)
        out.push(
          `  exit 0 all the same: the matrix measures; --check exits 99 on a judged breach (as demo does by default), for CI`,
        );
      if (b.pruning) {
        const kept = b.pruning.decisions.filter((d) => d.kept);
        const alone = kept.filter((d) => d.neighbours.length === 0).length;
        out.push(
          `  pruning: ${kept.length} of ${b.pruning.decisions.length} cells kept: ${kept.length - alone} differ by more than 15% from an adjacent scale point${alone > 0 ? `, ${alone} have no adjacent scale point in this run` : ''} (baseline.md says why); keep: --cells ${keptSelector(b)}`,
        );
      }
      out.push(
        '',
        `  baseline..: ${outcome.markdownPath}`,
        `  json......: ${outcome.jsonPath}`,
        `  report....: fleetbench report ${outDir}`,
        '',
      );
      io.stdout.write(io.colourVerdicts(out.join('\n')));
      const incomplete = incompleteUnits(b);
      if (interrupted) io.exitCode = ExitCode.interrupted;
      else if (flags.check && failing.length > 0) io.exitCode = ExitCode.budgetBreached;
      else if (flags.check && incomplete.length > 0) {
        // A run that failed judged nothing: the gate does not pass it (as `check` refuses it).
        io.stderr.write(
          `fleetbench: ${incomplete.map((u) => u.id).join(', ')}: a run did not complete: not judged, so --check does not pass (exit 3)\n`,
        );
        io.exitCode = ExitCode.runFailed;
      }
    });
}
