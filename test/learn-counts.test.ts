/**
 * `model learn`'s counts by operation id (src/learn/trace.ts, docs/performance.md "model learn"):
 * the passes over a trace's calls that counted them in a `Map` by operation name now count them in
 * typed arrays by the CallTable's operation id. Properties over random calls: the tallies they
 * make hold the same operations, in the same order, with the same sums as the `Map`s did.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CallTable, Tally } from '../src/learn/learner.ts';
import { countShared, OpCounts } from '../src/learn/trace.ts';
import type { ApiRecord } from '../src/trace/schema.ts';

/** Calls with or without a session and a repository, of a handful of operations. */
const callsArbitrary = fc.array(
  fc.record({
    session: fc.option(fc.constantFrom('s1', 's2', 's3'), { nil: undefined }),
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
