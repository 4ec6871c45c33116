/**
 * The world's edge (docs/world.md): where a command's connections arrive and are either handed
 * to an emulator or refused and recorded. Two entrances, one dispatch:
 *
 * - the sandbox's sockets (sandbox.ts): a connection's destination address names the service
 *   (hosts.ts); HTTPS is decrypted here with the world's certificate, then the connection is
 *   given to the emulator's own HTTP server as if it had accepted it (`emit('connection')`), so
 *   the emulators run exactly their usual code; any other address or port is a blocked attempt;
 * - the proxy (`HTTPS_PROXY`): a CONNECT to a world host is answered, decrypted and handed over
 *   the same way; a CONNECT or a plain proxied request to any other host is refused (403) and is
 *   a blocked attempt.
 */
import {
  createServer,
  type Server as HttpServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createSecureContext, type SecureContext, TLSSocket } from 'node:tls';
import { LISTEN_BACKLOG } from '../base/limits.ts';
import type { ConnectionPorts } from './claims.ts';
import { type DnsQuestion, dnsAnswerer, serveTcp, serveUdp } from './dns.ts';
import { hostAt, serviceAt, serviceOf, type WorldService } from './hosts.ts';
import type { SandboxListeners } from './sandbox.ts';

/** How a blocked attempt was made. */
export type BlockedVia = 'dns' | 'tcp' | 'connect' | 'http';

export interface BlockedAttempt {
  via: BlockedVia;
  /** The name asked for (DNS, CONNECT, a proxied URL, or the world host behind an address). */
  host?: string | undefined;
  /** The address dialled, when it was an address. */
  address?: string | undefined;
  port?: number | undefined;
  /** DNS: the record type asked for. */
  type?: string | undefined;
}

export interface EdgeOptions {
  table: ReadonlyMap<string, WorldService>;
  /** Each service's HTTP server (plain): connections are handed to it. */
  backends: Record<WorldService, HttpServer>;
  /** Each service's loopback URL, for requests the proxy forwards. */
  urls: Record<WorldService, string>;
  cert: string;
  key: string;
  /** A refused attempt; `client` is the port the attempt came from (to find its process). */
  /**
   * `client`: the asking socket's port, and for TCP the port it reached (the proxy's, the gate's):
   * what finds the process behind it (world.ts).
   */
  onBlocked(
    attempt: BlockedAttempt,
    client: { protocol: 'tcp' | 'udp'; port: number | undefined; peerPort?: number },
  ): void;
}

/** The ports the sandbox listens on: HTTPS, HTTP, DNS, and where a blocked attempt is caught. */
export const SANDBOX_PORTS = { tcp: [443, 80, 53, 22, 9418], udp: [53] };

export class Edge {
  private readonly context: SecureContext;
  private readonly sockets = new Set<Socket>();
  /**
   * Each handed-over connection's ports as its client dialled them (the decrypted socket's too):
   * what finds the process behind a call (claims.ts). The emulator sees only the edge's socket.
   */
  private readonly ports = new WeakMap<object, ConnectionPorts>();
  private proxy: HttpServer | undefined;

  constructor(private readonly options: EdgeOptions) {
    this.context = createSecureContext({ cert: options.cert, key: options.key });
  }

  /** The client's ports of a connection the edge handed to a service (its raw or decrypted socket). */
  portsOf(socket: object): ConnectionPorts | undefined {
    return this.ports.get(socket);
  }

  private notePorts(raw: Socket): void {
    if (raw.remotePort !== undefined && raw.localPort !== undefined)
      this.ports.set(raw, { port: raw.remotePort, peerPort: raw.localPort, address: raw.remoteAddress });
  }

  /** Hands a decrypted connection to a service. */
  private serveTls(raw: Socket, service: WorldService): void {
    this.notePorts(raw);
    const secure = new TLSSocket(raw, {
      isServer: true,
      secureContext: this.context,
      ALPNProtocols: ['http/1.1'],
    });
    const ports = this.ports.get(raw);
    if (ports) this.ports.set(secure, ports);
    secure.on('error', () => secure.destroy());
    this.track(secure);
    secure.once('secure', () => this.options.backends[service].emit('connection', secure));
  }

  private servePlain(raw: Socket, service: WorldService): void {
    this.notePorts(raw);
    this.options.backends[service].emit('connection', raw);
    // A socket accepted on a handed-over listener starts paused.
    raw.resume();
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private refuse(socket: Socket, attempt: BlockedAttempt): void {
    this.options.onBlocked(attempt, { protocol: 'tcp', port: socket.remotePort, peerPort: socket.localPort });
    socket.destroy();
  }

  /** Serves the sandbox's sockets (sandbox.ts hands them over). */
  attach(listeners: SandboxListeners): void {
    const answerer = dnsAnswerer(this.options.table);
    const onDns = (protocol: 'tcp' | 'udp') => (questions: DnsQuestion[], port: number) => {
      for (const question of questions)
        this.options.onBlocked({ via: 'dns', host: question.name, type: question.type }, { protocol, port });
    };
    for (const [port, server] of listeners.tcp) {
      if (port === 53) {
        serveTcp(server, answerer, onDns('tcp'));
        continue;
      }
      server.on('connection', (socket: Socket) => {
        socket.on('error', () => {});
        const address = socket.localAddress ?? '';
        const service = serviceAt(address);
        if (service && port === 443) this.serveTls(socket, service);
        else if (service && port === 80) {
          this.track(socket);
          this.servePlain(socket, service);
        } else
          this.refuse(socket, {
            via: 'tcp',
            host: hostAt(this.options.table, address),
            address: address.replace(/^::ffff:/, ''),
            port,
          });
      });
    }
    for (const [, socket] of listeners.udp) serveUdp(socket, answerer, onDns('udp'));
  }

  /** Starts the HTTPS/HTTP proxy on 127.0.0.1 (a free port); resolves to its URL. */
  async startProxy(): Promise<string> {
    const proxy = createServer((req, res) => this.forward(req, res));
    proxy.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) =>
      this.connect(req, socket, head),
    );
    proxy.on('clientError', (_error, socket: Socket) => socket.destroy());
    this.proxy = proxy;
    await new Promise<void>((resolve, reject) => {
      proxy.once('error', reject);
      proxy.listen(0, '127.0.0.1', LISTEN_BACKLOG, () => resolve());
    });
    return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  }

  private connect(req: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', () => {});
    const target = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(req.url ?? '');
    const host = target?.[1]?.toLowerCase();
    const port = Number(target?.[2]);
    const service = host ? serviceOf(this.options.table, host) : undefined;
    if (!service || (port !== 443 && port !== 80)) {
      this.options.onBlocked(
        { via: 'connect', host, port: Number.isFinite(port) ? port : undefined },
        {
          protocol: 'tcp',
          port: socket.remotePort,
          peerPort: socket.localPort,
        },
      );
      socket.end(
        'HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nblocked by the fleetbench world (docs/world.md)\n',
      );
      return;
    }
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) socket.unshift(head);
    this.track(socket);
    if (port === 443) this.serveTls(socket, service);
    else this.servePlain(socket, service);
  }

  /** A proxied plain-HTTP request (`GET http://api.github.com/…`): forwarded to the service, or refused. */
  private forward(req: IncomingMessage, res: ServerResponse): void {
    let url: URL | undefined;
    try {
      url = new URL(req.url ?? '');
    } catch {
      url = undefined;
    }
    const service = url ? serviceOf(this.options.table, url.hostname) : undefined;
    if (!url || !service) {
      this.options.onBlocked(
        { via: 'http', host: url?.hostname, port: url ? Number(url.port || 80) : undefined },
        { protocol: 'tcp', port: req.socket.remotePort, peerPort: req.socket.localPort },
      );
      req.resume();
      res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' });
      res.end('blocked by the fleetbench world (docs/world.md)\n');
      return;
    }
    const upstream = new URL(url.pathname + url.search, this.options.urls[service]);
    const forwarded = httpRequest(
      upstream,
      { method: req.method, headers: { ...req.headers, host: url.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    if (this.proxy) {
      const proxy = this.proxy;
      await new Promise<void>((resolve) => {
        proxy.close(() => resolve());
        proxy.closeAllConnections();
      });
    }
  }
}

export type { Server };
