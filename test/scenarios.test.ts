/**
 * The A2 scenarios each show their key signal (issue 4), measured by the real analyzer on the
 * trace of a real virtual-time run of the reference control plane against the emulator.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { apiRecords, events, runRef, spans } from './helpers/run.ts';

describe('A2 scenarios', () => {
  it('S1 cold start: the first minute misses every cache and pays for it, then the cost settles', async () => {
    const { analysis, records } = await runRef('S1-T1-25');
    const api = apiRecords(records).filter((r) => r.source === 'lifecycle');
    const points = (from: number, to: number) =>
      api.filter((r) => r.t >= from && r.t < to).reduce((s, r) => s + r.cost, 0);
    // Cache misses: lifecycle calls not answered 304 (no ETag yet, or it changed).
    const misses = (from: number, to: number) =>
      api.filter((r) => r.t >= from && r.t < to && !r.notModified).length;
    expect(misses(0, 60_000)).toBeGreaterThanOrEqual(25 * 3);
    expect(misses(0, 60_000)).toBeGreaterThan(3 * misses(180_000, 240_000));
    expect(points(0, 60_000)).toBeGreaterThan(3 * points(180_000, 240_000));
    // The burst: the first 60 s hold a run of busy seconds (the first cycle with sessions).
    const first60 = analysis.api.burst.first60s;
    expect(first60).toHaveLength(60);
    expect(Math.max(...first60)).toBeGreaterThanOrEqual(5);
  });

  it('S2 quiet steady state: a stable floor of calls per session per cycle, all 304', async () => {
    const { analysis, records } = await runRef('S2-T1-10');
    const floor = analysis.api.pollingFloor.perSessionCycle.all!;
    expect(floor.p50).toBe(1);
    expect(floor.max).toBeLessThanOrEqual(3);
    // After the steady marker every lifecycle call is a free 304.
    const steady = events(records, 'steady.start')[0]!.t;
    const later = apiRecords(records).filter((r) => r.t >= steady && r.source === 'lifecycle');
    expect(later.length).toBeGreaterThan(0);
    expect(later.filter((r) => r.status === 304).length / later.length).toBeGreaterThan(0.9);
    // The only charged calls: the tracker's issue list, when its 5-minute cache runs out.
    const charged = later.filter((r) => r.cost > 0);
    expect(charged.length).toBeGreaterThan(0);
    expect(new Set(charged.map((r) => r.op))).toEqual(new Set(['tracker-issue-list']));
    // Every steady cycle: guard 1 for the repo and guard 2 for each of the 10 PRs; guard 3 for
    // a PR every 2 minutes (every 4th cycle); the tracker every 5 minutes. Nothing else.
    const perCycle = spans(records, 'poll.cycle')
      .filter((s) => s.t >= steady)
      .map((s) => s.data?.calls as number);
    expect(Math.min(...perCycle)).toBe(11);
    expect(Math.max(...perCycle)).toBeLessThanOrEqual(22);
    const mean = perCycle.reduce((a, b) => a + b, 0) / perCycle.length;
    expect(mean).toBeGreaterThan(11 + 10 / 4 - 1);
    expect(mean).toBeLessThan(11 + 10 / 4 + 1);
  });

  it('S3 spawn storm: concurrency peaks and the burst lasts until every session has a PR', async () => {
    const { analysis, records } = await runRef('S3-T1-25');
    const settle = spans(records, 'batch.settle');
    expect(settle).toHaveLength(1);
    const settledAt = settle[0]!.t + settle[0]!.dur;
    const opened = events(records, 'world.pr.opened');
    expect(opened).toHaveLength(25);
    expect(settledAt).toBeGreaterThanOrEqual(Math.max(...opened.map((e) => e.t)));
    // While PRs keep appearing, detection and cache misses cost points; after, polling is free.
    const api = apiRecords(records);
    const pointsPerMinute = (from: number, to: number) =>
      (api.filter((r) => r.t >= from && r.t < to).reduce((s, r) => s + r.cost, 0) * 60_000) / (to - from);
    expect(pointsPerMinute(0, settledAt)).toBeGreaterThan(
      5 * pointsPerMinute(settledAt + 60_000, 15 * 60_000) + 1,
    );
    expect(analysis.api.concurrency.peak).toBeGreaterThanOrEqual(2);
    expect(analysis.api.concurrency.atMs!).toBeLessThan(settledAt);
  });

  it('S4 review burst: detection, thread queries and one reply per comment, under 200 writes/min', async () => {
    const { analysis, records } = await runRef('S4-T1-10');
    const burst = events(records, 'fault.start').find((e) => e.labels?.type === 'review-burst')!;
    const comments = burst.labels!.comments as number;
    expect(comments).toBeGreaterThanOrEqual(50);
    const replies = apiRecords(records).filter((r) => r.op === 'reply-review-comment');
    expect(replies).toHaveLength(comments);
    expect(replies.every((r) => r.status === 201 && r.source === 'agent')).toBe(true);
    expect(analysis.api.counts.byOperation['graphql-review-threads']?.calls).toBe(10);
    expect(analysis.api.writes.total).toBe(comments);
    expect(analysis.api.writes.maxPerMinute).toBeGreaterThan(0);
    expect(analysis.api.writes.maxPerMinute).toBeLessThan(200);
    // Nothing is written before the burst.
    expect(replies.every((r) => r.t > burst.t)).toBe(true);
  });

  it('S5 cache flush: the restart drops the caches and a re-fetch storm follows', async () => {
    const { records } = await runRef('S5-T1-25');
    const restart = events(records, 'controlplane.restart')[0]!;
    const ready = events(records, 'controlplane.ready').filter((e) => e.t > restart.t)[0]!;
    expect(ready.t - restart.t).toBeGreaterThan(0);
    const api = apiRecords(records).filter((r) => r.source === 'lifecycle');
    const points = (from: number, to: number) =>
      api.filter((r) => r.t >= from && r.t < to).reduce((s, r) => s + r.cost, 0);
    const before = points(restart.t - 120_000, restart.t);
    const after = points(ready.t, ready.t + 120_000);
    expect(before).toBeLessThanOrEqual(2);
    expect(after).toBeGreaterThanOrEqual(25 * 2);
  });

  it('S6 dashboard: its calls are attributed to the dashboard and only while it is open', async () => {
    const { analysis, records } = await runRef('S6-T1-10');
    const dash = apiRecords(records).filter((r) => r.source === 'dashboard');
    const open = events(records, 'dashboard.open')[0]!;
    const close = events(records, 'dashboard.close')[0]!;
    expect(close.t - open.t).toBe(600_000);
    expect(dash.length).toBeGreaterThanOrEqual(10 * 6 * 2);
    expect(dash.every((r) => r.t >= open.t && r.t <= close.t)).toBe(true);
    expect(analysis.api.counts.bySource.dashboard?.calls).toBe(dash.length);
    expect(analysis.api.counts.bySource.lifecycle?.calls).toBeGreaterThan(0);
  });
});

describe('polling strategies', () => {
  it('at 50 sessions guarded spends far fewer REST and GraphQL points per hour than naive, and passes Track B', async () => {
    const guarded = await runRef('S2-T1-50');
    const naive = await runRef('S2-T1-50', ['polling.strategy=naive']);
    const perHour = (a: typeof guarded.analysis, resource: string) =>
      a.api.projection.byResource[resource]!.pointsPerHour!;
    expect(perHour(naive.analysis, 'core')).toBeGreaterThan(10 * perHour(guarded.analysis, 'core'));
    expect(perHour(naive.analysis, 'graphql')).toBeGreaterThan(10 * perHour(guarded.analysis, 'graphql'));
    expect(naive.analysis.api.totals.calls).toBeGreaterThan(1.5 * guarded.analysis.api.totals.calls);
    expect(guarded.analysis.scorecard.verdict).toBe('pass');
    expect(naive.analysis.scorecard.verdict).toBe('fail');
    // Naive runs out of core quota inside the hour and then backs off until the reset.
    expect(naive.analysis.api.limited.primary).toBeGreaterThan(0);
  });

  it('with concurrency 1 and 250 ms calls a naive cycle at 50 sessions stretches past its 30 s interval', async () => {
    const { records } = await runRef('S2-T1-50', [
      'polling.strategy=naive',
      'polling.concurrency=1',
      'polling.max-rps=0',
      'github.latency={median: 250ms, p95: 600ms}',
      'duration=6m',
    ]);
    const cycles = spans(records, 'poll.cycle').filter((s) => (s.data?.sessions as number) === 50);
    expect(cycles.length).toBeGreaterThan(2);
    expect(Math.max(...cycles.map((c) => c.dur))).toBeGreaterThan(30_000);
    expect(Math.max(...cycles.map((c) => c.data?.lagMs as number))).toBeGreaterThan(0);
  });
});

describe('determinism', () => {
  it('the same seed and scenario give a byte-identical trace; another seed does not', async () => {
    const a = await runRef('S4-T2-10');
    const b = await runRef('S4-T2-10');
    const c = await runRef('S4-T2-10', ['seed=2']);
    const bytes = (r: typeof a) => readFileSync(r.outcome.tracePath);
    expect(bytes(a).equals(bytes(b))).toBe(true);
    expect(bytes(a).equals(bytes(c))).toBe(false);
  });
});

describe('executors', () => {
  it('arrival-rate records intended vs actual starts and counts the starts it had to drop', async () => {
    const { records } = await runRef('S2-T1-5', [
      'executors=[{type: arrival-rate, start-rate: 60, stages: [{duration: 2m, rate: 60}], max-sessions: 30}]',
      'duration=5m',
    ]);
    const starts = spans(records, 'session.start');
    expect(starts).toHaveLength(30);
    expect(starts.every((s) => s.labels?.executor === 'arrival-rate')).toBe(true);
    // One a second: intended starts are 1 s apart.
    const intended = starts.map((s) => s.t).sort((x, y) => x - y);
    expect(intended[1]! - intended[0]!).toBeCloseTo(1_000, 0);
    const dropped = events(records, 'executor.dropped');
    expect(dropped.length).toBe(120 - 30);
    expect(dropped[0]!.labels).toMatchObject({ executor: 'arrival-rate', reason: 'max-sessions' });
  });
});

describe('a scenario’s provider.scripts', () => {
  it('is found beside the scenario file, whatever the current directory', async () => {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { scratchDir } = await import('./helpers/tmp.ts');
    const { loadScenarioFile } = await import('../src/workload/load.ts');
    const dir = join(scratchDir('fleetbench-scenario-scripts-'), 'sub');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'scripts.yaml'),
      'default: short\nscripts:\n  short:\n    turns:\n      - final: Done.\n',
    );
    const file = join(dir, 'wave.yaml');
    writeFileSync(
      file,
      'name: w\nduration: 1m\ntarget: paperclip\nagents: real\nsessions: { count: 1 }\nprovider: { scripts: scripts.yaml }\n',
    );
    // Loaded from another directory (the test's own), the relative path is the file's neighbour.
    const scenario = loadScenarioFile(file);
    expect(scenario.agents?.kind === 'real' && scenario.agents.provider.scripts).toBe(
      join(dir, 'scripts.yaml'),
    );
  });
});

describe('a scenario’s provider.models', () => {
  it('adds the models given to the run’s provider emulator, and refuses a bad one naming its place', async () => {
    const { writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { scratchDir } = await import('./helpers/tmp.ts');
    const { loadScenarioFile } = await import('../src/workload/load.ts');
    const dir = scratchDir('fleetbench-scenario-models-');
    const file = join(dir, 'wave.yaml');
    const scenario = (models: string) =>
      `name: w\nduration: 1m\ntarget: paperclip\nagents: real\nsessions: { count: 1 }\nprovider:\n  models: ${models}\n`;
    writeFileSync(file, scenario("[gpt-7-preview=2000000/200000, 'ft:gpt-4o-mini-2024-07-18:acme::x1']"));
    const loaded = loadScenarioFile(file);
    expect(loaded.agents?.kind === 'real' && loaded.agents.provider.models).toEqual([
      { name: 'gpt-7-preview', contextWindow: 2_000_000, maxOutputTokens: 200_000 },
      { name: 'ft:gpt-4o-mini-2024-07-18:acme::x1' },
    ]);
    writeFileSync(file, scenario('[gpt-7-preview, gpt-7=1000/2000]'));
    expect(() => loadScenarioFile(file)).toThrow(
      /provider\.models\[1\]: CAP: expected a whole number of tokens from 1 to the window, 1000/,
    );
    writeFileSync(file, scenario('[gpt-4o]'));
    expect(() => loadScenarioFile(file)).toThrow(
      /provider\.models\[0\]: gpt-4o is already a model of the table/,
    );
    // As a user meets it: `fleetbench run` refuses the file before anything starts, exit 2.
    const { cli } = await import('./helpers/cli.ts');
    writeFileSync(file, scenario('[gpt-7=0]'));
    const refused = await cli(['run', file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `${file}:7: provider.models[0]: WINDOW: expected a whole number of tokens from 1 to 10000000`,
    );
  });
});
