/**
 * `fleetbench check <run|trace|summary.json>... --budgets <set|file>`: judge results against
 * budgets (docs/budgets.md). Several inputs are one aggregate (their samples pool). Without
 * --budgets, each input is judged on the budgets its scenario named. Exit codes
 * follow k6: 0 every judged budget holds (rows with no samples included, unless required), 99 a
 * judged budget was breached, 104 the budgets are misconfigured (an unknown metric or label, a
 * bad expression, a repeated entry, ...); and 3: an input did not complete, nothing judged.
 */
import type { Command } from 'commander';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import { judge, resolveBudgets, type Verdict, verdictSection } from '../judge/index.ts';
import { reporters } from '../report/index.ts';
import { type LoadedInput, loadInputs } from '../results/judge-inputs.ts';
import { repeatedRun } from '../results/results.ts';
import { refuseOutputOverInput } from './options.ts';
import type { CommandIo } from './output.ts';

interface CheckFlags {
  budgets: string[];
  json?: boolean;
  markdown?: boolean;
  lenient?: boolean;
  requireSamples?: boolean;
  requireJudged?: boolean;
  junit?: string;
}

export function budgetRefs(values: string[]): string[] {
  return values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/** Exit code of a set of verdicts: misconfiguration first, then a judged breach. */
export function verdictExitCode(verdicts: readonly Verdict[]): number {
  if (verdicts.some((v) => v.verdict === 'error')) return ExitCode.budgetMisconfigured;
  if (verdicts.some((v) => v.verdict === 'fail')) return ExitCode.budgetBreached;
  return ExitCode.ok;
}

export function register(program: Command, io: CommandIo): void {
  program
    .command('check')
    .description(
      'judge runs, traces or results against budgets: a table, and exit 0 / 99 breach / 104 misconfigured',
    )
    .argument(
      '<inputs...>',
      'run directories, traces, summary.json or analysis JSON files, or matrix results (baseline.json or its directory: every run); several pool into one aggregate',
    )
    .option(
      '--budgets <set>',
      "a built-in budget set (native-speed, paperclip-baseline, track-b, turnover) or a budget file; repeatable or comma-separated (default: the budgets the run's scenario names)",
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option('--json', 'print the verdicts as JSON')
    .option('--markdown', 'print Markdown tables')
    .option(
      '--lenient',
      'read a damaged trace, skipping bad lines (counted); one that skipped any is still never judged (exit 3)',
    )
    .option(
      '--require-samples',
      'every judged budget row must be judged: a row whose scope matches no sample, or a projection the run cannot support (not judged), fails (exit 99)',
    )
    .option('--require-judged', 'the same as --require-samples, by what it means for CI')
    .option('--junit <file>', 'also write the verdicts as JUnit XML (one test case per budget row) for CI')
    .addHelpText(
      'after',
      '\nExamples:\n  fleetbench check fleetbench-out/runs/chaos-codex-c6 --budgets native-speed\n  fleetbench check trace.jsonl --budgets my-budgets.yaml\n  fleetbench check runs/a runs/b runs/c --budgets native-speed   # pooled: p50 and p95\n  fleetbench matrix --cells chaos-codex-c4 --repeat 5 --out runs/wave && fleetbench check runs/wave --budgets native-speed\n  fleetbench check runs/wave --budgets native-speed --junit budgets.xml   # CI: JUnit, and the GitHub step summary when $GITHUB_STEP_SUMMARY is set\n\nExit codes: 0 every judged budget holds, or those judged hold and the headline counts the rest as not judged (rows with no samples, projections the run cannot support: exit 99 with --require-judged / --require-samples or require: true), 99 a judged budget failed, 104 budgets misconfigured, 3 an input did not complete (interrupted, failed, a partial summary, a trace without its completed footer or with a run.failed event, a --lenient read that skipped lines: never judged), 2 bad input. Budget files: docs/budgets.md.',
    )
    .action(async (paths: string[], flags: CheckFlags) => {
      // `--budgets "$UNSET"` names no set: judged by the scenario's own sets instead, the gate
      // would not be the one CI asked for.
      const given = budgetRefs(flags.budgets);
      if (flags.budgets.length > 0 && given.length === 0)
        throw new FleetbenchError(
          'E_USAGE',
          `--budgets: names no budget set (got ${flags.budgets.map((v) => JSON.stringify(v)).join(', ')}); give a set or a file, or leave --budgets out for the sets the run's scenario names`,
        );
      if (flags.junit) refuseOutputOverInput('--junit', flags.junit, paths);
      const inputs: LoadedInput[] = [];
      for (const path of paths) inputs.push(...(await loadInputs(path, { lenient: flags.lenient })));
      // One run given twice would pool its samples twice: a breaching run diluted by copies of a
      // passing one would hold (docs/budgets.md#how-a-budget-is-judged).
      const repeated = repeatedRun(inputs);
      if (repeated)
        throw new FleetbenchError(
          'E_RESULTS',
          `${repeated.again}: the same run as ${repeated.first} (run ${JSON.stringify(repeated.runId)}): pooled, its samples would count twice`,
          { hint: 'give each run once (docs/budgets.md#how-a-budget-is-judged)' },
        );
      // Given budgets judge every input; without, each set the inputs' scenarios name judges
      // the inputs that name it (a demo's cells on track-b, its chaos wave on native-speed).
      const refs = given.length > 0 ? given : [...new Set(inputs.flatMap((i) => i.scenarioBudgets ?? []))];
      if (refs.length === 0) {
        throw new FleetbenchError(
          'E_USAGE',
          'no budgets to judge: give --budgets <native-speed|paperclip-baseline|track-b|turnover|file> (the input names none)',
        );
      }
      // Without --budgets an input that names no set would be judged by none: the verdict of the
      // others must not read as its pass.
      const unjudged = given.length > 0 ? undefined : inputs.find((i) => !i.scenarioBudgets?.length);
      if (unjudged)
        throw new FleetbenchError(
          'E_USAGE',
          `${unjudged.name}: names no budget set, so no budget would judge it beside the inputs that name ${refs.join(', ')}: give --budgets <native-speed|paperclip-baseline|track-b|turnover|file>, which judges every input`,
        );
      const { appendStepSummary, misconfiguredVerdict, writeJunit } = await import('../judge/ci.ts');
      let verdicts: Verdict[];
      try {
        verdicts = refs.map((ref) =>
          judge(
            resolveBudgets(ref),
            given.length > 0 ? inputs : inputs.filter((i) => i.scenarioBudgets?.includes(ref)),
            { requireSamples: flags.requireSamples === true || flags.requireJudged === true },
          ),
        );
      } catch (error) {
        // A budget file that does not load is still a red test in CI, not a missing report.
        if (
          flags.junit &&
          error instanceof FleetbenchError &&
          error.exitCode === ExitCode.budgetMisconfigured
        )
          writeJunit(flags.junit, [misconfiguredVerdict(given.join(','), paths, error.message)]);
        throw error;
      }
      const format = flags.json ? 'json' : flags.markdown ? 'markdown' : 'terminal';
      const text = reporters[format]().render({
        title: `check ${paths.join(' ')}`,
        document: { kind: 'fleetbench-check', inputs: paths, verdicts },
        sections: () => verdicts.map(verdictSection),
      });
      io.stdout.write(format === 'terminal' ? io.colourVerdicts(text) : text);
      for (const verdict of verdicts)
        for (const error of verdict.errors) io.stderr.write(`fleetbench: ${error}\n`);
      // CI outputs (docs/ci.md): JUnit when asked, GitHub's step summary whenever it is there.
      if (flags.junit) writeJunit(flags.junit, verdicts, `fleetbench check ${paths.join(' ')}`);
      appendStepSummary(verdicts, `check ${paths.join(' ')}`, io.env);
      io.exitCode = verdictExitCode(verdicts);
    });
}
