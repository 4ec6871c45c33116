import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  analysisJsonSchema,
  analysisSchema,
  analyzerFromState,
  createAnalyzer,
} from '../src/analyze/index.ts';
import { VIRTUAL_EPOCH_MS } from '../src/clock/index.ts';
import type { ApiRecord, BodyRecord, RunHeader } from '../src/trace/index.ts';
import { inProcess } from './helpers/github.ts';

const EPOCH = Date.UTC(2026, 0, 1, 0, 30, 0);
const HOUR = 3_600_000;
const header: RunHeader = {
  kind: 'run',
  format: 'fleetbench-trace/1',
  runId: 'unit',
  tool: { name: 'fleetbench', version: 'test' },
  clock: 'virtual',
  seed: 1,
  scenario: { name: 'unit', hash: null },
  epochMs: EPOCH,
  startedAt: new Date(EPOCH).toISOString(),
};

function api(t: number, extra: Partial<ApiRecord> = {}): ApiRecord {
  return {
    kind: 'api',
    t,
    dur: 10,
    service: 'github',
    protocol: 'rest',
    method: 'GET',
    route: '/repos/{owner}/{repo}/pulls',
    status: 200,
    conditional: false,
    notModified: false,
    resource: 'core',
    cost: 1,
    secondaryCost: 1,
    ...extra,
  };
}

function analyze(records: BodyRecord[], options: Parameters<typeof createAnalyzer>[0] = {}) {
  const analyzer = createAnalyzer({ header, ...options });
  for (const record of records) analyzer.add(record);
  const analysis = analyzer.finish();
  // Every analysis is a valid document of the published shape.
  expect(analysisSchema.safeParse(analysis).success).toBe(true);
  return analysis;
}

describe('analyzer: API cost metrics', () => {
  it('burst shape: sliding 1 s and 10 s windows, first 60 s bins', () => {
    const records: ApiRecord[] = [];
    for (let i = 0; i < 30; i++) records.push(api(i * 100)); // 10/s for 3 s
    for (let i = 0; i < 25; i++) records.push(api(10_000 + i * 20)); // 25 calls in 0.5 s
    const { api: a } = analyze(records);
    expect(a.burst.max1s).toMatchObject({ calls: 25, perSecond: 25 });
    // The best 10 s window holds the cluster and the calls from t = 500 on: 25 + 25.
    expect(a.burst.max10s).toMatchObject({ calls: 50, perSecond: 5 });
    expect(a.burst.first60s.slice(0, 4)).toEqual([10, 10, 10, 0]);
    expect(a.burst.first60s[10]).toBe(25);
    expect(a.burst.stepMs).toBe(1);
  });

  it('peak concurrency counts overlapping calls in flight', () => {
    const { api: a } = analyze([
      api(0, { dur: 100 }),
      api(50, { dur: 100 }),
      api(60, { dur: 10 }),
      api(200, { dur: 100 }),
      api(299, { dur: 5 }),
    ]);
    expect(a.concurrency).toEqual({ peak: 3, atMs: 60, resolutionMs: 1 });
  });

  it('a GraphQL mutation is a write, a query is not: what the emulator charges tells them (5 secondary points against 1)', async () => {
    const h = inProcess();
    const issue = h.emulator.state.issue(h.emulator.state.repo('fleetbench/repo-1'), 1);
    const query = await h.graphql('query { viewer { login } }');
    const mutation = await h.graphql(
      'mutation($id: ID!) { addComment(input: {subjectId: $id, body: "on it"}) { clientMutationId } }',
      { id: issue.nodeId },
    );
    const rest = await h.post('/repos/fleetbench/repo-1/issues/1/comments', { body: 'and here' });
    expect([query.status, mutation.status, rest.status]).toEqual([200, 200, 201]);
    const records = h.apiRecords() as ApiRecord[];
    expect(records.map((r) => [r.protocol, r.secondaryCost])).toEqual([
      ['graphql', 1],
      ['graphql', 5],
      ['rest', 5],
    ]);
    const { api: a } = analyze(records.map((r) => ({ ...r, session: 's1' })));
    expect(a.writes.total).toBe(2);
  });

  it('writes per minute (a GraphQL query is none, sliding 60 s) and 403/429/retry-after answers', () => {
    const records = [
      ...[0, 1000, 2000, 3000, 4000].map((t) => api(t, { method: 'POST', status: 201 })),
      ...[65_000, 66_000, 67_000].map((t) => api(t, { method: 'PATCH' })),
      api(5000, { protocol: 'graphql', method: 'POST', route: '/graphql', resource: 'graphql' }),
      api(6000, { status: 403, limited: 'secondary', retryAfter: 60 }),
      api(7000, { status: 429 }),
      api(8000, { retryAfter: 5 }),
      api(9000, { status: 404 }),
    ];
    const { api: a } = analyze(records);
    expect(a.writes).toMatchObject({ total: 8, maxPerMinute: 5 });
    expect(a.limited).toEqual({
      answers: 3,
      status403: 1,
      status429: 1,
      retryAfter: 2,
      primary: 0,
      secondary: 1,
    });
    expect(a.totals.errors).toBe(3);
  });

  it('polling floor is per session per cycle, with shared calls apart', () => {
    const { api: a } = analyze([
      api(0, { session: 's1', cycle: 0 }),
      api(1, { session: 's1', cycle: 0 }),
      api(2, { session: 's1', cycle: 0, resource: 'graphql', protocol: 'graphql' }),
      api(30_000, { session: 's1', cycle: 1 }),
      api(3, { session: 's2', cycle: 0 }),
      api(4, { session: 's2', cycle: 0 }),
      api(5, { cycle: 0 }), // a shared repo guard
      api(6, { session: 's2' }), // no cycle: not in the floor
    ]);
    expect(a.pollingFloor.attributedCalls).toBe(6);
    expect(a.pollingFloor.sessions).toBe(2);
    expect(a.pollingFloor.cycles).toBe(2);
    expect(a.pollingFloor.perSessionCycle).toEqual({
      all: { cells: 3, calls: 6, p50: 2, mean: 2, max: 3 },
      core: { cells: 3, calls: 5, p50: 2, mean: 1.667, max: 2 },
      graphql: { cells: 3, calls: 1, p50: 0, mean: 0.333, max: 1 },
    });
    expect(a.pollingFloor.sharedPerCycle.all).toEqual({ cells: 1, calls: 1, p50: 1, mean: 1, max: 1 });
  });

  it('the steady-state polling floor counts only the cycles that start at or after steady.start', () => {
    const records: BodyRecord[] = [];
    // Cycle 0 is a cold start (5 calls per session), later cycles poll 2 per session; cycle 1's
    // first call goes out 500 ms before the marker, so the whole of cycle 1 is before it.
    const calls = [5, 2, 2, 2];
    const starts = [0, 29_500, 60_000, 90_000];
    for (let cycle = 0; cycle < 4; cycle++) {
      for (const session of ['s1', 's2'])
        for (let i = 0; i < calls[cycle]!; i++)
          records.push(api(starts[cycle]! + 1000 + i, { session, cycle }));
      records.push(api(starts[cycle]!, { cycle, op: 'guard' })); // shared guard opens the cycle
    }
    // The cycle-1 guard went out before the marker too; the cycle-2 span opens at the cycle's due time.
    records.push({ kind: 'event', name: 'steady.start', t: 30_000 });
    records.push({ kind: 'event', name: 'steady.start', t: 95_000 }); // a later marker: the earliest counts
    records.push({
      kind: 'span',
      name: 'poll.cycle',
      t: 60_000,
      dur: 1200,
      outcome: 'ok',
      labels: { strategy: 'guarded' },
      data: { cycle: 2, sessions: 2, calls: 5, lagMs: 0, intervalMs: 30_000 },
    });
    const { api: a } = analyze(records);
    const pf = a.pollingFloor;
    expect(pf.perSessionCycle.all).toEqual({ cells: 8, calls: 22, p50: 2, mean: 2.75, max: 5 });
    expect(pf.steady).toEqual({
      sinceMs: 30_000,
      attributedCalls: 8,
      sessions: 2,
      cycles: 2,
      perSessionCycle: {
        all: { cells: 4, calls: 8, p50: 2, mean: 2, max: 2 },
        core: { cells: 4, calls: 8, p50: 2, mean: 2, max: 2 },
      },
      sharedPerCycle: {
        all: { cells: 2, calls: 2, p50: 1, mean: 1, max: 1 },
        core: { cells: 2, calls: 2, p50: 1, mean: 1, max: 1 },
      },
    });
    // A poll.cycle span that starts a cycle earlier than its calls moves the cycle's start.
    const early = analyze([
      ...records,
      { kind: 'span', name: 'poll.cycle', t: 29_000, dur: 1, outcome: 'ok', data: { cycle: 3 } },
    ]);
    expect(early.api.pollingFloor.steady?.cycles).toBe(1);
    expect(analyze(records.filter((r) => r.kind !== 'event')).api.pollingFloor.steady).toBeNull();
  });

  it('poll cycles: duration percentiles, interval, overruns, lag and skipped cycles', () => {
    const cycle = (t: number, dur: number, lagMs: number, intervalMs?: number): BodyRecord => ({
      kind: 'span',
      name: 'poll.cycle',
      t,
      dur,
      outcome: 'ok',
      labels: { strategy: 'naive' },
      data: { cycle: t / 30_000, sessions: 10, calls: 40, lagMs, ...(intervalMs ? { intervalMs } : {}) },
    });
    const skipped = (t: number, count: number): BodyRecord => ({
      kind: 'event',
      name: 'poll.cycle.skipped',
      t,
      labels: { count },
    });
    const a = analyze([
      cycle(0, 1000, 0, 30_000),
      cycle(30_000, 2000, 0, 30_000),
      cycle(60_000, 45_000, 0, 30_000), // overran: the next one is 15 s late
      cycle(120_000, 31_000, 15_000, 30_000), // overran by 1 s
      cycle(180_000, 500, 0), // declares no interval: not judged
      skipped(105_000, 1),
      skipped(151_000, 2),
    ]);
    const pc = a.controlPlane.pollCycles!;
    expect(pc).toMatchObject({
      count: 5,
      intervalMs: 30_000,
      intervalKnown: 4,
      overruns: 2,
      overrunPct: 50,
      skipped: 3,
    });
    expect(pc.durationMs).toMatchObject({ count: 5, min: 500, max: 45_000 });
    // HDR, 3 significant digits: within 0.1 % of the sample.
    expect(pc.durationMs!.p50).toBeGreaterThanOrEqual(2000);
    expect(pc.durationMs!.p50).toBeLessThanOrEqual(2002);
    expect(pc.durationMs!.p95).toBeCloseTo(45_000, -2);
    expect(pc.lagMs).toMatchObject({ count: 5, min: 0, max: 15_000 });
    expect(pc.lagMs!.p95).toBeCloseTo(15_000, -2);
    expect(a.warnings).toEqual([]);
    expect(analyze([api(0)]).controlPlane.pollCycles).toBeNull();
    const mixed = analyze([cycle(0, 20_000, 0, 30_000), cycle(30_000, 20_000, 0, 10_000)]);
    expect(mixed.controlPlane.pollCycles).toMatchObject({ intervalMs: 30_000, overruns: 1 });
    expect(mixed.warnings).toEqual([
      "poll cycles declare different intervals (10000–30000 ms): each cycle's overrun is judged against its own; intervalMs shows the longest",
    ]);
  });

  it('burn per reset window, straddle warning, hourly fallback, 304s free', () => {
    const reset1 = (EPOCH + 30 * 60_000) / 1000; // the window ends 30 min into the run
    const reset2 = reset1 + 3600;
    const rl = (reset: number, remaining: number) => ({ limit: 5000, remaining, reset, resource: 'core' });
    const { api: a, warnings } = analyze([
      api(0, { rl: rl(reset1, 4000) }),
      api(1000, { status: 304, notModified: true, conditional: true, cost: 0, rl: rl(reset1, 4000) }),
      api(2000, { cost: 1 }), // no headers: lands in the reset window that contains it
      api(40 * 60_000, { rl: rl(reset2, 4999) }),
      api(40 * 60_000 + 1, { resource: 'graphql', protocol: 'graphql', cost: 3 }), // no headers at all
      api(40 * 60_000 + 2, { status: null, resource: 'graphql', cost: 0 }), // opaque
    ]);
    const core = a.burn.windows.filter((w) => w.resource === 'core');
    expect(core.map((w) => [w.basis, w.reset, w.calls, w.points, w.startMs, w.endMs])).toEqual([
      ['reset', reset1, 3, 2, -30 * 60_000, 30 * 60_000],
      ['reset', reset2, 1, 1, 30 * 60_000, 90 * 60_000],
    ]);
    expect(core[0]!.usedMax).toBe(1000);
    expect(core[0]!.headroomPct).toBe(99.96);
    const graphql = a.burn.windows.filter((w) => w.resource === 'graphql');
    expect(graphql.map((w) => [w.basis, w.calls, w.points, w.startMs, w.limit])).toEqual([
      ['hourly', 1, 3, 0, 5000],
    ]);
    expect(a.burn.straddles).toEqual(['core']);
    expect(warnings.some((w) => /core: the run straddles a rate-limit reset \(2 windows\)/.test(w))).toBe(
      true,
    );
    expect(a.opaque).toEqual({ calls: 1, sharePct: 16.667, byResource: { graphql: 1 } });
    expect(a.conditional).toEqual({ requests: 1, notModified: 1, notModifiedPct: 100 });
  });

  it('the /rate_limit bracket compares the used delta with the points the trace saw', () => {
    const snapshot = (t: number, phase: string, used: number) => ({
      kind: 'event' as const,
      name: 'ratelimit.snapshot',
      t,
      data: {
        phase,
        resources: { core: { limit: 5000, remaining: 5000 - used, used, reset: 1_767_232_800 } },
      },
    });
    const { api: a } = analyze([
      snapshot(0, 'before', 100),
      api(10),
      api(20),
      api(30, { status: 304, notModified: true, cost: 0 }),
      snapshot(5000, 'after', 105),
    ]);
    expect(a.bracket?.byResource.core).toMatchObject({
      deltaUsed: 5,
      tracePoints: 2,
      unseenPoints: 3,
      sameWindow: true,
    });
  });

  it('the bracket of a window not yet started at "before" (used 0, moving reset) is comparable', () => {
    // GitHub reports reset = now + 1 h for a window nobody has opened: the two resets differ.
    const resetAt = (t: number) => Math.ceil((EPOCH + t) / 1000);
    const snapshot = (t: number, label: string, used: number, reset: number) => ({
      kind: 'event' as const,
      name: 'ratelimit.snapshot',
      t,
      labels: { identity: 'user:fleet-agent', label },
      data: {
        resources: {
          core: { limit: 5000, remaining: 5000 - used, used, reset },
          search: { limit: 30, remaining: 30, used: 0, reset: resetAt(t + 60_000) },
        },
      },
    });
    const within = analyze([
      snapshot(0, 'before', 0, resetAt(HOUR)),
      api(1000),
      api(2000),
      snapshot(50 * 60_000, 'after', 4, resetAt(1000 + HOUR)),
    ]);
    expect(within.api.bracket?.byResource).toEqual({
      core: {
        before: { limit: 5000, remaining: 5000, used: 0, reset: resetAt(HOUR) },
        after: { limit: 5000, remaining: 4996, used: 4, reset: resetAt(1000 + HOUR) },
        sameWindow: false,
        deltaBasis: 'window-opened',
        deltaUsed: 4,
        tracePoints: 2,
        unseenPoints: 2,
      },
    });
    // search: unused in both snapshots, no trace points: no row, and no warning either.
    expect(within.api.bracket?.warnings).toEqual([]);
    expect(within.warnings.filter((w) => w.includes('bracket'))).toEqual([]);

    // After more than one window: the window may have reset in between.
    const apart = analyze([
      snapshot(0, 'before', 0, resetAt(HOUR)),
      api(1000),
      snapshot(HOUR + 5000, 'after', 1, resetAt(HOUR + 2000 + HOUR)),
    ]);
    expect(apart.api.bracket?.byResource.core).toMatchObject({ deltaBasis: null, deltaUsed: null });
    expect(apart.api.bracket?.warnings).toEqual([
      'rate-limit bracket: core: the snapshots are more than one rate-limit window apart; its delta is not comparable',
    ]);

    // Used before and a different reset: a real reset in between.
    const reset = analyze([
      snapshot(0, 'before', 7, resetAt(60_000)),
      api(61_000),
      snapshot(120_000, 'after', 1, resetAt(61_000 + HOUR)),
    ]);
    expect(reset.api.bracket?.byResource.core).toMatchObject({ sameWindow: false, deltaUsed: null });
    expect(reset.api.bracket?.warnings).toEqual([
      'rate-limit bracket: core reset between the snapshots; its delta is not comparable',
    ]);
  });

  it('brackets a run through the real emulator: snapshots labelled before/after, unused resources left out', async () => {
    const { emulator, get, graphql, advance, sink } = inProcess();
    emulator.admin.snapshotRateLimit({ label: 'before' });
    await advance(5000);
    await get('/repos/fleetbench/repo-1/issues');
    await get('/repos/fleetbench/repo-1/pulls');
    await graphql('query { viewer { login } }');
    await advance(20 * 60_000);
    await get('/repos/fleetbench/repo-1/issues');
    emulator.admin.snapshotRateLimit({ label: 'after' });
    const analyzer = createAnalyzer({ header: { ...header, epochMs: VIRTUAL_EPOCH_MS } });
    for (const record of sink.records) analyzer.add(record as BodyRecord);
    const { api: a, warnings } = analyzer.finish();
    expect(Object.keys(a.bracket!.byResource)).toEqual(['core', 'graphql']);
    expect(a.bracket!.byResource.core).toMatchObject({
      sameWindow: false,
      deltaBasis: 'window-opened',
      deltaUsed: 3,
      tracePoints: 3,
      unseenPoints: 0,
    });
    expect(a.bracket!.byResource.graphql).toMatchObject({ deltaUsed: 1, tracePoints: 1, unseenPoints: 0 });
    expect(a.bracket!.warnings).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('projection and the Track B scorecard: measured at 50 sessions, projected otherwise', () => {
    // One hour; 50 sessions each making 40 core calls and 10 GraphQL points.
    const records: ApiRecord[] = [];
    for (let s = 0; s < 50; s++) {
      for (let i = 0; i < 40; i++) records.push(api((i * HOUR) / 40 + s, { session: `s${s}` }));
      records.push(
        api(s * 1000, {
          session: `s${s}`,
          protocol: 'graphql',
          method: 'POST',
          route: '/graphql',
          resource: 'graphql',
          cost: 10,
        }),
      );
    }
    records.push(api(HOUR - 10, { dur: 10 }));
    // The steady window is the whole hour (the marker at 0): the projection is judged from it.
    const steady: BodyRecord = { kind: 'event', name: 'steady.start', t: 0 };
    const at50 = analyze([steady, ...records]);
    expect(at50.api.projection.window).toMatchObject({ basis: 'steady', judged: true, fromMs: 0 });
    expect(at50.run.sessions).toBe(50);
    expect(at50.api.projection.byResource.core).toMatchObject({
      limit: 5000,
      limitSource: 'default',
      perSessionPointsPerHour: 40.02,
    });
    expect(at50.api.projection.byResource.core?.sessionsThatFit).toBe(124);
    const rows = Object.fromEntries(at50.scorecard.rows.map((r) => [r.id, r]));
    expect(at50.scorecard.projected).toBe(false);
    expect(rows['rest-core-headroom']).toMatchObject({
      measured: 59.98,
      verdict: 'pass',
      basis: 'measured at 50 sessions, on the 5,000/h token',
    });
    expect(rows['graphql-headroom']).toMatchObject({ measured: 90, verdict: 'pass' });
    expect(rows['limited-answers']).toMatchObject({ measured: 0, verdict: 'pass' });
    // The same records judged as if they came from 10 sessions: 5× the per-session cost.
    const at10 = analyze([steady, ...records], { sessions: 10 });
    const rows10 = Object.fromEntries(at10.scorecard.rows.map((r) => [r.id, r]));
    expect(at10.scorecard.projected).toBe(true);
    expect(rows10['rest-core-headroom']).toMatchObject({ measured: -100.1, verdict: 'fail' });
    expect(rows10['rest-core-headroom']!.basis).toMatch(/projected from 10 to 50 sessions/);
    expect(at10.scorecard.verdict).toBe('fail');
  });

  it('a projection is judged only from a steady window that holds a poll interval; otherwise not judged, saying why', () => {
    // A cold start: 60 calls in the first 10 s, then 1 call a minute (10 sessions).
    const records: BodyRecord[] = [];
    for (let i = 0; i < 60; i++) records.push(api(i * 150, { session: `s${i % 10}` }));
    for (let m = 1; m <= 20; m++) records.push(api(m * 60_000, { session: `s${m % 10}` }));
    const rowOf = (a: ReturnType<typeof analyze>) =>
      a.scorecard.rows.find((r) => r.id === 'rest-core-headroom')!;

    // No steady.start marker: the rate would include the start, so nothing is judged.
    const none = analyze(records);
    expect(none.api.projection.window).toMatchObject({
      basis: 'whole-run',
      judged: false,
      reason:
        'the run has no steady window: no steady.start marker, and no poll cycle began after every session was polling (sessions still starting, or no cycle ids in the trace); its rate includes its start',
    });
    expect(rowOf(none)).toMatchObject({ measured: null, verdict: 'unknown' });
    expect(rowOf(none).notJudged).toMatch(/^not judged: the run has no steady window/);
    // The whole run's own figure stays beside it, labelled as such.
    expect(rowOf(none).observed).toBe(95.2);
    expect(rowOf(none).observedAt).toBe(10);

    // A marker 10 s before the end: less than one poll interval (30 s, assumed: no cycles to measure it).
    const short = analyze([{ kind: 'event', name: 'steady.start', t: 20 * 60_000 - 10_000 }, ...records]);
    expect(short.api.projection.window).toMatchObject({
      judged: false,
      neededMs: 30_000,
      reason:
        'the steady window from the steady.start marker at 19m50s (10s) is shorter than one poll interval (30s, assumed: too few cycles in the trace to measure it), and no poll cycle began after every session was polling (sessions still starting, or no cycle ids in the trace): its rate includes its start',
      advice: 'a duration of at least 20m20s',
    });
    expect(rowOf(short).verdict).toBe('unknown');

    // A marker after the start: the rate is the steady one (1 call a minute), not the start's.
    const steady = analyze([{ kind: 'event', name: 'steady.start', t: 60_000 }, ...records]);
    expect(steady.api.projection.window).toMatchObject({ basis: 'steady', judged: true, fromMs: 60_000 });
    // 20 calls in the 19 minutes from the marker, against 80 in 20 minutes over the whole run.
    expect(steady.api.projection.byResource.core!.pointsPerHour).toBe(63.2);
    expect(none.api.projection.byResource.core!.pointsPerHour).toBe(240);
    expect(rowOf(steady)).toMatchObject({ verdict: 'pass', projected: true });
  });

  it('spans by name and label set, events, gauges (last by time)', () => {
    const a = analyze([
      {
        kind: 'span',
        name: 'agent.boot',
        t: 0,
        dur: 1000,
        outcome: 'ok',
        labels: { adapter: 'codex', start: 'cold' },
      },
      {
        kind: 'span',
        name: 'agent.boot',
        t: 0,
        dur: 3000,
        outcome: 'error',
        labels: { start: 'cold', adapter: 'codex' },
      },
      {
        kind: 'span',
        name: 'agent.boot',
        t: 0,
        dur: 500,
        outcome: 'ok',
        labels: { adapter: 'claude', start: 'warm' },
      },
      { kind: 'event', name: 'steady.start', t: 5 },
      { kind: 'event', name: 'steady.start', t: 6 },
      { kind: 'gauge', name: 'sessions', t: 2, value: 4, labels: { state: 'awake' } },
      { kind: 'gauge', name: 'sessions', t: 1, value: 9, labels: { state: 'awake' } },
      { kind: 'gauge', name: 'sessions', t: 2, value: 3, labels: { state: 'awake' } },
    ]);
    expect(a.spans.byName).toEqual([
      {
        name: 'agent.boot',
        count: 3,
        outcomes: { ok: 2, error: 1, cancelled: 0 },
        latency: expect.objectContaining({ count: 3, min: 500, max: 3000, p99: 3000 }),
      },
    ]);
    // 1000 ms within the histogram's 3 significant digits.
    expect(Math.abs(a.spans.byName[0]!.latency!.p50 - 1000)).toBeLessThanOrEqual(1);
    expect(a.spans.byLabels.map((s) => [s.labels, s.count])).toEqual([
      [{ adapter: 'claude', start: 'warm' }, 1],
      [{ adapter: 'codex', start: 'cold' }, 2],
    ]);
    expect(a.events.byName).toEqual({ 'steady.start': 2 });
    expect(a.gauges).toEqual([
      { name: 'sessions', labels: { state: 'awake' }, count: 3, last: 3, lastAtMs: 2, min: 3, max: 9 },
    ]);
  });

  it('latency percentiles come from the HDR histogram within its precision', () => {
    const records = Array.from({ length: 1000 }, (_, i) => api(i, { dur: i + 1 }));
    const { api: a } = analyze(records);
    const all = a.latency.all!;
    expect(all.count).toBe(1000);
    expect(all.min).toBe(1);
    expect(all.max).toBe(1000);
    for (const [p, exact] of [
      [all.p50, 500],
      [all.p90, 900],
      [all.p95, 950],
      [all.p99, 990],
    ] as const) {
      expect(Math.abs(p - exact) / exact).toBeLessThanOrEqual(0.001);
    }
  });
});

describe('analyzer: merge', () => {
  // A mix of every kind, with time ties (gauges, snapshots) and calls out of time order.
  const records: BodyRecord[] = [];
  for (let i = 0; i < 400; i++) {
    const t = (i * 997) % 50_000;
    records.push(
      api(t, {
        dur: (i % 7) * 13 + 1,
        session: `s${i % 9}`,
        cycle: Math.floor(t / 30_000),
        op: i % 3 ? 'guard' : 'detect',
        status: i % 11 === 0 ? null : i % 5 === 0 ? 304 : 200,
        method: i % 13 === 0 ? 'POST' : 'GET',
        cost: i % 5 === 0 ? 0 : 1,
        rl:
          i % 4 === 0
            ? undefined
            : { limit: 5000, remaining: 4000, reset: (EPOCH + (t < 20_000 ? 0 : HOUR)) / 1000 + 600 },
      }),
    );
    if (i % 50 === 0) records.push({ kind: 'gauge', name: 'inflight', t: 100, value: i });
    if (i % 40 === 7) {
      records.push({
        kind: 'span',
        name: 'poll.cycle',
        t: Math.max(0, t - 500),
        dur: (i % 3) * 20_000,
        outcome: 'ok',
        data: { cycle: Math.floor(t / 30_000), lagMs: i % 5, intervalMs: 30_000 },
      });
      records.push({ kind: 'event', name: 'poll.cycle.skipped', t, labels: { count: i % 3 } });
    }
    if (i === 150 || i === 390)
      records.push({ kind: 'event', name: 'steady.start', t: i === 150 ? 31_000 : 29_000 });
    if (i % 60 === 0)
      records.push({ kind: 'span', name: 'boot', t, dur: i, outcome: 'ok', labels: { n: i % 2 } });
    if (i % 100 === 0) {
      records.push({
        kind: 'event',
        name: 'ratelimit.snapshot',
        t: 0,
        data: {
          phase: i === 0 ? 'before' : 'after',
          resources: { core: { limit: 5000, remaining: 4000 - i, reset: 1 } },
        },
      });
    }
  }
  const single = createAnalyzer({ header });
  for (const r of records) single.add(r);
  const expected = single.finish();

  it.each([0, 1, 137, 200, records.length - 1, records.length])(
    'two halves split at %i merge to the single pass',
    (cut) => {
      const a = createAnalyzer({ header });
      const b = createAnalyzer({ header });
      for (const r of records.slice(0, cut)) a.add(r);
      for (const r of records.slice(cut)) b.add(r);
      expect(a.merge(b).finish()).toEqual(expected);
    },
  );

  it('survives a structured clone of its state (what a worker posts)', () => {
    const parts = [0, 100, 250, records.length];
    let merged = createAnalyzer({ header });
    for (let i = 0; i + 1 < parts.length; i++) {
      const part = createAnalyzer();
      for (const r of records.slice(parts[i], parts[i + 1])) part.add(r);
      merged = merged.merge(analyzerFromState(structuredClone(part.toState())));
    }
    expect(merged.finish()).toEqual(expected);
  });

  it('a merged analyzer, and one from a state, keep counting the records after (per-key caches stay true)', () => {
    const a = createAnalyzer({ header });
    const b = createAnalyzer({ header });
    for (const r of records.slice(0, 137)) a.add(r);
    for (const r of records.slice(137, 250)) b.add(r);
    a.merge(b);
    for (const r of records.slice(250)) a.add(r);
    expect(a.finish()).toEqual(expected);
    const c = createAnalyzer({ header });
    for (const r of records.slice(0, 200)) c.add(r);
    const restored = analyzerFromState(structuredClone(c.toState()), { header });
    for (const r of records.slice(200)) restored.add(r);
    expect(restored.finish()).toEqual(expected);
  });

  it('finish() is repeatable and adding more later keeps counting (live runs)', () => {
    const live = createAnalyzer({ header });
    for (const r of records.slice(0, 100)) live.add(r);
    const early = live.finish();
    expect(live.finish()).toEqual(early);
    for (const r of records.slice(100)) live.add(r);
    expect(live.finish()).toEqual(expected);
  });
});

describe('the Analysis contract', () => {
  it('publishes a JSON Schema generated from the zod schema (docs/analysis.schema.json)', () => {
    const committed = JSON.parse(
      readFileSync(new URL('../docs/analysis.schema.json', import.meta.url), 'utf8'),
    );
    expect(committed).toEqual(analysisJsonSchema());
    expect(JSON.stringify(committed)).toContain('"schemaVersion"');
  });

  it('an empty analyzer still gives a complete document', () => {
    const a = createAnalyzer().finish();
    expect(analysisSchema.parse(a)).toEqual(a);
    expect(a.scorecard.rows.map((r) => r.verdict)).toEqual([
      'unknown',
      'unknown',
      'pass',
      'pass',
      'pass',
      'pass',
      'pass',
    ]);
  });
});

describe('cycle counts', () => {
  it('stay exact with cycles out of order, re-based and sparse', async () => {
    const { CycleCounts } = await import('../src/analyze/cycles.ts');
    const counts = new CycleCounts();
    const naive = new Map<string, number>();
    const cycles = [5, 3, 900, 4, -2, 5, 5, 2_000_000_000, 3];
    for (const [i, cycle] of cycles.entries()) {
      const key = i % 2 ? 'a' : 'b';
      const resource = i % 3 ? 'core' : 'graphql';
      counts.add(key, cycle, resource);
      naive.set(`${key}/${cycle}`, (naive.get(`${key}/${cycle}`) ?? 0) + 1);
    }
    const { cells, freq } = counts.frequencies(() => true);
    expect(cells).toBe(naive.size);
    const expected = new Map<number, number>();
    for (const n of naive.values()) expected.set(n, (expected.get(n) ?? 0) + 1);
    expect(freq.get('all')).toEqual(expected);
    const clone = CycleCounts.fromState(structuredClone(counts.toState()));
    const merged = new CycleCounts();
    merged.merge(clone);
    expect(merged.frequencies(() => true).freq).toEqual(freq);
  });
});
