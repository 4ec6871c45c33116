/**
 * Judging inside `fleetbench run` (scenario `budgets:`): the budget sets are loaded before the
 * run (a bad file fails at once, exit 104), a live analyzer observes every record the trace
 * accepts, and when the run is over, before the footer, the run is judged: its `budget.breach`
 * events go into the trace itself. The analysis is the one `fleetbench analyze` computes from
 * the file (same analyzer, same records, the footer's end time).
 */
import { analyzerFromState, createAnalyzer } from '../analyze/analyzer.ts';
import { turnoverWindowTooSmall } from '../analyze/turnover.ts';
import { FleetbenchError } from '../base/errors.ts';
import { type BudgetSet, resolveBudgets } from '../judge/budgets.ts';
import { breachEvents, type JudgeOptions, judge, type Verdict } from '../judge/judge.ts';
import type { TraceWriter } from '../trace/writer.ts';
import type { Scenario } from '../workload/scenario.ts';

export interface RunJudge {
  sets: BudgetSet[];
  /** Start watching the run's trace. */
  observe(trace: TraceWriter): void;
  /** Judge what was recorded, write the breaches (at `t`), return the verdicts. */
  finish(trace: TraceWriter, t: number, sessions: number): Verdict[];
}

/**
 * A turnover run judged on its steady window's rows must have a window those rows can be judged
 * in (docs/analysis.md#turnover): one too small would show every budget holding while the pool's
 * queues had not yet built up. Refused before the run, naming `turnover.steady`.
 */
function checkTurnoverWindow(sets: readonly BudgetSet[], scenario: Scenario | undefined): void {
  const turnover = scenario?.turnover;
  if (turnover?.steadyMs === undefined) return;
  const windowRows = sets.flatMap((set) =>
    set.entries.filter(
      (e) =>
        e.mode === 'judged' &&
        e.metric.kind === 'value' &&
        e.metric.group === 'turnover' &&
        e.metric.notJudged,
    ),
  );
  if (windowRows.length === 0) return;
  const asked = Math.floor(turnover.targetRps * (turnover.steadyMs / 1000) + 1e-9);
  const why = turnoverWindowTooSmall(turnover.steadyMs, asked);
  if (why)
    throw new FleetbenchError(
      'E_SCENARIO',
      `turnover.steady: ${why} (${windowRows[0]!.metric.name} and the other judged turnover rows would hold whatever the pool does); give a longer turnover.steady, or run with --no-budgets`,
    );
}

export function prepareRunJudge(
  refs: readonly string[],
  options: JudgeOptions = {},
  scenario?: Scenario,
): RunJudge | undefined {
  if (refs.length === 0) return undefined;
  const sets = refs.map(resolveBudgets);
  checkTurnoverWindow(sets, scenario);
  const analyzer = createAnalyzer();
  return {
    sets,
    observe(trace) {
      trace.observe(analyzer);
    },
    finish(trace, t, sessions) {
      const final = analyzerFromState(analyzer.toState(), {
        header: trace.header,
        sessions: sessions > 0 ? sessions : undefined,
      });
      const analysis = final.finish({
        file: trace.path,
        stats: {
          header: trace.header,
          footer: { kind: 'end', t, reason: 'completed', counts: { ...trace.counts } },
          lines: 0,
          counts: { ...trace.counts },
          skipped: 0,
          skippedReasons: [],
          truncated: false,
          warnings: [],
        },
      });
      const verdicts = sets.map((set) => judge(set, [{ name: trace.path, analysis }], options));
      for (const verdict of verdicts) for (const event of breachEvents(verdict, t)) trace.write(event);
      return verdicts;
    },
  };
}
