/**
 * Judging inside `fleetbench run` (scenario `budgets:`): the budget sets are loaded before the
 * run (a bad file fails at once, exit 104), a live analyzer observes every record the trace
 * accepts, and when the run is over, before the footer, the run is judged: its `budget.breach`
 * events go into the trace itself. The analysis is the one `fleetbench analyze` computes from
 * the file (same analyzer, same records, the footer's end time).
 */
import { analyzerFromState, createAnalyzer } from '../analyze/analyzer.ts';
import { type BudgetSet, resolveBudgets } from '../judge/budgets.ts';
import { breachEvents, type JudgeOptions, judge, type Verdict } from '../judge/judge.ts';
import type { TraceWriter } from '../trace/writer.ts';

export interface RunJudge {
  sets: BudgetSet[];
  /** Start watching the run's trace. */
  observe(trace: TraceWriter): void;
  /** Judge what was recorded, write the breaches (at `t`), return the verdicts. */
  finish(trace: TraceWriter, t: number, sessions: number): Verdict[];
}

export function prepareRunJudge(refs: readonly string[], options: JudgeOptions = {}): RunJudge | undefined {
  if (refs.length === 0) return undefined;
  const sets = refs.map(resolveBudgets);
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
