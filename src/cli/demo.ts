/**
 * `fleetbench demo` (what `npm start` runs): the A2 priority cells, plus a chaos wave and a
 * turnover run when those scenarios are built in, on the embedded reference control plane in
 * virtual time; judged against the built-in budgets; baseline.md, baseline.json and report.html
 * under ./fleetbench-out/. One command that shows what fleetbench does.
 */
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { ExitCode } from '../base/errors.ts';
import { parseTarget, targetInfo } from '../contract/target-ref.ts';
import { columns, fmtInt, fmtMs, fmtNum, textColumn, textTable } from '../report/table.ts';
import { writeHtmlReport } from '../report-html/index.ts';
import type { Baseline } from '../results/baseline.ts';
import { scorecardCounts } from '../results/checks.ts';
import {
  failingUnits,
  incompleteUnits,
  projectionNotJudgedText,
  scorecardWords,
  trackBText,
} from '../results/overview.ts';
import { loadResults } from '../results/results.ts';
import { builtinScenarioNames } from '../workload/builtins.ts';
import { PRIORITY_CELLS } from '../workload/cells.ts';
import { runMatricesInteractive } from './matrix.ts';
import { collect, defaultJobs, parseCount, TARGET_JOBS_NOTE, withTarget } from './options.ts';
import type { CommandIo } from './output.ts';

/**
 * Runs beyond the cost cells, each joining the demo once its scenario is built in
 * (scenarios/<name>.yaml): a chaos wave for the speed budgets, a turnover run for park/wake.
 */
export const DEMO_EXTRAS = [
  {
    part: 'chaos-wave',
    name: 'chaos-codex-c4',
    what: 'a chaos wave (restart recovery against the native-speed budgets)',
  },
  { part: 'turnover', name: 'turnover', what: 'a turnover run (park/wake at a target swap rate)' },
] as const;

interface DemoFlags {
  target?: string;
  set: string[];
  out: string;
  jobs?: string;
  check?: boolean;
}

/**
 * What the demo runs on a target: the parts its kind offers (TARGET_KINDS' `demo`; e.g.
 * agent-orchestrator has no native runs or actors, so its demo is the cells).
 */
export function demoSelection(target?: string): { selection: string; missing: string[] } {
  const parts = targetInfo(parseTarget(target ?? 'reference')).demo;
  const builtins = builtinScenarioNames();
  const wanted = DEMO_EXTRAS.filter((e) => parts.includes(e.part));
  const extras = wanted.filter((e) => builtins.includes(e.name));
  return {
    selection: [...(parts.includes('cells') ? ['priority'] : []), ...extras.map((e) => e.name)].join(','),
    missing: wanted.filter((e) => !builtins.includes(e.name)).map((e) => e.what),
  };
}

function summaryLines(b: Baseline): string[] {
  return textTable(
    [
      textColumn('run'),
      ...columns(
        'Track B',
        'core points/h',
        'per session',
        'calls/session/cycle',
        'peak in flight',
        'max req/s (1 s)',
      ),
    ],
    b.units.map((u) => {
      const a = u.runs[0]?.analysis;
      if (!a) return [u.id, 'did not run'];
      const core = a.api.projection.byResource.core;
      return [
        u.id,
        trackBText(u, a),
        fmtNum(core?.pointsPerHour, 0),
        fmtNum(core?.perSessionPointsPerHour, 1),
        fmtNum(a.api.pollingFloor.perSessionCycle.all?.mean),
        fmtInt(a.api.concurrency.peak),
        fmtNum(a.api.burst.max1s?.perSecond),
      ];
    }),
    '  ',
  );
}

/** `chaos-codex-c4 native-speed, turnover turnover`: what the other runs were judged on. */
function budgetNames(b: Baseline): string {
  const others = b.units.filter((u) => !scorecardCounts(u.budgets));
  if (others.length === 0) return 'no other budget';
  return others
    .map((u) => {
      const sets = [...new Set((u.runs[0]?.checks ?? []).map((c) => c.budget))];
      return `${u.id} on ${sets.length > 0 ? sets.join(' + ') : 'no budget'}`;
    })
    .join(', ');
}

function failureLines(b: Baseline): string[] {
  return failingUnits(b).flatMap((u) => {
    const run = u.runs[0];
    if (!run) return [];
    const lines =
      scorecardCounts(u.budgets) && run.analysis.scorecard.verdict === 'fail'
        ? [`  ${u.id} ${scorecardWords(run.analysis)}`]
        : [];
    for (const c of run.checks ?? []) {
      if (c.judged && c.verdict === 'fail')
        lines.push(
          `  ${u.id} fails ${c.metric}${c.scope ? ` {${c.scope}}` : ''}: ${c.measured} (limit ${c.limit})`,
        );
    }
    return lines;
  });
}

export function register(program: Command, io: CommandIo): void {
  program
    .command('demo')
    .description('the main job: the A2 priority cells in virtual time, judged, with baseline and HTML report')
    .option('--out <dir>', 'where baseline.md, baseline.json, report.html and cells/ go', 'fleetbench-out')
    .option('--jobs <n>', 'child processes running cells in parallel (default: the number of cores)')
    .option(
      '--target <target>',
      `run the demo against another target (ao: the A2 priority cells only); ${TARGET_JOBS_NOTE}`,
    )
    .option('--set <key=value>', 'override a scenario field in every run (repeatable)', collect, [])
    .option('--no-check', 'exit 0 even when a run fails a judged budget (by default: exit 99)')
    // Kept for scripts written when judging was opt-in; it is the default now.
    .addOption(new Option('--check').hideHelp())
    .addHelpText(
      'after',
      `
Runs the 7 A2 priority cells (${PRIORITY_CELLS.join(', ')}),
${DEMO_EXTRAS.map((e) => `${e.name} (${e.what})`).join(' and ')}
against the embedded reference control plane in virtual time; judges the cells against the Track B
scorecard and the others against their scenario's budgets (native-speed, turnover); writes
<out>/baseline.md, <out>/baseline.json and <out>/report.html.
Exit codes: 0 every judged budget holds (or --no-check), 99 a judged budget failed, 3 a run did not complete (not judged), 130 interrupted.`,
    )
    .action(async (flags: DemoFlags) => {
      const started = performance.now();
      const { selection, missing } = demoSelection(flags.target);
      const outDir = flags.out;
      const jobs = parseCount('--jobs', flags.jobs, defaultJobs(flags.target));
      const overrides = withTarget(flags.set, flags.target);
      // The Track B scorecard is in every Analysis; the matrix judges each run against its own
      // scenario's other budgets (native-speed for the chaos wave, turnover for turnover).
      const { outcomes, interrupted } = await runMatricesInteractive(
        io,
        [{ selection, outDir, overrides }],
        jobs,
        'demo',
      );
      const outcome = outcomes[0]!;
      const b = outcome.baseline;
      const reportPath = join(outDir, 'report.html');
      writeHtmlReport(loadResults(outDir), reportPath, {
        title: `fleetbench demo: ${b.units.length} runs of ${flags.target ?? 'the reference control plane'}`,
      });
      const failing = failingUnits(b);
      const incomplete = incompleteUnits(b);
      const lines = [
        '',
        `fleetbench demo: ${b.units.length} runs ${flags.target ? `against ${flags.target}` : 'in virtual time'} on ${b.timing.jobs} job${b.timing.jobs === 1 ? '' : 's'}, ${fmtMs(performance.now() - started)} in all`,
        '',
        ...summaryLines(b),
        '',
        failing.length > 0
          ? `  Budgets: ${failing.length} of ${b.units.length} runs fail a judged budget:`
          : incomplete.length > 0
            ? `  Budgets: ${incomplete.length} of ${b.units.length} runs did not complete (${incomplete.map((u) => u.id).join(', ')}): not judged, never a pass.`
            : `  Budgets: all ${b.units.length} runs pass their budgets: the ${b.units.filter((u) => scorecardCounts(u.budgets)).length} cells on the Track B scorecard (API cost), ${budgetNames(b)}.`,
        ...failureLines(b),
        ...[projectionNotJudgedText(b)].flatMap((t) => (t ? [`  (${t}.)`] : [])),
      ];
      if (missing.length > 0) lines.push(`  Not in this build yet: ${missing.join('; ')}.`);
      lines.push(
        '',
        `  report......: ${reportPath}   (open it in a browser: charts and verdicts, offline)`,
        `  baseline....: ${outcome.markdownPath}`,
        `  json........: ${outcome.jsonPath}`,
        '',
        '  next: npx fleetbench matrix                   all 54 cells, with the pruning table',
        '        npx fleetbench compare S2-T1-50 S2-T1-50 --set-b polling.strategy=naive',
        '                                                 is the naive strategy worse, beyond noise?',
        '',
      );
      io.stdout.write(io.colourVerdicts(lines.join('\n')));
      if (interrupted) io.exitCode = ExitCode.interrupted;
      // Like a k6 threshold: a judged failure fails the command, unless --no-check.
      else if (flags.check !== false && failing.length > 0) io.exitCode = ExitCode.budgetBreached;
      // A run that did not complete judged nothing: as `check` refuses it (exit 3).
      else if (flags.check !== false && incomplete.length > 0) io.exitCode = ExitCode.runFailed;
    });
}
