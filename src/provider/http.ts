/**
 * The provider emulator over HTTP: a node:http server on loopback that the real CLIs are
 * pointed at (codex's `base_url`, `ANTHROPIC_BASE_URL`, opencode's `baseURL`). Each request is
 * read whole (bounded), planned by `ProviderEmulator.handle()` and played on the clock into the
 * response; the admin API under `/_fleetbench/` mints keys, adds faults and reads counts
 * (docs/provider-emulator.md).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { BodyTooLargeError, readBoundedBody, refuseBody } from '../base/http-body.ts';
import { BODY_LIMITS, PROVIDER_LIMITS } from '../base/limits.ts';
import { RequestShapeError } from './conversation.ts';
import type { ProviderEmulator } from './emulator.ts';
import { faultRuleSchema } from './faults.ts';
import { type AnswerSink, play } from './playback.ts';

export interface ProviderServerOptions {
  emulator: ProviderEmulator;
  /** 0 (default) picks a free port. */
  port?: number;
  host?: '127.0.0.1' | '::1' | 'localhost' | '0.0.0.0';
}

export interface RunningProviderServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

function sinkFor(res: ServerResponse): AnswerSink {
  return {
    head: (status, headers) => {
      res.writeHead(status, headers);
      // Headers go out now, before the first event: a client's first-byte timer starts here.
      res.flushHeaders();
    },
    write: (data) => {
      res.write(data);
    },
    end: () => res.end(),
    reset: () => res.destroy(),
    // What was written goes out, then the connection ends without the stream's last chunk.
    cut: () => res.socket?.end(),
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function admin(
  emulator: ProviderEmulator,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<void> {
  const token = emulator.adminToken;
  if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) {
    req.resume();
    sendJson(res, 401, { message: 'admin token required (printed by provider serve)' });
    return;
  }
  let body: Buffer = Buffer.alloc(0);
  if (req.method !== 'POST') req.resume();
  else
    try {
      body = await readBoundedBody(req, BODY_LIMITS.providerAdmin);
    } catch (error) {
      if (error instanceof BodyTooLargeError) refuseBody(res, { message: error.message });
      else res.destroy();
      return;
    }
  const json = (): Record<string, unknown> => {
    if (body.length === 0) return {};
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new RequestShapeError('body', 'expected a JSON object');
    return parsed as Record<string, unknown>;
  };
  try {
    const route = `${req.method} ${path}`;
    switch (route) {
      case 'POST /_fleetbench/keys': {
        const input = json();
        const session = input.session;
        const script = input.script;
        if (session !== undefined && (typeof session !== 'string' || session.length > 256))
          throw new RequestShapeError('session', 'expected a string of at most 256 characters');
        if (script !== undefined && typeof script !== 'string')
          throw new RequestShapeError('script', 'expected a script name');
        sendJson(res, 201, { key: emulator.mintKey({ session, script }) });
        return;
      }
      case 'GET /_fleetbench/faults':
        sendJson(res, 200, { faults: emulator.faults.list() });
        return;
      case 'POST /_fleetbench/faults': {
        if (emulator.faults.list().length >= PROVIDER_LIMITS.maxFaultRules)
          throw new RequestShapeError(
            'faults',
            `at most ${PROVIDER_LIMITS.maxFaultRules} rules (docs/limits.md)`,
          );
        const parsed = faultRuleSchema.safeParse(json());
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new RequestShapeError(issue?.path.join('.') || 'fault', issue?.message ?? 'invalid');
        }
        sendJson(res, 201, { id: emulator.addFault(parsed.data) });
        return;
      }
      case 'DELETE /_fleetbench/faults':
        emulator.faults.clear();
        sendJson(res, 200, { faults: [] });
        return;
      case 'POST /_fleetbench/limits/reset':
        emulator.limits.reset();
        sendJson(res, 200, { limits: emulator.limits.configured });
        return;
      case 'GET /_fleetbench/stats':
        sendJson(res, 200, emulator.snapshot());
        return;
      case 'GET /_fleetbench/scripts':
        sendJson(res, 200, { scripts: emulator.scriptNames() });
        return;
      default:
        sendJson(res, 404, { message: `no admin route ${route} (docs/provider-emulator.md#admin-api)` });
    }
  } catch (error) {
    if (error instanceof RequestShapeError || error instanceof SyntaxError)
      sendJson(res, 400, { message: error.message });
    else throw error;
  }
}

/**
 * The emulator's queue and counts in Prometheus' text format, under vLLM's metric names where
 * one fits (docs/provider-emulator.md, "Load").
 */
export function metricsText(emulator: ProviderEmulator): string {
  const now = emulator.clock.now();
  const stats = emulator.snapshot();
  const load = emulator.load;
  const lines: string[] = [];
  const metric = (name: string, type: string, help: string, value: number) =>
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
  metric(
    'vllm:num_requests_running',
    'gauge',
    'Requests being generated (the load model; without it, every request in flight).',
    load ? load.runningAt(now) : stats.inFlight,
  );
  metric(
    'vllm:num_requests_waiting',
    'gauge',
    'Requests waiting for a place among the running ones.',
    load ? load.waitingAt(now) : 0,
  );
  metric('vllm:prompt_tokens_total', 'counter', 'Input tokens of the requests answered.', stats.inputTokens);
  metric('vllm:generation_tokens_total', 'counter', 'Output tokens sent.', stats.outputTokens);
  metric(
    'vllm:prefix_cache_hits_total',
    'counter',
    'Input tokens read from the prompt cache.',
    stats.cachedInputTokens,
  );
  lines.push(
    '# HELP fleetbench_provider_requests_total Requests answered, by status.',
    '# TYPE fleetbench_provider_requests_total counter',
  );
  for (const [status, count] of Object.entries(stats.byStatus))
    lines.push(`fleetbench_provider_requests_total{status="${status}"} ${count}`);
  return `${lines.join('\n')}\n`;
}

export async function startProviderServer(options: ProviderServerOptions): Promise<RunningProviderServer> {
  const { emulator } = options;
  const host = options.host ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  /** Answers being played, each with what cancels it (a server closing records them as cancelled). */
  const playing = new Set<AbortController>();
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    if (path.startsWith('/_fleetbench/')) return admin(emulator, req, res, path);
    if (path === '/metrics' && req.method === 'GET') {
      req.resume();
      const text = metricsText(emulator);
      res.writeHead(200, {
        'content-type': 'text/plain; version=0.0.4; charset=utf-8',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
      return;
    }
    let body = '';
    if (req.method === 'POST') {
      try {
        body = (await readBoundedBody(req, BODY_LIMITS.provider)).toString('utf8');
      } catch (error) {
        if (error instanceof BodyTooLargeError)
          refuseBody(res, {
            error: { message: error.message, type: 'invalid_request_error', code: 'request_too_large' },
          });
        else res.destroy();
        return;
      }
    } else req.resume();
    const arrival = emulator.clock.now();
    const answer = emulator.handle({
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body,
    });
    const aborted = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) aborted.abort(new Error('client closed the connection'));
    };
    res.once('close', onClose);
    playing.add(aborted);
    try {
      await play(answer, arrival, emulator.clock, sinkFor(res), aborted.signal);
    } finally {
      playing.delete(aborted);
      res.off('close', onClose);
    }
  };
  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      process.stderr.write(`provider emulator: ${(error as Error)?.stack ?? String(error)}\n`);
      if (!res.headersSent)
        sendJson(res, 500, { error: { message: 'emulator error', type: 'server_error' } });
      else res.destroy();
    });
  });
  // Model requests can take minutes (a slow profile, a long stream): no server-side timeout cuts them.
  server.requestTimeout = 0;
  server.keepAliveTimeout = 65_000;
  server.on('connection', (socket: Socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A backlog for a thousand clients connecting at once: past the default (511) the kernel drops
    // their SYNs and each waits out a retransmission (1, 3, 7, 15 s) before it is even accepted.
    server.listen({ port: options.port ?? 0, host, backlog: 4096 }, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const hostInUrl = host === '::1' ? '[::1]' : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${hostInUrl}:${port}`,
    port,
    server,
    // Every answer still playing is cancelled first, so its record is written (as cancelled)
    // before the caller closes the trace.
    close: () =>
      new Promise<void>((resolve) => {
        for (const aborted of [...playing]) aborted.abort(new Error('the server is closing'));
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
