/**
 * Whose call it is (src/world/claims.ts, docs/world.md): a credential naming a spawn or a work
 * command is taken only from the holder's own process tree. Properties over any process table:
 * the tree searched is exactly the processes whose parent chain reaches a holder (never through
 * init, never looping on a chain that cycles), a connection is checked once per holder, and past
 * the budget a claim is refused, not taken.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ClaimGuard,
  holdersAndDescendants,
  listedDescendants,
  MAX_ANCESTRY,
  type ProcessRow,
} from '../src/world/claims.ts';
import { listedChildren } from '../src/world/procfs.ts';
import { runsAgentCli } from '../src/world/world.ts';

/** The reference: walk each pid's parent chain up, the way a reader would by hand. */
function descends(pid: number, holders: readonly number[], parent: ReadonlyMap<number, number>): boolean {
  const chain: number[] = [];
  let at: number | undefined = pid;
  while (at !== undefined && at > 1 && !chain.includes(at) && chain.length <= MAX_ANCESTRY) {
    if (holders.includes(at)) return true;
    chain.push(at);
    at = parent.get(at);
  }
  return false;
}

const tableOf = (parent: ReadonlyMap<number, number>): ProcessRow[] =>
  [...parent].map(([pid, ppid]) => ({ pid, ppid }));

const parents = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 })), { maxLength: 60 })
  .map((pairs) => new Map(pairs));

describe('claims: the holder’s process tree', () => {
  it('holds the holders (not init) and exactly the processes whose parent chain reaches one', () => {
    fc.assert(
      fc.property(
        parents,
        fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { maxLength: 6 }),
        (parent, holders) => {
          const found = new Set(holdersAndDescendants(holders, tableOf(parent)));
          const everyone = new Set([...parent.keys(), ...parent.values(), ...holders]);
          for (const pid of everyone)
            expect(found.has(pid), `pid ${pid}`).toBe(descends(pid, holders, parent));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('the kernel’s child lists find the same tree as the table; a list that missed a child leaves the answer to the table', () => {
    fc.assert(
      fc.property(
        parents,
        fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { maxLength: 6 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 40 }),
        fc.boolean(),
        (parent, holders, socketAt, stalePid, stale) => {
          const table = tableOf(parent);
          const lists = new Map<number, number[]>();
          for (const [pid, ppid] of parent)
            if (ppid !== pid) lists.set(ppid, [...(lists.get(ppid) ?? []), pid]);
          // A list read as a child moved (or a kernel race): one process's children missing.
          const childrenOf = (pid: number) => (stale && pid === stalePid ? [] : (lists.get(pid) ?? []));
          const listed = listedDescendants(holders, childrenOf);
          if (!stale) expect(new Set(listed)).toEqual(new Set(holdersAndDescendants(holders, table)));
          // Whatever the lists say, a guard's answer is the table's: found through either, refused by both.
          const guard = (withLists: boolean) =>
            new ClaimGuard({
              socketOf: () => 'inode',
              processes: () => table,
              ...(withLists ? { childrenOf } : {}),
              hasSocket: (pid) => pid === socketAt,
              lookupsPerSecond: 1_000,
            }).holds({}, { port: 1, peerPort: 2 }, holders);
          expect(guard(true)).toBe(guard(false));
        },
      ),
      { numRuns: 2000 },
    );
    // A kernel without lists, or a tree past the walk's bound: the table is read instead.
    expect(listedDescendants([5], () => undefined)).toBeUndefined();
  });

  it('reads this process’s children from the kernel’s lists, as its parent sees them', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const listed = listedChildren(process.pid);
      if (listed === undefined) return; // a kernel without CONFIG_PROC_CHILDREN: the table is used
      expect(listed).toContain(child.pid);
      expect(listedDescendants([process.pid], listedChildren)).toContain(child.pid);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('init is never a holder’s proof: an orphan reparented to pid 1 is no one’s', () => {
    const table = [
      { pid: 50, ppid: 1 },
      { pid: 1, ppid: 0 },
    ];
    expect(holdersAndDescendants([1], table)).toEqual([]);
    expect(holdersAndDescendants([7], table)).toEqual([7]);
  });

  it('a connection is checked once per holder; past the budget a claim is refused', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 3 })), {
          minLength: 1,
          maxLength: 80,
        }),
        fc.integer({ min: 0, max: 12 }),
        (calls, budget) => {
          // Connection c's socket is held by pid 100 + c, a child of 10 + (c % 3); its claim names
          // 10 + (c % 3) when c is even (the holder's child: taken), 20 when odd (no one's: refused).
          const table: ProcessRow[] = Array.from({ length: 10 }, (_, c) => ({
            pid: 100 + c,
            ppid: 10 + (c % 3),
          }));
          const checkedSockets: number[] = [];
          let now = 0;
          const guard = new ClaimGuard({
            socketOf: (ports) => {
              checkedSockets.push(ports.port);
              return `inode-${ports.port}`;
            },
            processes: () => table,
            hasSocket: (pid, inode) => inode === `inode-${pid - 100}`,
            lookupsPerSecond: budget,
            now: () => now,
          });
          const connections = Array.from({ length: 10 }, () => ({}));
          const known = new Set<number>();
          let spent = 0;
          for (const [c, second] of calls) {
            if (second * 1000 > now) {
              now = second * 1000;
              spent = 0;
            }
            const rightful = c % 2 === 0;
            const holds = guard.holds(connections[c] as object, { port: c, peerPort: 443 }, [
              rightful ? 10 + (c % 3) : 20,
            ]);
            if (known.has(c)) expect(holds).toBe(rightful);
            else {
              spent += 1;
              if (spent <= budget) {
                known.add(c);
                expect(holds).toBe(rightful);
              } else expect(holds).toBe(false);
            }
          }
          // One check per connection (and holder), ever.
          expect(new Set(checkedSockets).size).toBe(checkedSockets.length);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('runsAgentCli: an agent CLI is its program, not an argument', () => {
  it('takes the CLI by its program or its package entry, under a runtime and its flags', () => {
    expect(runsAgentCli(['claude', '-p', 'hi'], 'claude')).toBe(true);
    expect(
      runsAgentCli(['/usr/bin/node', '/c/node_modules/@anthropic-ai/claude-code/cli.js', '-p'], 'claude'),
    ).toBe(true);
    expect(
      runsAgentCli(
        ['node', '--no-warnings', '/x/@anthropic-ai/claude-agent-sdk/cli.js', '--output-format'],
        'claude',
      ),
    ).toBe(true);
    expect(runsAgentCli(['/opt/codex/bin/codex', 'exec'], 'codex')).toBe(true);
    expect(runsAgentCli(['node', '/n/@openai/codex/bin/codex.js', 'exec'], 'codex')).toBe(true);
  });

  it('refuses a control plane that names a CLI in its arguments (it was taken for one)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('codex', 'claude', 'opencode'),
        fc.array(fc.constantFrom('codex', 'claude', 'opencode', '-v', 'x'), { maxLength: 4 }),
        (cli, rest) => {
          expect(runsAgentCli(['node', '/srv/cp.mjs', ...rest], cli)).toBe(false);
          expect(runsAgentCli(['/usr/bin/python3', 'cp.py', cli, ...rest], cli)).toBe(false);
        },
      ),
    );
  });
});
