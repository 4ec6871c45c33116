/**
 * `fleetbench compare A B`: did B get worse than A beyond run-to-run noise? A and B are results
 * (run or matrix directories, summary.json, baseline.json) or, to run them here, cells/scenarios
 * with their own --set overrides, repeated with different seeds. Exit 99 on a significant
 * regression of a judged metric, 4 when too few runs a side could show any.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import {
  type Comparison,
  compareResults,
  type MetricComparison,
  refuseIncomplete,
} from '../matrix/compare.ts';
import type { MatrixOutcome, MatrixSpec } from '../matrix/run.ts';
import { columns, fmtNum, textColumn, textTable } from '../report/table.ts';
import { checkResultTraces } from '../results/judge-inputs.ts';
import { loadResults, type ResultSet } from '../results/results.ts';
import { runMatricesInteractive } from './matrix.ts';
import { collect, defaultJobs, parseCount, parseSeed, TARGET_JOBS_NOTE, withTarget } from './options.ts';
import type { CommandIo } from './output.ts';

interface CompareFlags {
  target?: string;
  repeat?: string;
  set: string[];
  setA: string[];
  setB: string[];
  seed?: string;
  jobs?: string;
  out?: string;
  alpha: string;
  minChange: string;
  all?: boolean;
  json?: boolean;
}

const DEFAULT_REPEATS = 6;

function fmtValue(v: number | null): string {
  if (v === null) return '–';
  const abs = Math.abs(v);
  return fmtNum(v, abs >= 100 ? 0 : abs >= 1 ? 2 : 3);
}

function sideText(values: number[], med: number | null): string {
  if (med === null) return '–';
  if (values.length < 2) return fmtValue(med);
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return lo === hi ? `${fmtValue(med)} (all)` : `${fmtValue(med)} (${fmtValue(lo)}–${fmtValue(hi)})`;
}

export function changeText(change: number | null): string {
  if (change === null) return '–';
  if (!Number.isFinite(change)) return change > 0 ? '+∞ (from 0)' : '−∞';
  if (change === 0) return '0%';
  return `${change > 0 ? '+' : '−'}${fmtNum(Math.abs(change) * 100, 1)}%`;
}

const VERDICT_TEXT: Record<MetricComparison['verdict'], string> = {
  regression: '✗ REGRESSION',
  improvement: '✓ improvement',
  'no change': 'no change (within noise)',
  negligible: 'negligible (significant, below min-change)',
  untested: 'untested (one run a side)',
  inconclusive: 'inconclusive (too few runs a side to tell)',
  'only in A': 'only in A',
  'only in B': 'only in B',
  'in neither': 'in neither (no value on either side)',
};

function metricRow(m: MetricComparison): string[] {
  return [
    `${m.def.title} (${m.def.unit}, ${m.def.better} is better)${m.def.judged ? ' *' : ''}`,
    sideText(m.a, m.medianA),
    sideText(m.b, m.medianB),
    changeText(m.change),
    m.pAdjusted === null ? '–' : m.pAdjusted < 0.001 ? '<0.001' : fmtNum(m.pAdjusted, 3),
    VERDICT_TEXT[m.verdict],
  ];
}

function interesting(m: MetricComparison): boolean {
  return (
    m.def.judged || m.verdict === 'regression' || m.verdict === 'improvement' || m.verdict.startsWith('only')
  );
}

export function renderComparison(c: Comparison, all: boolean): string {
  const out = ['', `fleetbench compare`, `  A: ${c.a}`, `  B: ${c.b}`, ''];
  for (const u of c.units) {
    out.push(
      `${u.heading}  (A: ${u.runsA} run${u.runsA === 1 ? '' : 's'}, B: ${u.runsB} run${u.runsB === 1 ? '' : 's'})`,
    );
    const shown = all ? u.metrics : u.metrics.filter(interesting);
    out.push(
      ...textTable(
        [
          ...columns('metric (* judged)', 'A median (range)', 'B median (range)', 'change', 'p (Holm)'),
          textColumn('verdict'),
        ],
        shown.map(metricRow),
        '  ',
      ),
    );
    const hidden = u.metrics.length - shown.length;
    if (hidden > 0) out.push(`  + ${hidden} reported metrics with no significant change (--all shows them)`);
    out.push('');
  }
  for (const note of c.notes) out.push(`  note: ${note}`);
  out.push(`  method: ${c.method}; α = ${c.alpha}, min-change = ${fmtNum(c.minChange * 100, 1)}%`, '');
  if (c.regressions.length > 0) {
    out.push(
      `verdict: REGRESSION: B is worse than A beyond run-to-run noise on ${c.regressions.length} judged metric${c.regressions.length === 1 ? '' : 's'}:`,
      ...c.regressions.map(
        (m) =>
          `  ${m.unit}: ${m.def.title} ${fmtValue(m.medianA)} → ${fmtValue(m.medianB)} ${m.def.unit} (${changeText(m.change)}, p = ${fmtNum(m.pAdjusted, 4)})`,
      ),
    );
  } else if (c.oneSided && !c.inconclusive) {
    out.push(
      `verdict: inconclusive: ${c.oneSided.length} judged metric${c.oneSided.length === 1 ? ' has' : 's have'} a value on one side only and could not be compared (see the note)`,
    );
  } else if (c.inconclusive) {
    const { runsPerSide, repeatsNeeded } = c.inconclusive;
    out.push(
      `verdict: inconclusive: ${runsPerSide} run${runsPerSide === 1 ? '' : 's'} per side cannot show a change at this alpha; use --repeat ≥ ${repeatsNeeded}`,
    );
  } else {
    const improvements = c.units
      .flatMap((u) => u.metrics)
      .filter((m) => m.def.judged && m.verdict === 'improvement');
    out.push(
      improvements.length > 0
        ? `verdict: no judged metric got worse; ${improvements.length} improved beyond noise`
        : 'verdict: no judged metric changed beyond run-to-run noise',
    );
  }
  return `${out.join('\n')}\n`;
}

/** A side given as a path is read; otherwise it is a cell selection or scenario to run. */
function isResultPath(ref: string): boolean {
  return existsSync(ref);
}

function maxSeed(set: ResultSet): number | undefined {
  const seeds = set.units.flatMap((u) => u.runs.map((r) => r.seed)).filter((s): s is number => s !== null);
  return seeds.length > 0 ? Math.max(...seeds) : undefined;
}

export function register(program: Command, io: CommandIo): void {
  program
    .command('compare')
    .description('compare two sets of results per metric, with a verdict beyond run-to-run noise')
    .argument(
      '<A>',
      'before: a run or matrix directory, summary.json or baseline.json; or a cell/scenario to run',
    )
    .argument('<B>', 'after: the same kinds')
    .option(
      '--repeat <n>',
      `runs per side when A or B is run here, seeds differ (default ${DEFAULT_REPEATS})`,
    )
    .option('--set <key=value>', 'override for both sides when run here (repeatable)', collect, [])
    .option('--set-a <key=value>', 'override for side A only (repeatable)', collect, [])
    .option('--set-b <key=value>', 'override for side B only (repeatable)', collect, [])
    .option('--seed <n>', 'first seed of side A; side B continues after A’s last seed')
    .option('--jobs <n>', 'child processes for the runs (default: the number of cores)')
    .option('--target <target>', `shorthand for --set target=... (both sides run here); ${TARGET_JOBS_NOTE}`)
    .option(
      '--out <dir>',
      'where runs go (A/ and B/, each a matrix directory)',
      join('fleetbench-out', 'compare'),
    )
    .option('--alpha <p>', 'family-wise error rate of each family of tests', '0.05')
    .option('--min-change <percent>', 'smallest change of the median that counts as a change', '5')
    .option('--all', 'show every metric, not only judged ones and significant changes')
    .option('--json', 'print the comparison as JSON')
    .addHelpText(
      'after',
      `
Examples:
  fleetbench compare runs/before runs/after          # two matrix or run directories
  fleetbench compare S2-T1-50 S2-T1-50 --set-b polling.strategy=naive --repeat 6
  fleetbench compare priority priority --set-b polling.concurrency=1
  fleetbench compare runs/before/baseline.json S2-T1-50 --repeat 6   # a baseline against the code as it is

Judged metrics (*) are the Track B scorecard rows; a regression of one beyond noise exits 99.
Statistics: docs/matrix.md#compare. Exit codes: 0 no judged regression, 2 bad input, 3 a run on a side did not complete (never compared), 4 inconclusive (too few runs a side to show any judged change at this --alpha: it says how many would; or a judged metric measured on one side only), 99 regression.`,
    )
    .action(async (refA: string, refB: string, flags: CompareFlags) => {
      const alpha = Number(flags.alpha);
      if (!(alpha > 0 && alpha < 1))
        throw new FleetbenchError(
          'E_USAGE',
          `--alpha: expected a number between 0 and 1, got '${flags.alpha}'`,
        );
      const minChange = Number(flags.minChange) / 100;
      // Infinity (or 1e400) would call every significant change negligible: a regression, exit 0.
      if (!(minChange >= 0 && Number.isFinite(minChange)))
        throw new FleetbenchError('E_USAGE', `--min-change: expected a percentage, got '${flags.minChange}'`);
      const repeats = parseCount('--repeat', flags.repeat, DEFAULT_REPEATS);
      const jobs = parseCount('--jobs', flags.jobs, defaultJobs(flags.target));
      flags.set = withTarget(flags.set, flags.target);
      const outDir = flags.out ?? join('fleetbench-out', 'compare');
      const seed = parseSeed(flags.seed);
      const pathA = isResultPath(refA);
      const pathB = isResultPath(refB);
      if (
        (pathA && flags.setA.length > 0) ||
        (pathB && flags.setB.length > 0) ||
        (pathA && pathB && flags.set.length > 0)
      ) {
        throw new FleetbenchError(
          'E_USAGE',
          '--set, --set-a and --set-b apply to a side that is run here, not to results read from disk',
        );
      }
      if (pathA && pathB && flags.repeat !== undefined) {
        throw new FleetbenchError(
          'E_USAGE',
          '--repeat applies to a side that is run here; A and B are both results on disk',
        );
      }

      const spec = (ref: string, side: 'A' | 'B', sets: string[]): MatrixSpec => ({
        selection: ref,
        overrides: [...flags.set, ...sets],
        repeats,
        outDir: join(outDir, side),
        label: side,
      });
      const label = (ref: string, s: MatrixSpec, outcome: MatrixOutcome) =>
        `${ref}${(s.overrides ?? []).map((o) => ` --set ${o}`).join('')} (${repeats} runs a cell, seeds ${outcome.baseline.units[0]?.runs.map((r) => r.seed).join(',') ?? ''}; ${s.outDir})`;
      const run = async (sides: MatrixSpec[]) => {
        const { outcomes, interrupted } = await runMatricesInteractive(io, sides, jobs, 'compare');
        if (interrupted)
          throw new FleetbenchError('E_USAGE', 'interrupted', { exitCode: ExitCode.interrupted });
        return outcomes.map((outcome, i) => ({
          ...loadResults(sides[i]!.outDir),
          source: label(sides[i]!.selection, sides[i]!, outcome),
        }));
      };

      let a: ResultSet;
      let b: ResultSet;
      if (pathA && pathB) {
        a = loadResults(refA);
        b = loadResults(refB);
      } else if (pathA) {
        a = loadResults(refA);
        [b] = (await run([{ ...spec(refB, 'B', flags.setB), seed: seed ?? nextSeed(a) }])) as [ResultSet];
      } else if (pathB) {
        b = loadResults(refB);
        [a] = (await run([{ ...spec(refA, 'A', flags.setA), seed: seed ?? nextSeed(b) }])) as [ResultSet];
      } else {
        // Disjoint seeds: B starts where A's repeats end, so the sides are independent samples.
        [a, b] = (await run([
          { ...spec(refA, 'A', flags.setA), seed },
          { ...spec(refB, 'B', flags.setB), seed, seedOffset: repeats },
        ])) as [ResultSet, ResultSet];
      }

      // As check reads them: runs that did not complete first, then a side's summaries and
      // baselines beside their runs' traces.
      for (const set of [a, b]) refuseIncomplete(set);
      for (const set of [a, b]) await checkResultTraces(set);
      const comparison = compareResults(a, b, { alpha, minChange });
      io.stdout.write(
        flags.json
          ? `${JSON.stringify(comparison, jsonNumbers, 2)}\n`
          : renderComparison(comparison, flags.all === true),
      );
      if (comparison.regressions.length > 0) io.exitCode = ExitCode.budgetBreached;
      else if (comparison.inconclusive || comparison.oneSided) io.exitCode = ExitCode.inconclusive;
    });
}

function nextSeed(set: ResultSet): number | undefined {
  const max = maxSeed(set);
  return max === undefined ? undefined : max + 1;
}

/** JSON has no Infinity: a change from 0 is written as a string. */
function jsonNumbers(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value))
    return value > 0 ? 'Infinity' : value < 0 ? '-Infinity' : 'NaN';
  return value;
}
