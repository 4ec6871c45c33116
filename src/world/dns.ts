/**
 * The world's DNS server (docs/world.md, "Hosts"): the sandbox's /etc/resolv.conf names it, so a
 * resolver that skips /etc/hosts, or asks for a name the world does not serve, gets its answer at
 * once: the service's address for a world host, NXDOMAIN for anything else (which is then a
 * blocked attempt). Packets are read and written with dns-packet; a query it cannot parse gets
 * FORMERR when it has an id, and nothing otherwise.
 */
import type { Socket as UdpSocket } from 'node:dgram';
import type { Server, Socket } from 'node:net';
import dnsPacket from 'dns-packet';
import { SERVICE_ADDRESS, serviceOf, type WorldService } from './hosts.ts';

/** A DNS message over UDP or TCP is at most 64 KiB; queries are tiny, so 4 KiB is plenty. */
export const MAX_DNS_QUERY_BYTES = 4096;

export interface DnsQuestion {
  name: string;
  type: string;
}

export interface DnsAnswerer {
  /** The answer to one query packet, or undefined for one not worth answering. */
  answer(query: Buffer): { reply: Buffer; blocked: DnsQuestion[] } | undefined;
}

export function dnsAnswerer(table: ReadonlyMap<string, WorldService>): DnsAnswerer {
  return {
    answer(query) {
      if (query.length > MAX_DNS_QUERY_BYTES || query.length < 12) return undefined;
      let packet: dnsPacket.Packet;
      try {
        packet = dnsPacket.decode(query);
      } catch {
        // FORMERR (rcode 1) keeps the client from retrying for its whole timeout.
        const reply = Buffer.from(query.subarray(0, 12));
        reply[2] = 0x81;
        reply[3] = 0x81;
        reply.fill(0, 4, 12);
        return { reply, blocked: [] };
      }
      const questions = (packet.questions ?? []).slice(0, 8);
      const answers: dnsPacket.Answer[] = [];
      const blocked: DnsQuestion[] = [];
      let nxdomain = false;
      for (const question of questions) {
        const name = question.name.toLowerCase().replace(/\.$/, '');
        const service = serviceOf(table, name);
        const local = name === 'localhost' ? '127.0.0.1' : service ? SERVICE_ADDRESS[service] : undefined;
        if (local === undefined) {
          nxdomain = true;
          blocked.push({ name: name.slice(0, 253), type: question.type });
          continue;
        }
        // A world host has an IPv4 address only: an AAAA question gets an empty answer (NOERROR),
        // and the client goes on with the A record.
        if (question.type === 'A') answers.push({ type: 'A', name: question.name, ttl: 60, data: local });
      }
      const reply = dnsPacket.encode({
        id: packet.id ?? 0,
        type: 'response',
        // QR, RD as asked, RA, and the rcode (3 = NXDOMAIN) in the low bits.
        flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (nxdomain ? 3 : 0),
        questions,
        answers,
      });
      return { reply, blocked };
    },
  };
}

/** Answers DNS over UDP on `socket`, calling `onBlocked` with the asking port. */
export function serveUdp(
  socket: UdpSocket,
  answerer: DnsAnswerer,
  onBlocked: (questions: DnsQuestion[], clientPort: number) => void,
): void {
  socket.on('message', (message, remote) => {
    const result = answerer.answer(message);
    if (!result) return;
    socket.send(result.reply, remote.port, remote.address);
    if (result.blocked.length > 0) onBlocked(result.blocked, remote.port);
  });
  socket.on('error', () => {});
}

/** Answers DNS over TCP (each message prefixed by its 2-byte length) on `server`. */
export function serveTcp(
  server: Server,
  answerer: DnsAnswerer,
  onBlocked: (questions: DnsQuestion[], clientPort: number) => void,
): void {
  server.on('connection', (socket: Socket) => {
    let buffered = Buffer.alloc(0);
    socket.setTimeout(5_000, () => socket.destroy());
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length > MAX_DNS_QUERY_BYTES + 2) {
        socket.destroy();
        return;
      }
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const query = buffered.subarray(2, 2 + length);
        buffered = buffered.subarray(2 + length);
        const result = answerer.answer(Buffer.from(query));
        if (!result) {
          socket.destroy();
          return;
        }
        const framed = Buffer.alloc(2 + result.reply.length);
        framed.writeUInt16BE(result.reply.length, 0);
        result.reply.copy(framed, 2);
        socket.write(framed);
        if (result.blocked.length > 0 && socket.remotePort !== undefined)
          onBlocked(result.blocked, socket.remotePort);
      }
    });
  });
}
