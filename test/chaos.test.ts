/**
 * Native runs, restarts and chaos waves on the real reference control plane in virtual time
 * (docs/scenarios.md#native-runs-and-chaos-waves, docs/budgets.md): the built-in waves, their budgets, the knobs that slow the control plane or a
 * provider, provider faults, and determinism.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Analysis } from '../src/analyze/schema.ts';
import { judge, resolveBudgets } from '../src/judge/index.ts';
import { events, runRef, spans } from './helpers/run.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const NATIVE = resolveBudgets('native-speed');

const row = (analysis: Analysis, metric: string) =>
  judge(NATIVE, [{ name: 'run', analysis }]).rows.find((r) => r.metric === metric && r.status !== 'skipped')!;

describe('chaos waves', () => {
  it('chaos-codex-c6: six long runs, mixed restarts, every run recovered, judged against native-speed', async () => {
    const { outcome, analysis, records } = await runRef('chaos-codex-c6');
    const speed = analysis.speed!;
    // The seeded sequence mixes every restart kind; runs start cold, then warm on the same session.
    expect(new Set(speed.restarts.map((r) => r.kind))).toEqual(new Set(['hard', 'graceful', 'hot']));
    expect(speed.metrics.time_to_first_activity.groups.map((g) => g.labels)).toEqual([
      { adapter: 'codex', start: 'cold' },
      { adapter: 'codex', start: 'warm' },
    ]);
    expect(speed.metrics.time_to_first_activity.groups[0]!.values).toHaveLength(6);
    expect(speed.metrics.agent_boot.groups.map((g) => g.labels.start)).toEqual(['cold', 'warm']);
    // Every active run is recovered after every restart: six per restart (a run still
    // recovering when the next restart comes is one sample), none lost.
    expect(speed.unrecovered).toEqual([]);
    expect(speed.recoveries.length).toBeGreaterThanOrEqual(6 * speed.restarts.length - 6);
    for (const r of speed.recoveries) {
      expect(r.fullMs).toBeCloseTo(r.eventAtMs - r.readyAtMs - r.outageRemovedMs, 2);
      expect(r.controlPlaneMs).toBeLessThanOrEqual(r.fullMs + 1e-6);
      // Hot restarts reattach (no reload); hard and graceful ones reload the session.
      if (r.kind === 'hot') expect(r.providerLoadMs).toBeNull();
      else expect(r.providerLoadMs).toBeGreaterThan(0);
    }
    // Some load spans end after the provider's session.resumed, and still count.
    const late = spans(records, 'provider.session.load').filter((s) => {
      const resumed = records.find(
        (e) =>
          e.kind === 'event' &&
          e.name === 'provider.event' &&
          e.session === s.session &&
          e.t >= s.t &&
          e.labels?.type === 'session.resumed',
      );
      return s.data?.run !== undefined && resumed !== undefined && resumed.t < s.t + s.dur;
    });
    expect(late.length).toBeGreaterThan(0);
    // The outage span runs from the kill to ready.
    const outages = spans(records, 'controlplane.outage');
    expect(outages.map((s) => Math.round(s.dur))).toEqual(speed.restarts.map((r) => Math.round(r.outageMs!)));
    // The scenario's budgets were judged before the footer: all judged rows hold.
    expect(outcome.verdicts).toHaveLength(1);
    expect(outcome.verdicts![0]!.verdict).toBe('pass');
    expect(events(records, 'budget.breach').filter((e) => e.labels?.mode === 'judged')).toEqual([]);
  });

  it('a slowed control plane fails the judged restart row; a slowed provider does not', async () => {
    const sets = ['duration=6m', 'executors.0.restarts=4', 'executors.0.provider-faults=0'];
    const base = await runRef('chaos-codex-c4', sets);
    const slowPlane = await runRef('chaos-codex-c4', [...sets, 'control-plane.recovery-delay=3s']);
    const slowProvider = await runRef('chaos-codex-c4', [...sets, 'providers.codex.slowdown=3']);
    const cp = (a: Analysis) => row(a, 'restart_recovery_control_plane');
    const load = (a: Analysis) => row(a, 'restart_provider_load');
    expect(cp(base.analysis).status).toBe('pass');
    expect(cp(slowPlane.analysis).status).toBe('fail');
    expect(cp(slowPlane.analysis).p50!).toBeGreaterThan(cp(base.analysis).p50! + 2_500);
    // The provider is three times slower to load, and the control plane's share is unchanged.
    expect(cp(slowProvider.analysis).status).toBe('pass');
    expect(load(slowProvider.analysis).p50!).toBeGreaterThan(2 * load(base.analysis).p50!);
    expect(row(slowProvider.analysis, 'restart_recovery').p50!).toBeGreaterThan(
      row(base.analysis, 'restart_recovery').p50!,
    );
    // Where the provider is slow is where the provider rows fail.
    expect(row(slowProvider.analysis, 'agent_boot').status).toBe('fail');
    expect(row(slowPlane.analysis, 'agent_boot').status).toBe('pass');
    // The slowed plane's breach says what the restart was made of.
    const breach = events(slowPlane.records, 'budget.breach').find(
      (e) => e.labels?.metric === 'restart_recovery_control_plane' && e.labels.stat === 'p95',
    )!;
    expect(breach.data).toMatchObject({ limit: 4_000, limits: { p50: 2_500, p95: 4_000 }, percentile: 95 });
    expect(breach.data!.restartRecoveryMs as number).toBeGreaterThan(breach.data!.measured as number);
    expect(breach.data!.providerLoadMs as number).toBeGreaterThan(0);
    expect(slowPlane.outcome.verdicts![0]!.verdict).toBe('fail');
  });

  it('is deterministic: the same seed gives a byte-identical trace, another seed does not', async () => {
    const sets = ['duration=4m', 'executors.0.restarts=3', 'executors.0.first-fault=30s'];
    const a = await runRef('chaos-claude-c4', sets, join(dir, 'a'));
    const b = await runRef('chaos-claude-c4', sets, join(dir, 'b'));
    const c = await runRef('chaos-claude-c4', [...sets, 'seed=2'], join(dir, 'c'));
    const bytes = (p: string) => readFileSync(p, 'utf8');
    expect(a.analysis.speed!.recoveries.length).toBeGreaterThan(0);
    expect(bytes(a.outcome.tracePath)).toBe(bytes(b.outcome.tracePath));
    expect(bytes(c.outcome.tracePath)).not.toBe(bytes(a.outcome.tracePath));
  });
});

describe('native runs', () => {
  it('start cold then warm, recover from a provider crash, and slow down on a provider fault', async () => {
    const file = join(dir, 'native.yaml');
    writeFileSync(
      file,
      `name: native
duration: 5m
sessions: { count: 4 }
executors:
  - type: native-runs
    adapter: opencode
    runs-per-session: 3
    turns: 2
faults:
  - { type: provider-crash, adapter: opencode, count: 2, at: 40s }
  - { type: provider-slowdown, factor: 4, at: 2m, duration: 1m }
`,
    );
    const { analysis, records } = await runRef(file);
    const speed = analysis.speed!;
    const starts = events(records, 'run.created').map((e) => e.labels?.start);
    expect(starts.filter((s) => s === 'cold')).toHaveLength(4);
    expect(starts.filter((s) => s === 'warm').length).toBeGreaterThanOrEqual(4);
    // Each run goes through every stage, in order, as spans.
    const run = events(records, 'run.created')[0]!;
    const stages = ['run.claim', 'run.prepare', 'run.runtime', 'run.runner.launch', 'provider.boot'].map(
      (name) => spans(records, name).find((s) => s.data?.run === run.data?.run)!,
    );
    for (let i = 1; i < stages.length; i++)
      expect(stages[i]!.t).toBeCloseTo(stages[i - 1]!.t + stages[i - 1]!.dur, 6);
    // The crash: detected, relaunched, the saved session reloaded.
    const crashed = events(records, 'runner.crashed');
    expect(crashed).toHaveLength(2);
    const reloads = spans(records, 'provider.session.load').filter((s) => s.labels?.reason === 'crash');
    expect(reloads.map((s) => s.session).sort()).toEqual(crashed.map((e) => e.session).sort());
    // Warm boots during the 4× slowdown take longer than the others.
    const warm = spans(records, 'provider.boot').filter((s) => s.labels?.start === 'warm');
    const slowed = warm.filter((s) => s.t >= 120_000 && s.t + s.dur <= 180_000);
    const normal = warm.filter((s) => s.t + s.dur < 120_000 || s.t > 180_000);
    const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    expect(slowed.length).toBeGreaterThan(0);
    expect(median(slowed.map((s) => s.dur))).toBeGreaterThan(median(normal.map((s) => s.dur)));
    expect(speed.metrics.time_to_first_activity.groups.map((g) => g.labels.start)).toEqual(['cold', 'warm']);
    expect(speed.restarts).toEqual([]);
  });
});
