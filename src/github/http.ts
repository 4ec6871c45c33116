/**
 * The HTTP binding: a node:http server on loopback (or, with TLS, a node:http2 secure server
 * that speaks HTTP/2 to clients offering `h2` by ALPN and HTTP/1.1 to the others, as github.com
 * does) that turns each request into an EmulatorRequest and answers with what
 * `GitHubEmulator.handle()` returns, so HTTP clients (Octokit, gh, a real orchestrator) get
 * exactly the in-process behaviour. node:http directly rather than a framework: nothing to route
 * here (handle() routes), and every microsecond of overhead shows in the benchmark against bare
 * node:http.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { BodyTooLargeError, readBoundedBody, refuseBody } from '../base/http-body.ts';
import { BODY_LIMITS, LISTEN_BACKLOG } from '../base/limits.ts';
import { turnSlices } from '../base/turn-slices.ts';
import { isActionsLogPath, serveActionsLog } from './actions-logs.ts';
import { isLargeBody, largeBodyMemo } from './body-memo.ts';
import type { GitHubEmulator } from './emulator.ts';
import { GitSmartHttp, type GitSmartHttpOptions, isGitPath } from './git/smart-http.ts';
import { OAuthLogins, oauthRequestOf } from './oauth.ts';
import type { EmulatorRequest, EmulatorResponse } from './types.ts';

export interface GitHubServerOptions {
  emulator: GitHubEmulator;
  /** 0 (default) picks a free port. */
  port?: number;
  /** 127.0.0.1 (default) or ::1; 0.0.0.0 only in a container behind a Service (docs/distributed.md). */
  host?: '127.0.0.1' | '::1' | 'localhost' | '0.0.0.0';
  /**
   * PEM key and certificate: serve HTTPS (what `gh` needs), HTTP/2 by ALPN with HTTP/1.1 for
   * clients that do not offer h2.
   */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** With `tls`: false serves HTTP/1.1 only (ALPN offers no h2). Default true. */
  http2?: boolean;
  /**
   * git's smart HTTP for the world's repositories (git/smart-http.ts): where their bare
   * repositories go (default a private temporary directory, removed at close), or false for none.
   */
  git?: GitSmartHttpOptions | false;
}

export interface RunningGitHubServer {
  /** `http://127.0.0.1:PORT` (or https). */
  url: string;
  port: number;
  server: Server | Http2SecureServer;
  /** git's smart HTTP routes, unless turned off. */
  git: GitSmartHttp | undefined;
  /** Stops accepting, closes idle and active connections, resolves when closed. */
  close(): Promise<void>;
}

/**
 * Encoded large bodies: the same cached string goes out again and again (a poller's list), and
 * writing a Buffer spares the per-response UTF-8 encoding.
 */
const largeBytes = largeBodyMemo(256, (body) => Buffer.from(body));

function encode(body: string): string | Buffer {
  return isLargeBody(body) ? largeBytes(body) : body;
}

const INTERNAL_ERROR = JSON.stringify({
  message: 'Server Error',
  documentation_url: 'https://docs.github.com/rest',
});

/** GitHub's error shape for a body over the limit (413, as GitHub answers one). */
function tooLarge(limit: number) {
  return {
    message: `Request body too large: over ${limit} bytes (fleetbench docs/limits.md)`,
    documentation_url: 'https://docs.github.com/rest',
  };
}

/**
 * A body from this size on is handled behind the small requests (`TurnSlices.runAfter`), and not
 * read at all when the request is refused on arrival (the connection closes after the answer).
 */
const LARGE_BODY_BYTES = 64 * 1024;

export async function startGitHubServer(options: GitHubServerOptions): Promise<RunningGitHubServer> {
  const { emulator } = options;
  /**
   * Every API request is handled in turn with the others (base/turn-slices.ts): a thousand clients
   * each sending a megabyte (a GraphQL query with a 1 MB string is 50 ms of JSON and parsing on a
   * busy machine) are handled one after another while small requests arriving meanwhile (a probe,
   * a poller's GET) are answered between the slices, never after all of them; and under a flood
   * of small ones a new client is accepted within a turn or two, not after a thousand long turns.
   */
  const slices = turnSlices();
  const host = options.host ?? '127.0.0.1';
  const scheme = options.tls ? 'https' : 'http';
  let origin = '';

  type Req = IncomingMessage | Http2ServerRequest;
  type Res = ServerResponse | Http2ServerResponse;
  /**
   * Requests not yet answered, from their arrival (body still arriving, or waiting out the
   * modelled latency): recorded as cancelled when the server stops before answering them.
   */
  const pending = new Map<EmulatorRequest, number>();
  const answer = (res: Res, request: EmulatorRequest, body: string | undefined) =>
    slices.run(() => handle(res, request, body));
  /** Once closing, what still waits its turn is not handled: it was recorded as cancelled. */
  let stopping = false;
  const write = (res: Res, response: EmulatorResponse) => {
    if (res.destroyed || res.writableEnded) return;
    try {
      res.writeHead(response.status, response.headers);
      res.end(encode(response.body));
    } catch (error) {
      failed(res, error);
    }
  };
  // respond() answers handler bugs itself; this is the last line of defence (a header Node
  // refuses, say), and the server goes on serving.
  const failed = (res: Res, error: unknown) => {
    process.stderr.write(`github emulator: ${(error as Error)?.stack ?? String(error)}\n`);
    if (res.destroyed || res.writableEnded) return;
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
    res.end(INTERNAL_ERROR);
  };
  /** One step of the server's slices: the answer's work and, unless it waits out latency, its writing. */
  const handle = (res: Res, request: EmulatorRequest, body: string | undefined) => {
    request.body = body;
    if (stopping || res.destroyed || res.writableEnded) return;
    try {
      const response = emulator.respond(request);
      if (response instanceof Promise)
        response.then(
          (answered) => write(res, answered),
          (error: unknown) => failed(res, error),
        );
      else write(res, response);
    } catch (error) {
      failed(res, error);
    }
  };

  const git = options.git === false ? undefined : new GitSmartHttp(emulator, options.git);
  const oauth = new OAuthLogins(emulator);
  const onRequest = (req: Req, res: Res) => {
    // git's requests (clone, fetch, push) are not API calls: no quota, no admission.
    if (git !== undefined && isGitPath(req.url ?? '/')) {
      git.handle(req, res);
      return;
    }
    // Actions log downloads (a 302's signed URL): not API calls either (actions-logs.ts).
    if (isActionsLogPath(req.url ?? '/')) {
      serveActionsLog(emulator.state, req, res);
      return;
    }
    // HTTP/2 names the host in the :authority pseudo-header instead of Host.
    const host = req.headers.host ?? (req.headers[':authority'] as string | undefined);
    // A connection handed over already decrypted (the world's edge, docs/world.md) is HTTPS
    // to its client, though this server speaks plain HTTP.
    const baseUrl = host
      ? `${scheme === 'https' || (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}://${host}`
      : origin;
    // Nor are OAuth logins (github.com/login/…): no rate limit counts them on GitHub either.
    if (oauthRequestOf(req.url ?? '/') !== undefined) {
      oauth.handle(req, res, baseUrl);
      return;
    }
    // In flight from arrival until the answer is written (or the client goes away).
    const admission = emulator.admit(req.url ?? '/', req.headers, req.socket.remoteAddress);
    const request: EmulatorRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers as Record<string, string | undefined>,
      remoteAddress: req.socket.remoteAddress,
      baseUrl,
      admission,
    };
    if (!request.path.includes('/_fleetbench/')) {
      pending.set(request, emulator.clock.now());
      res.once('close', () => pending.delete(request));
    }
    if (admission !== undefined) res.once('close', () => admission.release());
    const method = req.method;
    if (
      (method === 'GET' || method === 'HEAD') &&
      req.headers['content-length'] === undefined &&
      req.headers['transfer-encoding'] === undefined
    ) {
      req.resume();
      answer(res, request, undefined);
      return;
    }
    // The token first: a request GitHub would answer 401 is answered without reading its body;
    // so is one the concurrency limit refused on arrival.
    if (
      admission?.refused !== undefined ||
      !emulator.acceptsCredentials(req.url ?? '/', req.headers.authorization)
    ) {
      // A large body is not read at all: the HTTP/1.1 connection closes after the answer (a
      // thousand refused megabyte uploads are not a gigabyte read and thrown away).
      const declared = Number(req.headers['content-length'] ?? Number.POSITIVE_INFINITY);
      if (declared >= LARGE_BODY_BYTES && !('stream' in res)) res.setHeader('connection', 'close');
      else req.resume();
      answer(res, request, undefined);
      return;
    }
    readBoundedBody(req, BODY_LIMITS.github).then(
      (body) => {
        // Decoded in the request's slice: a megabyte's decoding is part of its work.
        const step = () => handle(res, request, body.length === 0 ? undefined : body.toString('utf8'));
        if (body.length < LARGE_BODY_BYTES) slices.run(step);
        else slices.runAfter(step);
      },
      (error: unknown) => {
        if (error instanceof BodyTooLargeError) refuseBody(res, tooLarge(error.limit));
        else if ('stream' in res) res.stream.close();
        else res.destroy();
      },
    );
  };

  const tls = options.tls;
  const server: Server | Http2SecureServer = tls
    ? createSecureServer(
        {
          key: tls.key,
          cert: tls.cert,
          allowHTTP1: true,
          ALPNProtocols: options.http2 === false ? ['http/1.1'] : ['h2', 'http/1.1'],
        },
        onRequest,
      )
    : createHttpServer({ keepAliveTimeout: 30_000 }, onRequest);
  server.on('clientError', (_error: Error, socket: Socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  });
  // Every accepted connection, as the TCP socket it arrived on: close() ends them itself. An
  // HTTP/2 server has no closeAllConnections(), and a TLS connection that has not finished its
  // handshake (or whose TLS socket already went) is on no list of http's or http2's: left
  // open, it held close() until the client gave up, and with it the end of a run whose control
  // plane died while its gh was connecting (docs/limits.md, "Servers").
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    slices.accepted();
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  if (tls) {
    server.on('secureConnection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A backlog for a thousand clients connecting at once (LISTEN_BACKLOG, docs/limits.md).
    server.listen(options.port ?? 0, host, LISTEN_BACKLOG, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = host === '::1' ? '[::1]' : host;
  origin = `${scheme}://${hostPart}:${port}`;
  emulator.setPublicUrl(origin);
  let closing: Promise<void> | undefined;
  return {
    url: origin,
    port,
    server,
    git,
    close() {
      closing ??= (async () => {
        stopping = true;
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await git?.close();
        oauth.close();
        // What is still unanswered is recorded now, as cancelled, before the connections go.
        for (const [request, arrivedAt] of pending)
          emulator.recordCancelled(request, arrivedAt, 'the server stopped before answering');
        pending.clear();
        if ('closeAllConnections' in server) server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        await stopped;
      })();
      return closing;
    },
  };
}
