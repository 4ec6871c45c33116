import { describe, expect, it } from 'vitest';
import { BUDGET_METRICS, VALUE_METRICS } from '../src/analyze/metric-catalogue.ts';
import { parseBudgetText } from '../src/judge/budgets.ts';
import { judge } from '../src/judge/judge.ts';
import { extractMetrics } from '../src/matrix/metrics.ts';
import { runRef } from './helpers/run.ts';

describe('one metric catalogue for budgets and compare', () => {
  it('compare measures every non-percentile value metric a budget can name, under the same name and value', async () => {
    // 4 minutes: a minute of steady window (from 3m), so the headroom projections have a value.
    const { analysis } = await runRef('S2-T1-5', ['duration=4m']);
    const measured = new Map(extractMetrics(analysis).map((m) => [m.def.id, m]));
    const nameable = VALUE_METRICS.filter(
      (m) => m.budgetStats && !(m.group === 'turnover' && m.unit === 'ms') && m.read(analysis) !== null,
    );
    expect(nameable.length).toBeGreaterThanOrEqual(9);
    for (const metric of nameable) {
      expect(measured.get(metric.name)?.value, metric.name).toBe(metric.read(analysis));
      expect(measured.get(metric.name)?.def.better, metric.name).toBe(metric.better);
    }
    // The Track B rows are what compare judges.
    expect([...measured.values()].filter((m) => m.def.judged).map((m) => m.def.id)).toEqual(
      VALUE_METRICS.filter((m) => m.group === 'scorecard').map((m) => m.name),
    );
  });

  it('a budget on a metric compare reports is judged with the value compare saw', async () => {
    const { analysis } = await runRef('S2-T1-5', ['duration=3m']);
    const calls = extractMetrics(analysis).find((m) => m.def.id === 'api.calls')!;
    expect(BUDGET_METRICS.has('api.calls')).toBe(true);
    const set = parseBudgetText(
      `name: inline\nbudgets:\n  - { metric: api.calls, thresholds: ["count<${calls.value}"] }\n`,
      'inline.yaml',
    );
    const verdict = judge(set, [{ name: 'run', analysis }]);
    expect(verdict.errors).toEqual([]);
    expect(verdict.rows[0]!.value).toBe(calls.value);
    expect(verdict.rows[0]!.status).toBe('fail');
  });
});
