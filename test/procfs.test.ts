import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { processFacts, socketInodeIn } from '../src/world/procfs.ts';

// A process's start time read from /proc (src/world/procfs.ts): what an agent's spawn is timed
// with in a world (docs/world.md, "Agents"), so its boot and the control plane's share of a
// recovery are only as right as this.
describe.skipIf(!existsSync('/proc/self/stat'))('processFacts', () => {
  it('times a process start to within the kernel’s 10 ms ticks of when it was spawned', async () => {
    // Several children: each one's start must fall between the moments before and after its
    // spawn, give or take two ticks (the start is counted in 10 ms ticks, /proc/uptime in 10 ms
    // steps). Reading the boot time from /proc/stat's whole-second `btime` put every start up to
    // a second early (362 ms on the machine where it was found).
    for (let i = 0; i < 5; i++) {
      const before = Date.now();
      const child = spawn('sleep', ['5'], { stdio: 'ignore' });
      const after = Date.now();
      try {
        const facts = processFacts(child.pid as number);
        expect(facts?.startedAtMs).toBeDefined();
        expect(facts!.startedAtMs!).toBeGreaterThanOrEqual(before - 25);
        expect(facts!.startedAtMs!).toBeLessThanOrEqual(after + 25);
        expect(facts?.argv).toEqual(['sleep', '5']);
      } finally {
        child.kill('SIGKILL');
      }
      await new Promise((resolve) => child.once('exit', resolve));
    }
  });
});

// Which socket a blocked attempt came from (src/world/procfs.ts `socketInodeIn`): in a network
// namespace shared with the machine, one ephemeral port serves connections to different peers, so
// the client's port alone found another program's socket (CI, 2026-12-07: a blocked attempt of
// curl's was named `hey`, a load generator running beside it).
describe('socketInodeIn', () => {
  const hex = (n: number, width: number) => n.toString(16).toUpperCase().padStart(width, '0');
  const line = (i: number, local: number, remote: number, inode: string) =>
    `  ${i}: 0100007F:${hex(local, 4)} 0100007F:${hex(remote, 4)} 01 00000000:00000000 00:00000000 00000000     0        0 ${inode} 1 0000000000000000 20 4 30 10 -1`;
  const header =
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';

  it('property: with the peer’s port, the client’s own socket, whatever else shares its local port', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1024, max: 65535 }),
        fc.integer({ min: 1, max: 65535 }),
        fc.array(fc.record({ remote: fc.integer({ min: 1, max: 65535 }), sameLocal: fc.boolean() }), {
          maxLength: 8,
        }),
        fc.nat(8),
        (port, peer, others, at) => {
          const rows = others
            .filter((o) => !(o.sameLocal && o.remote === peer))
            .map((o, i) => line(i, o.sameLocal ? port : port ^ 1, o.remote, String(1000 + i)));
          rows.splice(Math.min(at, rows.length), 0, line(99, port, peer, '424242'));
          const table = [header, ...rows].join('\n');
          expect(socketInodeIn(table, port, peer)).toBe('424242');
        },
      ),
      { numRuns: 300 },
    );
  });
});
