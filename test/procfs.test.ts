import { spawn } from 'node:child_process';
import { existsSync, readlinkSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { endianness } from 'node:os';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { procAddressForms, processFacts, socketInode, socketInodeIn } from '../src/world/procfs.ts';

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

// Which socket a claim's connection is (src/world/claims.ts): a process that binds the client's
// port at another local address (127.0.0.2, or through IPv6) was found in its place, since only
// ports were compared and `tcp` was read before `tcp6` (found by review, 2026-12-07).
describe.skipIf(!existsSync('/proc/self/net/tcp'))('socketInode with the client’s address', () => {
  const inodeOf = (socket: Socket) =>
    readlinkSync(`/proc/self/fd/${(socket as unknown as { _handle: { fd: number } })._handle.fd}`).replace(
      /^socket:\[(\d+)\]$/,
      '$1',
    );
  const connectFrom = (port: number, options: { localAddress: string; localPort?: number; host: string }) =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect({ port, ...options, family: options.host.includes(':') ? 6 : 4 }, () =>
        resolve(socket),
      );
      socket.once('error', reject);
    });

  it('finds each of two clients that share a local port on two addresses, over IPv4 and IPv4-mapped IPv6', async () => {
    const accepted: Socket[] = [];
    const server = createServer((socket) => accepted.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '::', resolve));
    const port = (server.address() as AddressInfo).port;
    const clients: Socket[] = [];
    try {
      const first = await connectFrom(port, { host: '127.0.0.1', localAddress: '127.0.0.1' });
      clients.push(first);
      const shared = first.localPort as number;
      clients.push(
        await connectFrom(port, {
          host: '::ffff:127.0.0.1',
          localAddress: '::ffff:127.0.0.2',
          localPort: shared,
        }),
      );
      for (let i = 0; i < 50 && accepted.length < 2; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(accepted.length).toBe(2);
      for (const at of accepted) {
        const client = clients.find(
          (c) => c.localAddress?.replace(/^::ffff:/, '') === at.remoteAddress?.replace(/^::ffff:/, ''),
        );
        expect(client, `${at.remoteAddress}`).toBeDefined();
        expect(socketInode('self', 'tcp', at.remotePort as number, port, at.remoteAddress)).toBe(
          inodeOf(client as Socket),
        );
      }
    } finally {
      for (const socket of [...clients, ...accepted]) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it.skipIf(endianness() !== 'LE')(
    'writes an address in /proc’s forms (a little-endian machine’s words)',
    () => {
      expect(procAddressForms('127.0.0.1')).toEqual(['0100007F', '0000000000000000FFFF00000100007F']);
      expect(procAddressForms('::ffff:127.0.0.2')).toEqual(['0200007F', '0000000000000000FFFF00000200007F']);
      expect(procAddressForms('::1')).toEqual(['00000000000000000000000001000000']);
      expect(procAddressForms('not an address')).toEqual([]);
    },
  );
});
