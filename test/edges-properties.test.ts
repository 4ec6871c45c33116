/**
 * The edges' invariants (docs/analysis.md#edges-any-control-plane-from-its-traffic), searched for a
 * counter-example with fast-check over generated world traces: sessions, agents attributed or not,
 * model requests inside and outside the launchers, GitHub calls with and without a session,
 * restarts (hard and graceful), a control plane that dies, blocked attempts.
 *
 * - Every GitHub call is a session's or the overhead, every model request a session's, the
 *   control plane's agents', outside the launchers or unidentified: the parts add up to the
 *   totals the rest of the analysis counts (api.totals, analysis.provider).
 * - A spawn's boot is never negative, and a recovery is its control-plane share plus the rest.
 * - The figures do not depend on the order of records that share a timestamp, nor on where a
 *   file is split across threads (merged analyzers, states through a structured clone).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_UNSERVED_PATHS, UNSERVED_OTHER } from '../src/analyze/accumulators/session-calls.ts';
import { analyzerFromState, createAnalyzer } from '../src/analyze/analyzer.ts';
import type { Analysis } from '../src/analyze/schema.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import {
  attributed,
  blocked,
  boot,
  call,
  cpExited,
  exited,
  ready,
  request,
  restarted,
  spawned,
  state,
  workCreated,
  worldStarted,
} from './helpers/edges-trace.ts';

const AGENTS = ['codex', 'claude', 'opencode'] as const;
const ROUTES = [
  '/repos/{owner}/{repo}/issues',
  '/repos/{owner}/{repo}/issues/{issue_number}/comments',
  '/graphql',
];
/** Times on a 500 ms grid over 20 s: records often share a timestamp. */
const time = fc.integer({ min: 0, max: 40 }).map((n) => n * 500);

const worldTrace = fc
  .record({
    sessions: fc.array(fc.record({ created: time, done: fc.option(time, { nil: undefined }) }), {
      maxLength: 4,
    }),
    spawns: fc.array(
      fc.record({
        t: time,
        agent: fc.constantFrom(...AGENTS),
        session: fc.option(fc.nat(3), { nil: undefined }),
        attributedAfter: fc.integer({ min: 0, max: 2000 }),
        ranFor: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }),
      }),
      { maxLength: 5 },
    ),
    requests: fc.array(
      fc.record({
        t: time,
        spawn: fc.option(fc.nat(5), { nil: undefined }),
        tokensIn: fc.nat(5000),
        tokensOut: fc.nat(500),
        ttft: fc.option(fc.nat(800), { nil: null }),
      }),
      { maxLength: 12 },
    ),
    calls: fc.array(
      fc.record({
        t: time,
        method: fc.constantFrom('GET', 'POST', 'PATCH'),
        route: fc.constantFrom(...ROUTES),
        session: fc.option(fc.nat(4), { nil: undefined }),
        // A work command's call (the handover's token), with or without a session its content names.
        handover: fc.boolean(),
        // A path the emulator serves no route for (answered 404), its number or SHA varying.
        unserved: fc.option(
          fc.constantFrom(
            '/issues/7/reactions',
            '/issues/8/reactions',
            '/commits/' + 'ab'.repeat(20) + '/pulls',
            '/api/v3/x/1',
          ),
          { nil: undefined },
        ),
      }),
      { maxLength: 15 },
    ),
    restarts: fc.array(
      fc.record({
        gap: fc.integer({ min: 1, max: 40 }),
        outage: fc.integer({ min: 1, max: 30 }),
        kind: fc.constantFrom('hard' as const, 'graceful' as const),
        boot: fc.boolean(),
      }),
      { maxLength: 2 },
    ),
    exit: fc.option(time, { nil: undefined }),
    blocked: fc.array(fc.record({ t: time, host: fc.constantFrom('example.com', 'registry.npmjs.org') }), {
      maxLength: 3,
    }),
  })
  .map((g): BodyRecord[] => {
    const records: BodyRecord[] = [worldStarted(0)];
    const sessions = g.sessions.map((_, i) => `s${i + 1}`);
    g.sessions.forEach((s, i) => {
      records.push(workCreated(s.created, sessions[i]!, i + 1));
      if (s.done !== undefined)
        records.push(state(Math.max(s.created, s.done), sessions[i]!, 'working', 'pr_open'));
    });
    const spawns = g.spawns.map((s, i) => ({ id: `a${i + 1}`, agent: s.agent }));
    g.spawns.forEach((s, i) => {
      const spawn = spawns[i]!;
      records.push(spawned(s.t, spawn.id, spawn.agent));
      // One attribution per spawn: the last one wins, and two at one time would be a tie.
      if (s.session !== undefined && s.session < sessions.length)
        records.push(attributed(s.t + s.attributedAfter, spawn.id, sessions[s.session]!));
      if (s.ranFor !== undefined) records.push(exited(s.t + s.ranFor, spawn.id, spawn.agent, s.t));
    });
    for (const r of g.requests) {
      const spawn =
        r.spawn === undefined ? null : (spawns[r.spawn] ?? { id: `a${r.spawn + 1}`, agent: 'codex' });
      records.push(request(r.t, spawn, r.tokensIn, r.tokensOut, r.ttft));
    }
    for (const c of g.calls) {
      const made = call(
        c.t,
        c.route === '/graphql' ? 'POST' : c.method,
        c.route,
        c.session === undefined || c.session >= sessions.length ? undefined : sessions[c.session],
        c.route === '/graphql' ? 'graphql' : 'core',
      );
      const served =
        c.unserved === undefined
          ? made
          : {
              ...made,
              route: '(unmatched)',
              status: 404,
              error: `Not Found: /repos/fleetbench/repo-1${c.unserved}`,
            };
      records.push(c.handover ? { ...served, source: 'harness' } : served);
    }
    // Restarts one after another: a kill, then its ready strictly before the next kill.
    let at = 0;
    for (const r of g.restarts) {
      const kill = at + r.gap * 100 + 50;
      const readyAt = kill + r.outage * 100;
      records.push(restarted(kill, r.kind));
      if (r.boot) records.push(boot(kill + 20, readyAt - kill - 20, r.kind));
      records.push(ready(readyAt, r.kind));
      at = readyAt;
    }
    if (g.exit !== undefined) records.push(cpExited(at + g.exit + 30, 1, null));
    for (const b of g.blocked) records.push(blocked(b.t, 'dns', b.host, ['npm', 'install']));
    return records;
  });

/** The records in time order, ties broken by `keys` (a different order of the same trace). */
function reorderTies(records: readonly BodyRecord[], keys: readonly number[]): BodyRecord[] {
  return records
    .map((r, i) => [r, keys[i % keys.length] ?? 0, i] as const)
    .sort(([a, ka, ia], [b, kb, ib]) => a.t - b.t || ka - kb || ia - ib)
    .map(([r]) => r);
}

function analyse(records: readonly BodyRecord[]): Analysis {
  const analyzer = createAnalyzer();
  for (const r of records) analyzer.add(r);
  return analyzer.finish();
}

/** The records cut at `cut`, each part analysed alone, the two merged through a structured clone. */
function analyseSplit(records: readonly BodyRecord[], cut: number): Analysis {
  const first = createAnalyzer();
  const second = createAnalyzer();
  for (const r of records.slice(0, cut)) first.add(r);
  for (const r of records.slice(cut)) second.add(r);
  return analyzerFromState(structuredClone(first.toState()))
    .merge(analyzerFromState(structuredClone(second.toState())))
    .finish();
}

/** What the edges decide: their section and the speed metrics they feed. */
const edgeFigures = (a: Analysis) => ({ edges: a.edges, speed: a.speed });

const RUNS = { numRuns: 150 };

describe('edges: invariants over generated world traces', () => {
  it('every call and request is attributed to exactly one part, and the parts add up to the totals', () => {
    fc.assert(
      fc.property(worldTrace, (records) => {
        const a = analyse(records);
        const e = a.edges!;
        const g = e.attribution.github;
        const handover = g.handover ?? { calls: 0, points: 0, writes: 0 };
        expect(g.attributed + g.overhead).toBe(g.calls);
        expect(g.calls + handover.calls).toBe(a.api.totals.calls);
        expect(g.attributedPoints + g.overheadPoints + handover.points).toBeCloseTo(a.api.totals.points, 6);
        expect(g.writes + handover.writes).toBe(a.api.totals.writes);
        // The handover's calls are the source-harness ones, whatever session their content names.
        expect(handover.calls).toBe(records.filter((r) => r.kind === 'api' && r.source === 'harness').length);
        // Every call to a path no route serves is counted, one entry per route shape.
        const unserved = records.filter((r) => r.kind === 'api' && r.route === '(unmatched)').length;
        expect(g.unserved?.calls ?? 0).toBe(unserved);
        if (g.unserved) {
          expect(Object.values(g.unserved.byPath).reduce((a, b) => a + b, 0)).toBe(unserved);
          expect(Object.keys(g.unserved.byPath).every((k) => !/\/\d+(\/|$)/.test(k))).toBe(true);
          expect(
            a.warnings.some((w) =>
              w.startsWith(`${unserved} GitHub call(s) to paths the emulator serves no route for`),
            ),
          ).toBe(true);
        }
        const m = e.attribution.model;
        const parts = [m.sessions, m.controlPlane, m.outside, m.unidentified];
        expect(parts.reduce((n, p) => n + p.requests, 0)).toBe(m.requests);
        expect(m.requests).toBe(a.provider?.requests ?? 0);
        const tokensIn = Object.values(a.provider?.byCli ?? {}).reduce((n, c) => n + c.tokensIn, 0);
        expect(parts.reduce((n, p) => n + p.tokensIn, 0)).toBe(tokensIn);
        // Per session, GitHub calls add up to the attributed ones.
        if (e.sessions.leftOut === 0)
          expect(e.sessions.list.reduce((n, s) => n + s.github.calls, 0)).toBe(g.attributed);
      }),
      RUNS,
    );
  });

  it('a boot is never negative, a recovery is its control-plane share plus the rest, an orphan ran after its control plane was gone', () => {
    fc.assert(
      fc.property(worldTrace, (records) => {
        const a = analyse(records);
        for (const g of a.speed?.metrics.agent_boot.groups ?? [])
          for (const v of g.values) expect(v).toBeGreaterThanOrEqual(0);
        for (const s of a.edges!.spawns.list)
          if (s.bootMs !== null) expect(s.bootMs).toBeGreaterThanOrEqual(0);
        for (const r of a.speed?.recoveries ?? []) {
          expect(r.controlPlaneMs).toBeGreaterThanOrEqual(0);
          expect(r.providerLoadMs!).toBeGreaterThanOrEqual(0);
          expect(r.controlPlaneMs + r.providerLoadMs!).toBeCloseTo(r.fullMs, 2);
        }
        for (const o of a.edges!.orphans.list) {
          expect(o.startedAtMs).toBeLessThan(o.goneAtMs);
          expect(o.goneAtMs).toBeGreaterThanOrEqual(o.killAtMs);
          expect(o.ranAfterMs).toBeGreaterThanOrEqual(0);
        }
        const c = a.speed?.recoveryCounts ?? [];
        for (const row of c) expect(row.recovered + row.finished + row.unrecovered).toBe(row.cut);
      }),
      RUNS,
    );
  });

  it('the figures do not depend on the order of records that share a timestamp', () => {
    fc.assert(
      fc.property(worldTrace, fc.array(fc.nat(1000), { minLength: 1, maxLength: 64 }), (records, keys) => {
        const inOrder = reorderTies(records, [0]);
        expect(edgeFigures(analyse(reorderTies(records, keys)))).toEqual(edgeFigures(analyse(inOrder)));
      }),
      RUNS,
    );
  });

  it('a file split anywhere, analysed in parts and merged (through a structured clone), gives the same figures', () => {
    fc.assert(
      fc.property(worldTrace, fc.nat(), (trace, at) => {
        const records = reorderTies(trace, [0]);
        const merged = analyseSplit(records, at % (records.length + 1));
        expect(edgeFigures(merged)).toEqual(edgeFigures(analyse(records)));
      }),
      RUNS,
    );
  });

  it('calls to paths no route serves: at most 50 counted apart, the rest together, the same however the file is split', () => {
    fc.assert(
      fc.property(
        // A few more paths than are counted apart, and enough calls that both parts of a split
        // see more than 50 of them: where a part drops a path another keeps, the counts differ.
        fc.array(fc.record({ t: time, path: fc.nat(29), method: fc.constantFrom('GET', 'POST') }), {
          minLength: 120,
          maxLength: 400,
        }),
        fc.integer({ min: 0, max: 1000 }),
        (calls, per) => {
          const records: BodyRecord[] = [worldStarted(0)];
          for (const c of [...calls].sort((a, b) => a.t - b.t))
            records.push({
              ...call(c.t, c.method, '(unmatched)'),
              status: 404,
              error: `Not Found: /repos/fleetbench/repo-1/x${c.path}/y`,
            });
          const whole = analyse(records).edges!.attribution.github.unserved;
          expect(whole?.calls ?? 0).toBe(calls.length);
          if (whole) {
            expect(Object.values(whole.byPath).reduce((a, b) => a + b, 0)).toBe(calls.length);
            expect(Object.keys(whole.byPath).filter((k) => k !== UNSERVED_OTHER).length).toBeLessThanOrEqual(
              MAX_UNSERVED_PATHS,
            );
          }
          const merged = analyseSplit(records, Math.floor((records.length * per) / 1000));
          expect(merged.edges!.attribution.github.unserved).toEqual(whole);
        },
      ),
      RUNS,
    );
  });
});
