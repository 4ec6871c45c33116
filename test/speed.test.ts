/**
 * Speed metrics (docs/analysis.md#speed) and their judging (docs/budgets.md) on traces built for the purpose: each
 * case is a handful of records through the real analyzer, then the real judge with a budget
 * file, so every rule is pinned to numbers.
 */
import { describe, expect, it } from 'vitest';
import { createAnalyzer } from '../src/analyze/analyzer.ts';
import { type Analysis, analysisSchema } from '../src/analyze/schema.ts';
import { breachEvents, judge, parseBudgetText } from '../src/judge/index.ts';
import type { BodyRecord } from '../src/trace/schema.ts';

type Labels = Record<string, string>;
const ev = (
  t: number,
  name: string,
  session?: string,
  labels?: Labels,
  data?: Record<string, unknown>,
): BodyRecord => ({
  kind: 'event',
  name,
  t,
  ...(session ? { session } : {}),
  ...(labels ? { labels } : {}),
  ...(data ? { data } : {}),
});
const provider = (t: number, session: string, type: string, item?: string) =>
  ev(t, 'provider.event', session, { adapter: 'codex', type, ...(item ? { item } : {}) });
const span = (
  t: number,
  dur: number,
  name: string,
  session: string,
  labels: Labels,
  extra: { writtenAt?: number } = {},
): BodyRecord => ({ kind: 'span', name, t, dur, session, outcome: 'ok', labels, ...extra });
const load = (t: number, dur: number, session: string, extra: { writtenAt?: number } = {}) =>
  span(t, dur, 'provider.session.load', session, { adapter: 'codex', reason: 'recovery' }, extra);
const restart = (kill: number, ready: number, kind: string) => [
  ev(kill, 'controlplane.restart', undefined, { kind }),
  ev(ready, 'controlplane.ready', undefined, { reason: kind }),
];
const created = (t: number, session: string, start = 'warm') =>
  ev(t, 'run.created', session, { adapter: 'codex', start }, { run: `r-${session}` });

/** Records in file order (a late span comes after the event it explains), analysed for real. */
function analyse(records: BodyRecord[]): Analysis {
  const analyzer = createAnalyzer();
  for (const r of records) analyzer.add(r);
  return analyzer.finish();
}

const CP_BUDGET = `
name: cp
baseline: test-baseline
budgets:
  - metric: restart_recovery_control_plane
    scope: { adapter: codex }
    p50: 2.5s
    p95: 4s
  - metric: restart_recovery
    scope: { adapter: codex }
    p95: 8s
    mode: report
`;

function recovery(analysis: Analysis) {
  return analysis.speed!.recoveries;
}

describe('restart recovery: the control plane share', () => {
  it('a recovery dominated by provider load does not breach the control-plane budget', () => {
    // ready at 10 s; reclaimed and launched in 1.5 s; the provider loads for 20 s.
    const a = analyse([
      created(0, 's1'),
      provider(500, 's1', 'turn.started'),
      ...restart(5_000, 10_000, 'hard'),
      load(11_500, 20_000, 's1'),
      provider(31_500, 's1', 'session.resumed'),
    ]);
    expect(recovery(a)).toEqual([
      expect.objectContaining({
        fullMs: 21_500,
        controlPlaneMs: 1_500,
        providerLoadMs: 20_000,
        outageRemovedMs: 0,
      }),
    ]);
    const verdict = judge(parseBudgetText(CP_BUDGET, 'cp.yaml'), [{ name: 'built', analysis: a }]);
    const cp = verdict.rows.find((r) => r.metric === 'restart_recovery_control_plane')!;
    expect(cp).toMatchObject({ status: 'pass', n: 1, p95: 1_500 });
    // One sample: the p50 limit is shown, not judged (a single run is judged against p95).
    expect(cp.stats.map((s) => s.judged)).toEqual([false, true]);
    // The full latency is over its report-only limit: shown, never failing the verdict.
    expect(verdict.rows.find((r) => r.metric === 'restart_recovery')).toMatchObject({
      status: 'fail',
      mode: 'report',
    });
    expect(verdict.verdict).toBe('pass');
  });

  it('a slow control-plane share breaches, with the full and provider-load latencies in the breach, even when the load span is written after the provider event', () => {
    // The provider says session.resumed at 16 s, before its load ends (18 s); the span is
    // written later still (19 s), so in the file it follows the event.
    const a = analyse([
      created(0, 's1'),
      ...restart(5_000, 10_000, 'graceful'),
      provider(16_000, 's1', 'session.resumed'),
      load(15_000, 3_000, 's1', { writtenAt: 19_000 }),
    ]);
    // The load started at 15 s (its end 18 s minus its 3 s; when it was written, 19 s, does not
    // matter): the control plane took 15 − 10 = 5 s of the 16 − 10 = 6 s.
    expect(recovery(a)[0]).toMatchObject({
      fullMs: 6_000,
      controlPlaneMs: 5_000,
      providerLoadMs: 3_000,
      loadStartMs: 15_000,
    });
    const verdict = judge(parseBudgetText(CP_BUDGET, 'cp.yaml'), [{ name: 'built', analysis: a }]);
    expect(verdict.verdict).toBe('fail');
    const events = breachEvents(verdict, 20_000).filter(
      (e) => e.labels?.metric === 'restart_recovery_control_plane',
    );
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      name: 'budget.breach',
      labels: { budget: 'cp', metric: 'restart_recovery_control_plane', stat: 'p95', mode: 'judged' },
      data: {
        measured: 5_000,
        limit: 4_000,
        limits: { p50: 2_500, p95: 4_000 },
        percentile: 95,
        baseline: 'test-baseline',
        restartRecoveryMs: 6_000,
        providerLoadMs: 3_000,
        worst: { session: 's1', restartRecoveryMs: 6_000, providerLoadMs: 3_000, controlPlaneMs: 5_000 },
      },
    });
  });

  it('a run with no load span is judged on its full latency', () => {
    const a = analyse([
      created(0, 's1'),
      ...restart(5_000, 10_000, 'hard'),
      provider(15_000, 's1', 'session.resumed'),
    ]);
    expect(recovery(a)[0]).toMatchObject({ fullMs: 5_000, controlPlaneMs: 5_000, providerLoadMs: null });
    expect(a.speed!.metrics.restart_provider_load.samples).toBe(0);
    const verdict = judge(parseBudgetText(CP_BUDGET, 'cp.yaml'), [{ name: 'built', analysis: a }]);
    expect(verdict.rows[0]).toMatchObject({
      metric: 'restart_recovery_control_plane',
      status: 'fail',
      p95: 5_000,
    });
  });

  it('a reattached runner (hot restart) is measured to its next provider event; diagnostics do not count', () => {
    const a = analyse([
      created(0, 's1'),
      provider(1_000, 's1', 'item.delta', 'text'),
      ...restart(5_000, 5_400, 'hot'),
      provider(5_500, 's1', 'diagnostic'),
      provider(6_200, 's1', 'session.resumed'),
      provider(6_300, 's1', 'item.delta', 'text'),
    ]);
    expect(recovery(a)).toEqual([
      expect.objectContaining({
        kind: 'hot',
        fullMs: 800,
        controlPlaneMs: 800,
        providerLoadMs: null,
        eventType: 'session.resumed',
      }),
    ]);
    expect(a.speed!.restarts).toEqual([
      {
        kind: 'hot',
        killAtMs: 5_000,
        readyAtMs: 5_400,
        outageMs: 400,
        runs: { cut: 1, recovered: 1, finished: 0, unrecovered: 0, open: 0 },
      },
    ]);
  });

  it('removes the outage of a second restart that lands while a run is still recovering', () => {
    // Ready at 10 s; killed again at 12 s before the run resumed; ready again at 17 s (5 s of
    // outage); the load starts at 18 s and the run resumes at 21 s. One sample, from the first
    // ready: 11 s − 5 s outage = 6 s, of which control plane 8 s − 5 s = 3 s.
    const a = analyse([
      created(0, 's1'),
      ...restart(5_000, 10_000, 'hard'),
      ...restart(12_000, 17_000, 'hard'),
      load(18_000, 3_000, 's1'),
      provider(21_000, 's1', 'session.resumed'),
    ]);
    expect(recovery(a)).toEqual([
      expect.objectContaining({
        readyAtMs: 10_000,
        fullMs: 6_000,
        controlPlaneMs: 3_000,
        providerLoadMs: 3_000,
        outageRemovedMs: 5_000,
        absorbedRestarts: 1,
      }),
    ]);
    expect(a.speed!.metrics.restart_recovery.samples).toBe(1);
  });

  it('counts a cut run that never shows a provider event as unrecovered (open at the end), not as a sample', () => {
    const a = analyse([created(0, 's1'), ...restart(5_000, 10_000, 'hard'), ev(70_000, 'marker.end')]);
    expect(a.speed!.recoveries).toEqual([]);
    expect(a.speed!.unrecovered).toEqual([
      {
        session: 's1',
        run: 'r-s1',
        adapter: 'codex',
        kind: 'hard',
        readyAtMs: 10_000,
        killAtMs: 5_000,
        status: 'running',
        errorCode: null,
        open: true,
        // Ready at 10 s, the trace ends at 70 s: whenever it comes, the recovery is at least 60 s.
        atLeastMs: 60_000,
        lostAtMs: null,
      },
    ]);
    expect(a.speed!.recoveryCounts).toEqual([
      { adapter: 'codex', kind: 'hard', cut: 1, recovered: 0, finished: 0, unrecovered: 1, open: 1 },
    ]);
    expect(a.speed!.notes).toContain(
      '1 run cut by a restart still not recovered when the trace ended: s1 (codex, hard restart) waiting ≥ 60 s',
    );
  });

  it('accounts for every cut run: recovered, finished during a drain, or ended unrecovered with its status and error code', () => {
    const a = analyse([
      created(0, 's1'),
      created(0, 's2'),
      created(0, 's3'),
      provider(1_000, 's1', 'item.started', 'tool_call'),
      provider(1_000, 's2', 'item.started', 'tool_call'),
      provider(1_000, 's3', 'item.started', 'tool_call'),
      ...restart(5_000, 10_000, 'graceful'),
      // s1 finishes its turn during the drain and ends: nothing to recover.
      provider(6_000, 's1', 'item.completed', 'tool_call'),
      ev(10_000, 'run.ended', 's1', { adapter: 'codex', status: 'succeeded' }, { run: 'r-s1' }),
      // s2's agent died on the SIGTERM: the run failed and was never run again.
      ev(5_400, 'run.ended', 's2', { adapter: 'codex', status: 'failed' }, { run: 'r-s2' }),
      {
        kind: 'span',
        name: 'paperclip.attempt',
        t: 0,
        dur: 5_400,
        session: 's2',
        outcome: 'error',
        labels: { adapter: 'codex', status: 'failed', errorCode: 'adapter_failed' },
        data: { run: 'r-s2' },
      },
      // s3 is retried and resumes.
      provider(12_000, 's3', 'session.resumed'),
    ]);
    expect(a.speed!.recoveryCounts).toEqual([
      { adapter: 'codex', kind: 'graceful', cut: 3, recovered: 1, finished: 1, unrecovered: 1, open: 0 },
    ]);
    expect(a.speed!.unrecovered).toEqual([
      expect.objectContaining({ session: 's2', status: 'failed', errorCode: 'adapter_failed', open: false }),
    ]);
    expect(a.speed!.notes).toContain(
      '1 run cut by a restart ended without being recovered: s2 (codex, graceful restart: failed, adapter_failed)',
    );
    expect(analysisSchema.parse(a)).toBeTruthy();
  });
});

describe('first activity, first text, input wait, boot', () => {
  it('takes the first text delta, tool-call start or reasoning indicator, by adapter and start kind', () => {
    const a = analyse([
      ev(900, 'input.received', 's1', { adapter: 'codex' }),
      created(1_000, 's1', 'cold'),
      span(1_500, 2_000, 'provider.boot', 's1', { adapter: 'codex', start: 'cold' }),
      provider(3_600, 's1', 'turn.started'),
      provider(4_000, 's1', 'item.started', 'text'), // not yet activity: no text has arrived
      provider(5_000, 's1', 'tool.execution.started'), // a tool-first agent
      provider(9_000, 's1', 'item.delta', 'text'),
      ev(1_000, 'input.received', 's2', { adapter: 'codex' }),
      created(1_200, 's2', 'mystery'), // an unknown start kind
      provider(2_200, 's2', 'item.started', 'reasoning'),
    ]);
    const groups = a.speed!.metrics.time_to_first_activity.groups;
    expect(groups.map((g) => [g.labels, g.values])).toEqual([
      [{ adapter: 'codex', start: 'cold' }, [4_000]],
      [{ adapter: 'codex', start: 'unknown' }, [1_000]],
    ]);
    expect(a.speed!.metrics.time_to_first_text.groups[0]).toMatchObject({ values: [8_000] });
    expect(a.speed!.metrics.input_wait.groups[0]).toMatchObject({
      labels: { adapter: 'codex' },
      values: [100, 200],
    });
    expect(a.speed!.metrics.agent_boot.groups[0]).toMatchObject({
      labels: { adapter: 'codex', start: 'cold' },
      values: [2_000],
    });
  });

  it('leaves out a first activity that a restart interrupted (its wait is a recovery)', () => {
    const a = analyse([
      created(0, 's1'),
      ...restart(1_000, 3_000, 'hard'),
      provider(9_000, 's1', 'item.delta', 'text'),
    ]);
    expect(a.speed!.metrics.time_to_first_activity.samples).toBe(0);
    expect(a.speed!.runs).toMatchObject({ created: 1, interrupted: 1 });
  });

  it('judges an unknown start kind against the looser of the cold and warm budgets', () => {
    const records: BodyRecord[] = [];
    // Unknown-start runs with first activity at 7 s: over the cold p50 (6 s), under warm (10 s).
    for (let i = 0; i < 5; i++) {
      const s = `u${i}`;
      records.push(created(i * 100, s, 'remote'), provider(i * 100 + 7_000, s, 'item.delta', 'text'));
    }
    records.push(created(0, 'c1', 'cold'), provider(3_000, 'c1', 'item.delta', 'text'));
    records.push(created(0, 'w1', 'warm'), provider(8_000, 'w1', 'item.delta', 'text'));
    const set = parseBudgetText(
      `name: fa
budgets:
  - { metric: time_to_first_activity, scope: { adapter: codex, start: cold }, p50: 6s, p95: 17s }
  - { metric: time_to_first_activity, scope: { adapter: codex, start: warm }, p50: 10s, p95: 28.5s }
`,
      'fa.yaml',
    );
    const verdict = judge(set, [{ name: 'built', analysis: analyse(records) }]);
    const unknown = verdict.rows.find((r) => r.scope.start === 'unknown')!;
    expect(unknown).toMatchObject({ n: 5, status: 'pass', p50: 7_000 });
    expect(unknown.stats.map((s) => s.threshold.limit)).toEqual([10_000, 28_500]);
    expect(verdict.verdict).toBe('pass');
  });

  it('control-plane boots and lost-run detection: the spans a real target writes, by reason and by adapter and kind', () => {
    const a = analyse([
      {
        kind: 'span',
        name: 'controlplane.boot',
        t: 0,
        dur: 40_000,
        outcome: 'ok',
        labels: { reason: 'start' },
      },
      ...restart(60_000, 85_000, 'hard'),
      {
        kind: 'span',
        name: 'controlplane.boot',
        t: 60_500,
        dur: 24_500,
        outcome: 'ok',
        labels: { reason: 'hard' },
      },
      {
        kind: 'span',
        name: 'controlplane.boot',
        t: 90_000,
        dur: 9_000,
        outcome: 'error',
        labels: { reason: 'hard' },
      },
      span(60_000, 300_000, 'run.lost', 's1', { adapter: 'codex_local', kind: 'hard' }),
    ]);
    const boot = a.speed!.metrics.controlplane_boot;
    expect(boot.role).toBe('report');
    // A failed boot is no sample.
    expect(boot.groups.map((g) => [g.labels, g.values])).toEqual([
      [{ reason: 'hard' }, [24_500]],
      [{ reason: 'start' }, [40_000]],
    ]);
    expect(a.speed!.metrics.lost_run_detection.groups).toMatchObject([
      { labels: { adapter: 'codex_local', kind: 'hard' }, values: [300_000] },
    ]);
  });

  it('reads an Analysis written before the two were added (they are optional in schemaVersion 1)', () => {
    const a = analyse([created(0, 's1', 'cold'), provider(2_000, 's1', 'item.delta', 'text')]);
    const older = structuredClone(a) as unknown as { speed: { metrics: Record<string, unknown> } };
    delete older.speed.metrics.controlplane_boot;
    delete older.speed.metrics.lost_run_detection;
    expect(analysisSchema.safeParse(older).success).toBe(true);
    expect(
      analysisSchema.safeParse({
        ...older,
        speed: { ...older.speed, metrics: { ...older.speed.metrics, agent_boot: undefined } },
      }).success,
    ).toBe(false);
  });
});
