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
import { BODY_LIMITS } from '../base/limits.ts';
import { isLargeBody, largeBodyMemo } from './body-memo.ts';
import type { GitHubEmulator } from './emulator.ts';
import { GitSmartHttp, type GitSmartHttpOptions, isGitPath } from './git/smart-http.ts';
import type { Admission, EmulatorRequest } from './types.ts';

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

export async function startGitHubServer(options: GitHubServerOptions): Promise<RunningGitHubServer> {
  const { emulator } = options;
  const host = options.host ?? '127.0.0.1';
  const scheme = options.tls ? 'https' : 'http';
  let origin = '';

  type Req = IncomingMessage | Http2ServerRequest;
  type Res = ServerResponse | Http2ServerResponse;
  const answer = (req: Req, res: Res, body: string | undefined, admission: Admission | undefined) => {
    // HTTP/2 names the host in the :authority pseudo-header instead of Host.
    const host = req.headers.host ?? (req.headers[':authority'] as string | undefined);
    const request: EmulatorRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers as Record<string, string | undefined>,
      body,
      remoteAddress: req.socket.remoteAddress,
      // A connection handed over already decrypted (the world's edge, docs/world.md) is HTTPS
      // to its client, though this server speaks plain HTTP.
      baseUrl: host
        ? `${scheme === 'https' || (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}://${host}`
        : origin,
      admission,
    };
    emulator.handle(request).then(
      (response) => {
        res.writeHead(response.status, response.headers);
        res.end(encode(response.body));
      },
      (error: unknown) => {
        // handle() answers handler bugs itself; this is the last line of defence.
        process.stderr.write(`github emulator: ${(error as Error)?.stack ?? String(error)}\n`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        res.end(INTERNAL_ERROR);
      },
    );
  };

  const git = options.git === false ? undefined : new GitSmartHttp(emulator, options.git);
  const onRequest = (req: Req, res: Res) => {
    // git's requests (clone, fetch, push) are not API calls: no quota, no admission.
    if (git !== undefined && isGitPath(req.url ?? '/')) {
      git.handle(req, res);
      return;
    }
    // In flight from arrival until the answer is written (or the client goes away).
    const admission = emulator.admit(req.url ?? '/', req.headers, req.socket.remoteAddress);
    if (admission !== undefined) res.once('close', () => admission.release());
    const method = req.method;
    if (
      (method === 'GET' || method === 'HEAD') &&
      req.headers['content-length'] === undefined &&
      req.headers['transfer-encoding'] === undefined
    ) {
      req.resume();
      answer(req, res, undefined, admission);
      return;
    }
    // The token first: a request GitHub would answer 401 is answered without reading its body;
    // so is one the concurrency limit refused on arrival.
    if (
      admission?.refused !== undefined ||
      !emulator.acceptsCredentials(req.url ?? '/', req.headers.authorization)
    ) {
      answer(req, res, undefined, admission);
      req.resume();
      return;
    }
    readBoundedBody(req, BODY_LIMITS.github).then(
      (body) => answer(req, res, body.length === 0 ? undefined : body.toString('utf8'), admission),
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
  // An HTTP/2 server has no closeAllConnections(): close() ends its sockets itself.
  const sockets = new Set<Socket>();
  if (tls) {
    server.on('secureConnection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
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
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await git?.close();
        if ('closeAllConnections' in server) server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        await stopped;
      })();
      return closing;
    },
  };
}
