/**
 * How a client reaches the emulator. Both implement GitHubTransport, so the reference control
 * plane (or any client code) runs unchanged in-process under the virtual clock or over HTTP
 * against `fleetbench github serve` or a real server.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { GitHubEmulator } from './emulator.ts';
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
}

/** Real HTTP(S) with keep-alive, to a base URL such as `http://127.0.0.1:PORT` or `https://HOST/api/v3`. */
export class HttpTransport implements GitHubTransport {
  readonly baseUrl: URL;
  private readonly options: HttpTransportOptions;
  private readonly agent: HttpAgent;
  private readonly https: boolean;

  constructor(baseUrl: string, options: HttpTransportOptions = {}) {
    this.baseUrl = new URL(baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl);
    this.options = options;
    this.https = this.baseUrl.protocol === 'https:';
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 64 };
    this.agent = this.https
      ? new HttpsAgent({ ...agentOptions, ca: options.ca })
      : new HttpAgent(agentOptions);
  }

  request(request: EmulatorRequest): Promise<EmulatorResponse> {
    const req = withDefaults(request, this.options);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = v;
    if (req.body !== undefined && headers['content-type'] === undefined)
      headers['content-type'] = 'application/json';
    const path = req.path.startsWith('/')
      ? `${this.baseUrl.pathname === '/' ? '' : this.baseUrl.pathname}${req.path}`
      : req.path;
    const send = this.https ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const outgoing = send(
        {
          protocol: this.baseUrl.protocol,
          hostname: this.baseUrl.hostname,
          port: this.baseUrl.port,
          method: req.method,
          path,
          headers,
          agent: this.agent,
          timeout: this.options.timeoutMs ?? 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: flatten(res.headers),
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', reject);
        },
      );
      outgoing.on('timeout', () =>
        outgoing.destroy(new Error(`timeout after ${this.options.timeoutMs ?? 30_000} ms`)),
      );
      outgoing.on('error', reject);
      outgoing.end(req.body);
    });
  }

  /** Closes the keep-alive sockets. */
  close(): void {
    this.agent.destroy();
  }
}

function flatten(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}
