/**
 * Whose call it is (src/world/claims.ts, docs/world.md): a credential naming a spawn or a work
 * command is taken only from the holder's own process tree. Properties over any process tree:
 * a call holds exactly when the process behind it is the holder or descends from it (never
 * through init, never looping on a parent chain that cycles), the process behind a connection
 * is looked up once, and past the lookup budget a claim is refused, not taken.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ClaimGuard, descendsFrom, MAX_ANCESTRY } from '../src/world/claims.ts';

/** The reference: walk the chain with a plain list, the way a reader would by hand. */
function ancestors(pid: number, parent: ReadonlyMap<number, number>): number[] {
  const chain: number[] = [];
  let at: number | undefined = pid;
  while (at !== undefined && at > 1 && !chain.includes(at) && chain.length <= MAX_ANCESTRY) {
    chain.push(at);
    at = parent.get(at);
  }
  return chain;
}

const tree = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 })), { maxLength: 60 })
  .map((pairs) => new Map(pairs));

describe('claims: the process behind a call and its ancestry', () => {
  it('descendsFrom holds exactly when the pid or an ancestor (not init, not past a cycle) is a holder', () => {
    fc.assert(
      fc.property(
        tree,
        fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { maxLength: 6 }),
        fc.integer({ min: 0, max: 40 }),
        (parent, holders, pid) => {
          const expected = ancestors(pid, parent).some((p) => holders.includes(p));
          expect(
            descendsFrom(
              pid,
              (p) => holders.includes(p),
              (p) => parent.get(p),
            ),
          ).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('init is never a holder’s proof: an orphan reparented to pid 1 descends from nobody', () => {
    const parent = new Map([
      [50, 1],
      [1, 0],
    ]);
    expect(
      descendsFrom(
        50,
        (p) => p === 1,
        (p) => parent.get(p),
      ),
    ).toBe(false);
  });

  it('the guard looks a connection up once, and refuses claims past its budget', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 3 })), {
          minLength: 1,
          maxLength: 80,
        }),
        fc.integer({ min: 0, max: 12 }),
        (calls, budget) => {
          // Connection c is owned by pid 100 + c; pid 100 + c's parent is 10 + (c % 3).
          const lookedUp: number[] = [];
          let now = 0;
          const guard = new ClaimGuard({
            ownerOf: (ports) => {
              lookedUp.push(ports.port);
              return 100 + ports.port;
            },
            parentOf: (pid) => (pid >= 100 ? 10 + ((pid - 100) % 3) : undefined),
            lookupsPerSecond: budget,
            now: () => now,
          });
          const connections = Array.from({ length: 10 }, () => ({}));
          const known = new Map<number, boolean>();
          let spent = 0;
          for (const [c, second] of calls) {
            if (second * 1000 > now) {
              now = second * 1000;
              spent = 0;
            }
            const holder = 10 + (c % 3);
            const result = guard.holds(
              connections[c] as object,
              { port: c, peerPort: 443 },
              (p) => p === holder,
            );
            if (known.has(c)) expect(result.holds).toBe(true);
            else if (spent < budget) {
              spent += 1;
              known.set(c, true);
              expect(result).toEqual({ holds: true, pid: 100 + c });
            } else {
              spent += 1;
              expect(result.holds).toBe(false);
            }
          }
          // One lookup per connection, ever.
          expect(new Set(lookedUp).size).toBe(lookedUp.length);
        },
      ),
      { numRuns: 500 },
    );
  });
});
