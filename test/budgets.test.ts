/**
 * Budget files (docs/budgets.md): the format, k6-style expressions, every misconfiguration as a
 * loud `file:line` error (exit 104), the built-in sets, and `derive`'s rounding.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createAnalyzer } from '../src/analyze/analyzer.ts';
import { ExitCode, InputFileError } from '../src/base/errors.ts';
import {
  breachEvents,
  deriveBudgets,
  judge,
  parseBudgetText,
  resolveBudgets,
  scaleUp,
} from '../src/judge/index.ts';
import type { BodyRecord } from '../src/trace/schema.ts';

function configError(text: string): InputFileError {
  try {
    parseBudgetText(text, 'b.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(InputFileError);
    expect((error as InputFileError).exitCode).toBe(ExitCode.budgetMisconfigured);
    return error as InputFileError;
  }
  throw new Error('expected a configuration error');
}

/** Codex recoveries and first activities with the given latencies (ms). */
function analysis(options: { cp?: number[]; fa?: number[]; adapter?: string } = {}) {
  const adapter = options.adapter ?? 'codex';
  const records: BodyRecord[] = [];
  (options.fa ?? []).forEach((ms, i) => {
    records.push(
      { kind: 'event', name: 'run.created', t: 0, session: `f${i}`, labels: { adapter, start: 'cold' } },
      {
        kind: 'event',
        name: 'provider.event',
        t: ms,
        session: `f${i}`,
        labels: { adapter, type: 'item.delta', item: 'text' },
      },
    );
  });
  const cp = options.cp ?? [];
  if (cp.length > 0) {
    records.push(
      { kind: 'event', name: 'controlplane.restart', t: 100_000, labels: { kind: 'hard' } },
      { kind: 'event', name: 'controlplane.ready', t: 101_000, labels: { reason: 'hard' } },
    );
    cp.forEach((ms, i) => {
      records.push(
        {
          kind: 'event',
          name: 'run.created',
          t: 50_000,
          session: `r${i}`,
          labels: { adapter, start: 'warm' },
        },
        {
          kind: 'event',
          name: 'provider.event',
          t: 101_000 + ms,
          session: `r${i}`,
          labels: { adapter, type: 'session.resumed' },
        },
      );
    });
  }
  const analyzer = createAnalyzer();
  for (const r of records) analyzer.add(r);
  return analyzer.finish();
}

describe('budget files', () => {
  it('reads keys, k6 expressions and inline scopes into thresholds in the metric unit', () => {
    const set = parseBudgetText(
      `name: mine
per: [adapter]
budgets:
  - metric: restart_recovery_control_plane{adapter:codex}
    p50: 2.5
    thresholds: ['p(95)<4s', 'p(99.9)<=6000', 'max<7s']
  - metric: scorecard.max-1s
    rate: 30
    mode: report
`,
      'mine.yaml',
    );
    expect(set).toMatchObject({ name: 'mine', baseline: 'mine', per: ['adapter'] });
    const [cp, rate] = set.entries;
    expect(cp!.scope).toEqual({ adapter: 'codex' });
    expect(cp!.mode).toBe('judged');
    // A bare number in a key is seconds (like every duration in fleetbench); in a k6
    // expression it is milliseconds (as in k6).
    expect(cp!.thresholds.map((t) => [t.stat, t.percentile, t.op, t.limit])).toEqual([
      ['p', 50, '<=', 2_500],
      ['p', 95, '<', 4_000],
      ['p', 99.9, '<=', 6_000],
      ['max', undefined, '<', 7_000],
    ]);
    expect(cp!.line).toBe(4);
    expect(rate).toMatchObject({ mode: 'report', thresholds: [{ stat: 'rate', op: '<=', limit: 30 }] });
  });

  const misconfigured: Array<[string, string, RegExp]> = [
    [
      'an unknown metric, naming the known ones',
      'name: x\nbudgets:\n  - metric: restart_recovry\n    p95: 4s\n',
      /^b\.yaml:3: budgets\[0\]: unknown metric 'restart_recovry'\. Did you mean 'restart_recovery'\? \(known: time_to_first_activity, .*restart_recovery_control_plane/,
    ],
    [
      'a repeated entry, naming the first',
      'name: x\nbudgets:\n  - { metric: agent_boot, scope: { adapter: codex, start: cold }, p95: 7s }\n  - { metric: agent_boot, scope: { start: cold, adapter: codex }, p50: 2s }\n',
      /^b\.yaml:4: budgets\[1\]: repeats budgets\[0\] \(line 3\): same metric and scope/,
    ],
    [
      'a label the metric does not have',
      'name: x\nbudgets:\n  - metric: restart_recovery\n    scope: { start: cold }\n    p95: 4s\n',
      /^b\.yaml:4: budgets\[0\]: metric restart_recovery has no label 'start' \(its labels: adapter, kind\)/,
    ],
    [
      'a statistic the metric does not have',
      "name: x\nbudgets:\n  - metric: scorecard.peak-concurrency\n    thresholds: ['p(95)<40']\n",
      /^b\.yaml:4: budgets\[0\]: metric scorecard\.peak-concurrency has no p\(95\) \(use value, max\)/,
    ],
    [
      'an unreadable expression',
      "name: x\nbudgets:\n  - metric: agent_boot\n    thresholds: ['p95 under 4s']\n",
      /^b\.yaml:4: budgets\[0\]: cannot read the threshold 'p95 under 4s'/,
    ],
    [
      'a limit that is not a duration',
      'name: x\nbudgets:\n  - metric: agent_boot\n    p95: fast\n',
      /^b\.yaml:4: budgets\[0\]: p95: expected a duration like 4s or 500ms, got 'fast'/,
    ],
    [
      'a judged entry without a limit',
      'name: x\nbudgets:\n  - metric: agent_boot\n',
      /^b\.yaml:3: budgets\[0\]: no limit/,
    ],
    [
      'an unknown field',
      'name: x\nbudgets:\n  - metric: agent_boot\n    p96: 4s\n',
      /^b\.yaml:\d+: budgets\[0\]: unknown field 'p96'\. Did you mean 'p90' or 'p95' or 'p99'\?/,
    ],
    ['no budgets at all', 'name: x\nbudgets: []\n', /^b\.yaml:2: budgets: expected at least one budget/],
    ['bad YAML', 'name: x\nbudgets:\n  - metric: [unclosed\n', /^b\.yaml:\d+: YAML: /],
    [
      'a per key no metric has',
      'name: x\nper: [region]\nbudgets:\n  - { metric: agent_boot, p95: 4s }\n',
      /^b\.yaml:2: per: no metric in this file has a label 'region'/,
    ],
  ];
  it.each(misconfigured)('fails loudly on %s', (_name, text, message) => {
    expect(configError(text).message).toMatch(message);
  });

  it('a scope that matches no samples is "no samples": never a pass, never a misconfiguration; it fails only when required', () => {
    const text =
      'name: x\nbudgets:\n  - { metric: restart_recovery_control_plane, scope: { adapter: codex, kind: hot }, p95: 4s }\n';
    const set = parseBudgetText(text, 'x.yaml');
    // The input has one hard-restart sample; the row asks for hot restarts: nothing matches.
    const verdict = judge(set, [{ name: 'run', analysis: analysis({ cp: [1_000] }) }]);
    expect(verdict.errors).toEqual([]);
    expect(verdict.verdict).toBe('no-samples');
    expect(verdict.rows[0]).toMatchObject({ status: 'no-samples', noSamples: true, n: 0, p95: null });
    expect(verdict.rows[0]!.note).toContain(
      'matches nothing in this input (it has {adapter=codex kind=hard})',
    );
    // Required (flag or row): the missing samples fail the verdict, as a judged failure.
    const flagged = judge(set, [{ name: 'run', analysis: analysis({ cp: [1_000] }) }], {
      requireSamples: true,
    });
    expect(flagged).toMatchObject({ verdict: 'fail', judgedBreaches: 1 });
    expect(breachEvents(flagged, 0)).toEqual([
      expect.objectContaining({ labels: expect.objectContaining({ stat: 'samples' }) }),
    ]);
    const row = parseBudgetText(text.replace('p95: 4s }', 'p95: 4s, require: true }'), 'x.yaml');
    expect(judge(row, [{ name: 'run', analysis: analysis({ cp: [1_000] }) }]).verdict).toBe('fail');
  });

  it('per: [adapter] skips entries for adapters the run did not use; a run whose adapter has no entry has no budget', () => {
    const set = resolveBudgets('native-speed');
    const codex = judge(set, [
      { name: 'run', analysis: analysis({ cp: [1_000, 1_200], fa: [3_000, 4_000] }) },
    ]);
    const shown = codex.rows.filter((r) => r.status !== 'skipped');
    expect(new Set(shown.map((r) => r.scope.adapter))).toEqual(new Set(['codex']));
    // codex rows the built run has no samples for (warm first activity, boot) are "no samples".
    expect(codex.errors).toEqual([]);
    expect(
      codex.rows.find(
        (r) => r.metric === 'agent_boot' && r.scope.adapter === 'codex' && r.scope.start === 'cold',
      ),
    ).toMatchObject({ status: 'no-samples' });
    // Judged rows with samples decide the verdict: cp [1 s, 1.2 s] hold p50 2.5 s / p95 4 s.
    expect(codex.verdict).toBe('pass');
    const other = judge(set, [{ name: 'run', analysis: analysis({ cp: [1_000], adapter: 'gemini' }) }]);
    expect(other.errors).toEqual([]);
    expect(other.verdict).toBe('no-samples');
    expect(other.noBudget).toMatch(
      /no budget: native-speed has no entry for this input \(its adapter: gemini\)/,
    );
  });

  it('judges aggregates against p50 and p95, a single sample against p95 only', () => {
    const set = parseBudgetText(
      'name: x\nbudgets:\n  - { metric: restart_recovery_control_plane, scope: { adapter: codex }, p50: 2.5s, p95: 4s }\n',
      'x.yaml',
    );
    const single = judge(set, [{ name: 'one', analysis: analysis({ cp: [3_000] }) }]);
    expect(single.rows[0]).toMatchObject({ status: 'pass', n: 1 });
    // Two runs pooled: p50 3 s breaches 2.5 s although each stays under its p95.
    const pooled = judge(set, [
      { name: 'a', analysis: analysis({ cp: [3_000] }) },
      { name: 'b', analysis: analysis({ cp: [3_100] }) },
    ]);
    expect(pooled.rows[0]).toMatchObject({ status: 'fail', n: 2 });
    // HDR histogram, 3 significant digits: within 0.1% of the sample.
    expect(Math.abs(pooled.rows[0]!.p50! - 3_000)).toBeLessThanOrEqual(3);
    expect(pooled.rows[0]!.stats.map((s) => [s.judged, s.ok])).toEqual([
      [true, false],
      [true, true],
    ]);
  });

  it('a count is a number of samples, never a duration: count: 5 fails 6 samples (it read 5 s = 5000 before)', () => {
    const six = [{ name: 'six', analysis: analysis({ fa: [1_000, 1_100, 1_200, 1_300, 1_400, 1_500] }) }];
    for (const limit of ['count: 5', 'count: 1.5', "thresholds: ['count<=5']"]) {
      const set = parseBudgetText(
        `name: x\nbudgets:\n  - metric: time_to_first_activity\n    ${limit}\n`,
        'x.yaml',
      );
      expect(set.entries[0]!.thresholds[0]!.limit, limit).toBeLessThanOrEqual(5);
      const verdict = judge(set, six);
      expect(verdict.rows[0], limit).toMatchObject({ status: 'fail', n: 6 });
      expect(verdict.verdict, limit).toBe('fail');
    }
    expect(
      configError("name: x\nbudgets:\n  - metric: agent_boot\n    thresholds: ['count<=5s']\n").message,
    ).toMatch(/^b\.yaml:4: budgets\[0\]: threshold 'count<=5s': expected a number, got '5s'/);
  });

  it('property: a limit written with any number of digits is finite or refused (exit 104), never an Infinity that holds everything', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 500 }),
        fc.constantFrom('', 's', 'ms', 'h', 'm'),
        fc.constantFrom('p95: ', 'max: ', "thresholds: ['p(95)<", "thresholds: ['max<="),
        (digits, unit, key) => {
          const value = `${'9'.repeat(digits)}${unit}`;
          const line = key.startsWith('thresholds') ? `${key}${value}']` : `${key}${value}`;
          const text = `name: x\nbudgets:\n  - metric: agent_boot\n    ${line}\n`;
          let limits: number[];
          try {
            limits = parseBudgetText(text, 'b.yaml').entries[0]!.thresholds.map((t) => t.limit);
          } catch (error) {
            expect((error as InputFileError).exitCode).toBe(ExitCode.budgetMisconfigured);
            return;
          }
          for (const limit of limits) expect(Number.isFinite(limit), line).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('the built-in native-speed set is the table of docs/budgets.md, exactly', () => {
    const set = resolveBudgets('native-speed');
    const limits = (metric: string, scope: Record<string, string>) => {
      const entry = set.entries.find(
        (e) => e.metric.name === metric && JSON.stringify(e.scope) === JSON.stringify(scope),
      )!;
      return [entry.mode, ...entry.thresholds.map((t) => t.limit / 1000)];
    };
    const table: Array<[string, number[]]> = [
      ['claude', [16.5, 30, 9.5, 28.5, 9, 20.5, 3.5, 16.5, 15, 22.5, 2.5, 4]],
      ['codex', [6, 17, 10, 28.5, 2.5, 7, 5, 16.5, 6.5, 8, 2.5, 4]],
      ['opencode', [17.5, 49, 26.5, 88, 12, 37, 22, 65.5, 25.5, 38.5, 2.5, 4]],
    ];
    for (const [adapter, v] of table) {
      expect(limits('time_to_first_activity', { adapter, start: 'cold' })).toEqual(['judged', v[0], v[1]]);
      expect(limits('time_to_first_activity', { adapter, start: 'warm' })).toEqual(['judged', v[2], v[3]]);
      expect(limits('agent_boot', { adapter, start: 'cold' })).toEqual(['judged', v[4], v[5]]);
      expect(limits('agent_boot', { adapter, start: 'warm' })).toEqual(['judged', v[6], v[7]]);
      expect(limits('restart_recovery', { adapter })).toEqual(['report', v[8], v[9]]);
      expect(limits('restart_recovery_control_plane', { adapter })).toEqual(['judged', v[10], v[11]]);
      expect(limits('restart_provider_load', { adapter })).toEqual(['report']);
    }
    // Paperclip's local adapters are judged by the rows of the provider they run.
    expect(set.aliases).toEqual({
      adapter: { codex_local: 'codex', claude_local: 'claude', opencode_local: 'opencode' },
    });
    expect(set.entries.some((e) => e.scope.adapter === 'codex_local')).toBe(false);
  });

  it('the paperclip-baseline set is the derived table of docs/paperclip.md#budgets (restarts scoped by kind)', () => {
    const set = resolveBudgets('paperclip-baseline');
    const limits = (metric: string, scope: Record<string, string>) => {
      const entry = set.entries.find(
        (e) => e.metric.name === metric && JSON.stringify(e.scope) === JSON.stringify(scope),
      )!;
      return [entry.mode, ...entry.thresholds.map((t) => t.limit / 1000)];
    };
    expect(set.per).toEqual(['adapter']);
    expect(limits('time_to_first_activity', { adapter: 'codex_local', start: 'cold' })).toEqual([
      'judged',
      6,
      10.5,
    ]);
    expect(limits('time_to_first_activity', { adapter: 'codex_local', start: 'warm' })).toEqual([
      'judged',
      6.5,
      9.5,
    ]);
    expect(limits('agent_launch', { adapter: 'codex_local', start: 'cold' })).toEqual(['judged', 3.5, 8]);
    expect(limits('agent_launch', { adapter: 'codex_local', start: 'warm' })).toEqual(['judged', 2, 5.5]);
    expect(limits('agent_boot', { adapter: 'codex_local', start: 'cold' })).toEqual(['judged', 1.5, 2]);
    expect(limits('agent_boot', { adapter: 'codex_local', start: 'warm' })).toEqual(['judged', 3.5, 4.5]);
    expect(limits('restart_recovery_control_plane', { adapter: 'codex_local', kind: 'graceful' })).toEqual([
      'judged',
      6,
      41.5,
    ]);
    expect(limits('restart_recovery_control_plane', { adapter: 'codex_local', kind: 'hard' })).toEqual([
      'judged',
      363.5,
      364.5,
    ]);
    expect(limits('time_to_first_activity', { adapter: 'process', start: 'cold' })).toEqual([
      'judged',
      3,
      7.5,
    ]);
    expect(limits('agent_launch', { adapter: 'process', start: 'cold' })).toEqual(['judged', 1.5, 5.5]);
    expect(limits('agent_boot', { adapter: 'process', start: 'cold' })).toEqual(['judged', 1.5, 2]);
  });

  it("aliases: a control plane's own adapter judged by a provider's rows, one row per value the run has", () => {
    const set = parseBudgetText(
      `name: x
baseline: published
per: [adapter]
aliases: { adapter: { codex_local: codex } }
budgets:
  - { metric: restart_recovery_control_plane, scope: { adapter: codex }, p50: 2.5s, p95: 4s }
  - { metric: time_to_first_activity, scope: { adapter: claude, start: cold }, p95: 30s }
`,
      'x.yaml',
    );
    const verdict = judge(set, [
      { name: 'run', analysis: analysis({ cp: [3_000, 9_000], adapter: 'codex_local' }) },
    ]);
    const cp = verdict.rows.find((r) => r.metric === 'restart_recovery_control_plane')!;
    expect(cp).toMatchObject({
      scope: { adapter: 'codex_local' },
      judgedAs: { adapter: 'codex' },
      status: 'fail',
      n: 2,
    });
    // The codex entry itself is not listed as skipped: the run's codex_local took its place.
    expect(verdict.rows.filter((r) => r.scope.adapter === 'codex')).toEqual([]);
    expect(breachEvents(verdict, 0)[0]!.data).toMatchObject({
      scope: { adapter: 'codex_local' },
      judgedAs: { adapter: 'codex' },
    });
    // An alias to a value no entry has is a misconfiguration, with the near one suggested.
    expect(
      configError(
        'name: x\naliases: { adapter: { codex_local: codx } }\nbudgets:\n  - { metric: agent_boot, scope: { adapter: codex }, p95: 4s }\n',
      ).message,
    ).toMatch(
      /^b\.yaml:2: aliases\.adapter\.codex_local: no entry has adapter 'codx'\. Did you mean 'codex'\?/,
    );
  });

  it('the built-in track-b set judges the scorecard rows', () => {
    const set = resolveBudgets('track-b');
    expect(set.entries.map((e) => [e.metric.name, e.thresholds[0]!.op, e.thresholds[0]!.limit])).toEqual([
      ['scorecard.rest-core-headroom', '>=', 40],
      ['scorecard.graphql-headroom', '>=', 40],
      ['scorecard.peak-concurrency', '<', 50],
      ['scorecard.max-1s', '<=', 30],
      ['scorecard.max-10s', '<=', 20],
      ['scorecard.writes-per-minute', '<', 200],
      ['scorecard.limited-answers', '==', 0],
    ]);
  });
});

describe('budgets derive', () => {
  it('rounds each value × factor up to the next 0.5 s', () => {
    expect(scaleUp(3_100, 1.2, 500)).toBe(4_000); // 3.72 s → 4 s
    expect(scaleUp(2_500, 1.2, 500)).toBe(3_000); // 3.0000000000000004 s stays 3 s
    expect(scaleUp(100, 1.2, 500)).toBe(500);
    expect(scaleUp(3_100, 1.5, 0)).toBeCloseTo(4_650);
  });

  it('writes a budget file that judges its own baseline as passing', () => {
    const base = analysis({ cp: [1_000, 2_000, 3_100], fa: [3_000, 5_000] });
    const derived = deriveBudgets([{ name: 'base', analysis: base }], {
      factor: 1.2,
      roundMs: 500,
      by: ['adapter', 'start'],
      name: 'derived',
      baseline: 'base-run',
    });
    const cp = derived.file.budgets.find((b) => b.metric === 'restart_recovery_control_plane')!;
    expect(cp).toMatchObject({ scope: { adapter: 'codex' }, p50: '2.5s', p95: '4s', mode: 'judged' });
    const text = `name: derived\nbaseline: base-run\nper: [adapter]\nbudgets:\n${derived.file.budgets
      .map((b) => `  - ${JSON.stringify(b)}`)
      .join('\n')}\n`;
    const verdict = judge(parseBudgetText(text, 'derived.yaml'), [{ name: 'base', analysis: base }]);
    expect(verdict.errors).toEqual([]);
    expect(verdict.verdict).toBe('pass');
  });
});
