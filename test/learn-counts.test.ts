/**
 * `model learn`'s passes over a trace's calls without a `Map` per cycle (src/learn/trace.ts,
 * src/learn/cycle-time.ts, docs/performance.md "model learn"): the shared calls counted in typed
 * arrays by the CallTable's operation id, a cycle's calls grouped by session in flat arrays, a fit
 * window's chains picked by an index array, a cycle's repository by votes in typed arrays. And
 * the numbering of kinds of call (Operations.add: the last kind's strings compared first, then
 * the key joined from them), whatever object holds each string. Properties over random calls and chains: each gives
 * what the `Map`s gave, in the same order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Chain, windowChains } from '../src/learn/cycle-time.ts';
import { CallTable, Operations, Tally } from '../src/learn/learner.ts';
import { countShared, groupBySession, OpCounts, sessionKeys, sumFrom, topRepo } from '../src/learn/trace.ts';
import type { ApiRecord } from '../src/trace/schema.ts';

/** Calls with or without a session and a repository, of a handful of operations. */
const callsArbitrary = fc.array(
  fc.record({
    // A session named '' is grouped with the calls of no session, as the Map by name did.
    session: fc.option(fc.constantFrom('s1', 's2', 's3', ''), { nil: undefined }),
    repo: fc.option(fc.constantFrom('o/a', 'o/b'), { nil: undefined }),
    kind: fc.integer({ min: 0, max: 5 }),
  }),
  { maxLength: 60 },
);

/** A CallTable of those calls; kinds 4 and 5 share an operation key with kinds 0 and 1. */
function tableOf(calls: ReadonlyArray<{ session?: string; repo?: string; kind: number }>): CallTable {
  const table = new CallTable();
  calls.forEach((c, i) => {
    table.push({ t: i, dur: 1, cost: 0, session: c.session, repo: c.repo } as unknown as ApiRecord, c.kind);
  });
  table.name(['GetA', 'GetB', 'ListC', 'PatchD', 'GetA', 'GetB']);
  return table;
}

/** learnShared's counting as it was: a Map by operation name per kind of tally. */
function sharedBefore(T: CallTable, calls: readonly number[]) {
  const perRepo = new Map<string, number>();
  const perProject = new Map<string, number>();
  for (const i of calls) {
    if (T.session[i]! >= 0) continue;
    const tally = T.repo[i]! >= 0 ? perRepo : perProject;
    const op = T.opOf(i);
    tally.set(op, (tally.get(op) ?? 0) + 1);
  }
  return { perRepo, perProject };
}

describe('counts by operation id', () => {
  it("learnShared's counts: the same tallies, in the same order, as the Maps by name, cycle after cycle", () => {
    fc.assert(
      fc.property(callsArbitrary, fc.array(fc.nat(), { maxLength: 5 }), (calls, cuts) => {
        const T = tableOf(calls);
        // The calls cut into cycles (each a run of indices), counted with the same counters.
        const bounds = [...new Set(cuts.map((c) => c % (calls.length + 1)))].sort((a, b) => a - b);
        const cycles: number[][] = [];
        let from = 0;
        for (const b of [...bounds, calls.length]) {
          cycles.push(Array.from({ length: b - from }, (_, k) => from + k));
          from = b;
        }
        const perRepo = new OpCounts(T.ops.length);
        const perProject = new OpCounts(T.ops.length);
        const after = { perRepo: new Tally(), perProject: new Tally(), both: new Tally() };
        const before = { perRepo: new Tally(), perProject: new Tally(), both: new Tally() };
        for (const cycle of cycles) {
          countShared(T, cycle, perRepo, perProject);
          perRepo.addTo(after.perRepo, T.ops);
          perProject.addTo(after.perProject, T.ops);
          perProject.addTo(after.both, T.ops);
          perRepo.addTo(after.both, T.ops);
          perRepo.clear();
          perProject.clear();
          const old = sharedBefore(T, cycle);
          for (const [op, n] of old.perRepo) before.perRepo.add(op, n);
          for (const [op, n] of old.perProject) before.perProject.add(op, n);
          for (const [op, n] of [...old.perProject, ...old.perRepo]) before.both.add(op, n);
        }
        for (const key of ['perRepo', 'perProject', 'both'] as const)
          expect([...after[key].sums]).toEqual([...before[key].sums]);
      }),
      { numRuns: 300 },
    );
  });
});

/** The calls cut into cycles: runs of consecutive indices. */
function cyclesOf(size: number, cuts: readonly number[]): number[][] {
  const bounds = [...new Set(cuts.map((c) => c % (size + 1)))].sort((a, b) => a - b);
  const cycles: number[][] = [];
  let from = 0;
  for (const b of [...bounds, size]) {
    cycles.push(Array.from({ length: b - from }, (_, k) => from + k));
    from = b;
  }
  return cycles;
}

describe("a cycle's calls by session", () => {
  it("the groups of the Map by session name, in its order, each group in the cycle's order, cycle after cycle", () => {
    fc.assert(
      fc.property(
        callsArbitrary,
        fc.array(fc.nat(), { maxLength: 5 }),
        fc.boolean(),
        (calls, cuts, shuffle) => {
          const T = tableOf(calls);
          const keys = sessionKeys(T);
          const slots = new Int32Array(T.sessions.values.length + 1);
          const stamps = new Int32Array(T.sessions.values.length + 1);
          cyclesOf(calls.length, cuts).forEach((cycle, index) => {
            // A cycle's calls need not be in index order (calls of a reused cycle id).
            const list = shuffle ? [...cycle].reverse() : cycle;
            const before = new Map<string, number[]>();
            for (const i of list) {
              const key = T.sessionOf(i) ?? '';
              const group = before.get(key);
              if (group) group.push(i);
              else before.set(key, [i]);
            }
            const groups = groupBySession(list, T.session, keys, slots, stamps, index + 1);
            const after = [...groups.keys].map((key, g): [string, number[]] => [
              key < 0 ? '' : T.sessions.values[key]!,
              [...groups.calls.subarray(groups.starts[g]!, groups.starts[g + 1]!)],
            ]);
            expect(after).toEqual([...before]);
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** fitWindows' choice of a window's chains as it was: a Map of the cycles taken. */
function windowChainsBefore(
  chains: readonly Chain[],
  cycles: readonly number[],
  spans: Array<[number, number]>,
) {
  const index = new Map(cycles.map((c, k) => [c, k]));
  const out: Chain[] = [];
  for (const chain of chains) {
    const k = chain.cycle >= 0 ? index.get(chain.cycle) : undefined;
    if (k !== undefined) out.push({ ...chain, cycle: k });
    else if (chain.cycle < 0 && spans.some(([from, to]) => chain.startMs >= from && chain.startMs <= to))
      out.push(chain);
  }
  return out;
}

describe("a fit window's chains", () => {
  it('the chains the Map of cycles taken chose, renumbered alike, the spawns within its spans', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(
          fc.record({ cycle: fc.integer({ min: -1, max: 7 }), startMs: fc.integer({ min: 0, max: 80 }) }),
          {
            maxLength: 30,
          },
        ),
        fc.uniqueArray(fc.nat({ max: 7 }), { maxLength: 8 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 80 }), fc.integer({ min: 0, max: 20 })), {
          maxLength: 3,
        }),
        (cycleCount, rawChains, rawTaken, rawSpans) => {
          const chains: Chain[] = rawChains.map((c, n) => ({
            cycle: c.cycle % cycleCount,
            startMs: c.startMs,
            latenciesMs: [n],
          }));
          const taken = rawTaken.filter((c) => c < cycleCount).sort((a, b) => a - b);
          const spans = rawSpans.map(([from, length]): [number, number] => [from, from + length]);
          const index = new Int32Array(cycleCount).fill(-1);
          taken.forEach((c, k) => {
            index[c] = k;
          });
          expect(windowChains(chains, index, spans)).toEqual(windowChainsBefore(chains, taken, spans));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("a call's kind", () => {
  it('numbered as the key joined from its op, protocol, method and route numbers it, whatever object holds each string', () => {
    const piece = fc.constantFrom('a', 'b', 'a|b', '', 'GET', 'graphql');
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            op: fc.option(piece, { nil: undefined }),
            protocol: piece,
            method: piece,
            route: piece,
            cost: fc.integer({ min: 0, max: 3 }),
            // A string made anew (as the full parse makes it), not the scanner's repeated object.
            fresh: fc.boolean(),
          }),
          { maxLength: 40 },
        ),
        (records) => {
          const operations = new Operations();
          const firstOf = new Map<string, number>();
          const fullOf: string[] = [];
          for (const r of records) {
            const copy = (v: string) => (r.fresh ? [...v].join('') : v);
            const record = {
              op: r.op === undefined ? undefined : copy(r.op),
              protocol: copy(r.protocol),
              method: copy(r.method),
              route: copy(r.route),
              resource: 'core',
              cost: r.cost,
            } as unknown as ApiRecord;
            const full = `${r.op ?? ''}|${r.protocol}|${r.method}|${r.route}`;
            if (!firstOf.has(full)) {
              firstOf.set(full, fullOf.length);
              fullOf.push(full);
            }
            const id = operations.add(record);
            expect(id).toBe(firstOf.get(full));
            expect(operations.kindKey(id)).toBe(full);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('a sum of counts', () => {
  it("adds each value to the start in turn, as the loop adding them to the learner's field did", () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true }),
        fc.array(fc.double({ noNaN: true }), { maxLength: 30 }),
        (start, values) => {
          let field = start;
          for (const n of values) field += n;
          expect(Object.is(sumFrom(start, values), field)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("a cycle's repository", () => {
  it("the one a Map of votes sorted by count put first (ties to the first named), none named '' counted", () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.constantFrom('o/a', 'o/b', 'o/c', ''), { nil: undefined }), { maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        (repos, cuts) => {
          const T = tableOf(repos.map((repo) => ({ repo, kind: 0 })));
          const named = Uint8Array.from(T.repos.values, (name) => (name === '' ? 0 : 1));
          const votes = new OpCounts(T.repos.values.length);
          for (const cycle of cyclesOf(repos.length, cuts)) {
            const before = new Map<number, number>();
            for (const i of cycle) {
              const repo = T.repo[i]!;
              if (repo >= 0 && T.repos.values[repo] !== '') before.set(repo, (before.get(repo) ?? 0) + 1);
            }
            const top = [...before].sort((a, b) => b[1] - a[1])[0];
            expect(topRepo(cycle, T.repo, named, votes)).toBe(top ? top[0] : -1);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
