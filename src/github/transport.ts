/**
 * How a client reaches the emulator. Both implement GitHubTransport, so the reference control
 * plane (or any client code) runs unchanged in-process under the virtual clock or over HTTP
 * against `fleetbench github serve` or a real server.
 */
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { GitHubEmulator } from './emulator.ts';
import { Http1Pool, headerLines } from './http1.ts';
import type { EmulatorRequest, EmulatorResponse, GitHubTransport } from './types.ts';

export interface TransportDefaults {
  /** Sent as `Authorization: token <token>` unless the request has its own. */
  token?: string;
  /** Added under the request's own headers (e.g. x-fleetbench-session). Lower-case names. */
  headers?: Record<string, string>;
}

function withDefaults(req: EmulatorRequest, defaults: TransportDefaults): EmulatorRequest {
  if (defaults.token === undefined && defaults.headers === undefined) return req;
  const headers: Record<string, string | undefined> = { ...defaults.headers, ...req.headers };
  if (defaults.token !== undefined && headers.authorization === undefined)
    headers.authorization = `token ${defaults.token}`;
  return { ...req, headers };
}

/** Calls `emulator.handle()` directly: no sockets, nothing but the modelled latency to wait for. */
export class InProcessTransport implements GitHubTransport {
  private readonly emulator: GitHubEmulator;
  private readonly defaults: TransportDefaults & { remoteAddress?: string };

  constructor(emulator: GitHubEmulator, defaults: TransportDefaults & { remoteAddress?: string } = {}) {
    this.emulator = emulator;
    this.defaults = defaults;
  }

  request(request: EmulatorRequest): Promise<EmulatorResponse> {
    const req = withDefaults(request, this.defaults);
    if (this.defaults.remoteAddress !== undefined && req.remoteAddress === undefined) {
      return this.emulator.handle({ ...req, remoteAddress: this.defaults.remoteAddress });
    }
    return this.emulator.handle(req);
  }
}

export interface HttpTransportOptions extends TransportDefaults {
  /** PEM certificate(s) to trust for an https base URL (the emulator's self-signed one). */
  ca?: string | Buffer;
  /** Keep-alive sockets per transport (default 64). */
  maxSockets?: number;
  /** Per-request timeout in real ms (default 30 s). */
  timeoutMs?: number;
  /**
   * Plain http only: GET and HEAD requests started in the same turn of the event loop share a
   * keep-alive connection and one write, up to this many in flight on it (default 1: one request
   * per connection at a time). For servers that answer pipelined requests (HTTP/1.1 requires it;
   * node:http does); one that closes the connection instead turns it off (src/github/http1.ts).
   */
  pipelining?: number;
}

/**
 * Real HTTP(S) with keep-alive, to a base URL such as `http://127.0.0.1:PORT` or `https://HOST/api/v3`.
 * It is the live generator's request path (bench/live.bench.ts), so the per-request work is kept
 * to what node:http itself needs: request options and default headers built once, no per-request
 * spread, and the timeout enforced by one sweep over the requests in flight instead of a socket
 * timer armed, refreshed and cleared on every request.
 */
export class HttpTransport implements GitHubTransport {
  readonly baseUrl: URL;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;
  private readonly pathPrefix: string;
  private readonly hostname: string;
  private readonly port: string;
  private readonly protocol: string;
  private readonly timeoutMs: number;
  private readonly authorization: string | undefined;
  private readonly defaultHeaders: ReadonlyArray<readonly [string, string]>;
  /** Requests in flight with their deadlines (performance.now() ms), swept by one interval. */
  private readonly inFlight = new Map<ClientRequest, number>();
  private sweeper: NodeJS.Timeout | undefined;
  /** Plain http: the lean client (http1.ts); https goes through node:https. */
  private readonly pool: Http1Pool | undefined;
  /**
   * The default headers and authorization as header lines, checked once: what a request with no
   * headers of its own and no body sends (or why it cannot be sent).
   */
  private readonly defaultLines: string | TypeError;

  constructor(baseUrl: string, options: HttpTransportOptions = {}) {
    this.baseUrl = new URL(baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl);
    const https = this.baseUrl.protocol === 'https:';
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 64 };
    this.agent = https ? new HttpsAgent({ ...agentOptions, ca: options.ca }) : new HttpAgent(agentOptions);
    this.send = https ? (httpsRequest as unknown as typeof httpRequest) : httpRequest;
    this.pathPrefix = this.baseUrl.pathname === '/' ? '' : this.baseUrl.pathname;
    this.hostname = this.baseUrl.hostname;
    this.port = this.baseUrl.port;
    this.protocol = this.baseUrl.protocol;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.authorization = options.token === undefined ? undefined : `token ${options.token}`;
    this.defaultHeaders = Object.entries(options.headers ?? {});
    this.pool = https
      ? undefined
      : new Http1Pool(
          this.hostname.startsWith('[') ? this.hostname.slice(1, -1) : this.hostname,
          Number(this.port || 80),
          options.maxSockets ?? 64,
          this.timeoutMs,
          options.pipelining ?? 1,
        );
    const defaults: Record<string, string> = Object.fromEntries(this.defaultHeaders);
    if (this.authorization !== undefined && defaults.authorization === undefined)
      defaults.authorization = this.authorization;
    try {
      this.defaultLines = headerLines(defaults);
    } catch (error) {
      this.defaultLines = error as TypeError;
    }
  }

  request(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (this.pool !== undefined && req.body === undefined && !hasHeaders(req.headers)) {
      // The generator's common case: nothing to merge, the header lines were checked once.
      const path = req.path.startsWith('/') ? this.pathPrefix + req.path : req.path;
      const lines = this.defaultLines;
      if (typeof lines !== 'string') return Promise.reject(lines);
      return this.pool.send(req.method, path, lines, undefined);
    }
    // Defaults first, the request's own headers over them (as withDefaults does in-process).
    const headers: Record<string, string> = {};
    for (const [k, v] of this.defaultHeaders) headers[k] = v;
    const own = req.headers;
    for (const k in own) {
      const v = own[k];
      if (v !== undefined) headers[k] = v;
    }
    if (this.authorization !== undefined && headers.authorization === undefined)
      headers.authorization = this.authorization;
    if (req.body !== undefined && headers['content-type'] === undefined)
      headers['content-type'] = 'application/json';
    const path = req.path.startsWith('/') ? this.pathPrefix + req.path : req.path;
    if (this.pool !== undefined) return this.pool.request(req.method, path, headers, req.body);
    return new Promise((resolve, reject) => {
      const outgoing = this.send(
        {
          protocol: this.protocol,
          hostname: this.hostname,
          port: this.port,
          method: req.method,
          path,
          headers,
          agent: this.agent,
        },
        (res) => {
          let first: Buffer | undefined;
          let more: Buffer[] | undefined;
          res.on('data', (chunk: Buffer) => {
            if (first === undefined) first = chunk;
            else if (more === undefined) more = [first, chunk];
            else more.push(chunk);
          });
          res.on('end', () => {
            this.inFlight.delete(outgoing);
            resolve({
              status: res.statusCode ?? 0,
              headers: flatten(res.headers),
              body:
                more !== undefined ? Buffer.concat(more).toString('utf8') : (first?.toString('utf8') ?? ''),
            });
          });
          res.on('error', (error) => {
            this.inFlight.delete(outgoing);
            reject(error);
          });
        },
      );
      outgoing.on('error', (error) => {
        this.inFlight.delete(outgoing);
        reject(error);
      });
      this.inFlight.set(outgoing, performance.now() + this.timeoutMs);
      this.sweeper ??= this.startSweeper();
      outgoing.end(req.body);
    });
  }

  /**
   * Destroys requests past their deadline, checked four times per timeout (at most every second):
   * a request times out between timeoutMs and 1.25 × timeoutMs after it was sent.
   */
  private startSweeper(): NodeJS.Timeout {
    const every = Math.max(1, Math.min(1_000, this.timeoutMs / 4));
    const sweeper = setInterval(() => {
      const now = performance.now();
      for (const [outgoing, deadline] of this.inFlight) {
        if (deadline > now) continue;
        this.inFlight.delete(outgoing);
        outgoing.destroy(new Error(`timeout after ${this.timeoutMs} ms`));
      }
    }, every);
    sweeper.unref();
    return sweeper;
  }

  /** Closes the keep-alive sockets. */
  close(): void {
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.pool?.close();
    this.agent.destroy();
  }
}

function hasHeaders(headers: EmulatorRequest['headers']): boolean {
  for (const name in headers) if (headers[name] !== undefined) return true;
  return false;
}

function flatten(headers: IncomingHttpHeaders): Record<string, string> {
  // Only set-cookie is an array in node:http's headers; the object is the caller's otherwise.
  const cookies = headers['set-cookie'];
  if (cookies === undefined) return headers as Record<string, string>;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}
