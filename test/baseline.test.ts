import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runMatrix } from '../src/matrix/run.ts';
import { selectUnits } from '../src/matrix/select.ts';
import { reportData } from '../src/report-html/model.ts';
import { baselineJsonSchema, parseBaseline } from '../src/results/baseline.ts';
import { failingUnits } from '../src/results/overview.ts';
import { loadResults } from '../src/results/results.ts';
import { scratchDir } from './helpers/tmp.ts';

describe('baseline.json and the cell selection', () => {
  it('publishes a JSON Schema generated from the zod schema (docs/baseline.schema.json)', () => {
    const committed = JSON.parse(
      readFileSync(new URL('../docs/baseline.schema.json', import.meta.url), 'utf8'),
    );
    expect(committed).toEqual(JSON.parse(JSON.stringify(baselineJsonSchema())));
  });

  it('says what is wrong with a file that is not a baseline', () => {
    expect(() => parseBaseline({ kind: 'fleetbench-run' }, 'x.json')).toThrow(
      'x.json: not a fleetbench baseline (kind is "fleetbench-run")',
    );
    expect(() => parseBaseline({ kind: 'fleetbench-baseline', schemaVersion: 1 }, 'b.json')).toThrow(
      /^b\.json: /,
    );
  });

  it('expands priority, all, globs and lists in matrix order, without duplicates', () => {
    expect(selectUnits('all')).toHaveLength(54);
    expect(selectUnits('priority').map((u) => u.id)).toEqual([
      'S1-T1-50',
      'S2-T1-1',
      'S2-T1-5',
      'S2-T1-50',
      'S2-T2-50',
      'S3-T1-25',
      'S4-T1-10',
    ]);
    expect(selectUnits('S2-*-50').map((u) => u.id)).toEqual(['S2-T1-50', 'S2-T2-50']);
    expect(selectUnits('s4-t1-10, S2-T1-1,S4-T1-10').map((u) => u.id)).toEqual(['S2-T1-1', 'S4-T1-10']);
    expect(selectUnits('S*-T2-5')).toHaveLength(6);
    expect(selectUnits('S1-*').map((u) => u.cell!.scale)).toEqual([1, 5, 10, 25, 50, 5, 10, 25, 50]);
  });

  it('a judge adds budget checks to each run: kept in baseline.json, judged by --check, shown by the report', async () => {
    const outDir = scratchDir('fleetbench-judge-');
    const seen: string[] = [];
    const { baseline } = await runMatrix({
      selection: 'S2-T1-1,S2-T1-5',
      overrides: ['duration=2m'],
      jobs: 2,
      outDir,
      judge: (analysis, unitId) => {
        seen.push(unitId);
        const calls = analysis.api.totals.calls;
        return [
          {
            budget: 'test',
            metric: 'api.calls',
            scope: `cell=${unitId}`,
            measured: `${calls} calls`,
            limit: '< 20 calls',
            verdict: calls < 20 ? 'pass' : 'fail',
            judged: true,
          },
        ];
      },
    });
    expect(seen.sort()).toEqual(['S2-T1-1', 'S2-T1-5']);
    const calls = baseline.units.map((u) => u.runs[0]!.analysis.api.totals.calls);
    expect(calls[1]).toBeGreaterThanOrEqual(20); // 5 sessions for 2 minutes make more than 20 calls
    expect(baseline.units[1]!.runs[0]!.checks![0]!.verdict).toBe('fail');
    // Failing: a judged check, or the Track B scorecard (a 2-minute run of 1 session is mostly
    // its cold start, projected to 50 sessions).
    expect(failingUnits(baseline).map((u) => u.id)).toEqual(
      baseline.units
        .filter((u, i) => calls[i]! >= 20 || u.runs[0]!.analysis.scorecard.verdict === 'fail')
        .map((u) => u.id),
    );
    expect(failingUnits(baseline).map((u) => u.id)).toContain('S2-T1-5');
    const data = reportData(loadResults(outDir));
    expect(data.units[1]!.budgets).toEqual(baseline.units[1]!.runs[0]!.checks);
    expect(data.overall.verdict).toBe('fail');
  });
});
