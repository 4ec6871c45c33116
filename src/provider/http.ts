/**
 * The provider emulator over HTTP: a node:http server on loopback that the real CLIs are
 * pointed at (codex's `base_url`, `ANTHROPIC_BASE_URL`, opencode's `baseURL`). Each request is
 * read whole (bounded), planned by `ProviderEmulator.handle()` and played on the clock into the
 * response; the admin API under `/_fleetbench/` mints keys, adds faults and reads counts
 * (docs/provider-emulator.md).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { BodyTooLargeError, readBoundedBody, readBoundedChunks, refuseBody } from '../base/http-body.ts';
import { BODY_LIMITS, LISTEN_BACKLOG, PROVIDER_LIMITS } from '../base/limits.ts';
import { Rng } from '../base/rng.ts';
import { FifoQueue, type TurnSlices, turnSlices } from '../base/turn-slices.ts';
import type { Clock } from '../clock/clock.ts';
import { VirtualClock } from '../clock/virtual.ts';
import { REQUEST_FIELDS, RequestShapeError } from './conversation.ts';
import { ProviderEmulator } from './emulator.ts';
import { faultRuleSchema } from './faults.ts';
import { type JsonWorkers, jsonWorkers } from './json-workers.ts';
import { type AnswerSink, type PlayClock, startPlaying } from './playback.ts';
import type { ParsedBody, ProviderAnswer, ProviderRequest } from './types.ts';

export interface ProviderServerOptions {
  emulator: ProviderEmulator;
  /** 0 (default) picks a free port. */
  port?: number;
  host?: '127.0.0.1' | '::1' | 'localhost' | '0.0.0.0';
  /**
   * Bodies from this size on are parsed by worker threads (default
   * PROVIDER_LIMITS.jsonWorkers.fromBytes; Infinity: never, as the bench's reference).
   */
  offThreadFromBytes?: number;
  /**
   * false: each model request is planned whole in one turn of the event loop, as before plans
   * ran in steps (the bench's reference). Default true.
   */
  planInSteps?: boolean;
  /**
   * true: a body parsed by a worker comes back whole, not only the fields the emulator reads (the
   * bench's reference for the code before it did).
   */
  wholeLargeBodies?: boolean;
}

export interface RunningProviderServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

/** A response as an answer is played into it (one object a request, its methods shared). */
class ResponseSink implements AnswerSink {
  constructor(private readonly res: ServerResponse) {}
  head(status: number, headers: Record<string, string>): void {
    this.res.writeHead(status, headers);
  }
  flush(): void {
    this.res.flushHeaders();
  }
  write(data: string): void {
    this.res.write(data);
  }
  end(): void {
    this.res.end();
  }
  reset(): void {
    this.res.destroy();
  }
  // What was written goes out, then the connection ends without the stream's last chunk. The
  // end waits for the response's own writes to reach the socket: Node corks the socket for the
  // first writes until the next tick, and an end in the same tick can go out before them.
  cut(): void {
    const socket = this.res.socket;
    if (!socket) return;
    setImmediate(() => socket.end());
  }
}

/** An emulator error: said on stderr, and a 500 when nothing of the answer went out yet. */
function failed(res: ServerResponse, error: unknown): void {
  process.stderr.write(`provider emulator: ${(error as Error)?.stack ?? String(error)}\n`);
  if (!res.headersSent) sendJson(res, 500, { error: { message: 'emulator error', type: 'server_error' } });
  else res.destroy();
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

/** The clock streams are played on over HTTP: a real clock's timers run in `slices`. */
function slicedClock(clock: Clock, slices: TurnSlices): PlayClock {
  if (clock.kind !== 'real') return clock;
  return {
    now: () => clock.now(),
    setTimeout: (step, delayMs) => clock.setTimeout(() => slices.run(step), delayMs),
    clearTimeout: (id) => clock.clearTimeout(id),
  };
}

/** Bodies of several chunks up to a quarter of this are joined in slabs of this size. */
const SLAB_BYTES = 1024 * 1024;
/** Emptied slabs kept for reuse. */
const SPARE_SLABS = 8;

interface Slab {
  buffer: Buffer;
  used: number;
  /** Bodies in it not planned yet. */
  live: number;
}

/**
 * Where a body that came in several chunks is joined: one after the other in a slab, the slab
 * used again once every body in it is planned (`release`). A buffer of its own for every 100 KB
 * request cost more than parsing it: fresh memory is faulted in page by page as it is written.
 * Bodies are planned in the order they were read, so slabs empty in order.
 */
class BodySlabs {
  private current: Slab = { buffer: Buffer.alloc(0), used: 0, live: 0 };
  private readonly spare: Slab[] = [];
  private readonly byMemory = new Map<ArrayBufferLike, Slab>();

  /** A body's bytes in one buffer: the chunk it came in, or the chunks joined. */
  join(chunks: readonly Buffer[], size: number): Buffer {
    if (chunks.length === 1) return chunks[0] as Buffer;
    if (size > SLAB_BYTES / 4) return Buffer.concat(chunks, size);
    let slab = this.current;
    if (slab.used + size > slab.buffer.length) {
      if (slab.live === 0 && slab.buffer.length > 0) slab.used = 0;
      else {
        slab = this.spare.pop() ?? this.fresh();
        this.current = slab;
      }
    }
    const start = slab.used;
    for (const chunk of chunks) slab.used += chunk.copy(slab.buffer, slab.used);
    slab.live += 1;
    return slab.buffer.subarray(start, slab.used);
  }

  /** The request's body is planned: its place in a slab may be written again. */
  release(request: ProviderRequest): void {
    const body = request.rawBody;
    if (body === undefined) return;
    request.rawBody = undefined;
    const slab = this.byMemory.get(body.buffer);
    if (slab === undefined) return;
    slab.live -= 1;
    if (slab.live > 0 || slab === this.current) return;
    slab.used = 0;
    if (this.spare.length < SPARE_SLABS) this.spare.push(slab);
    else this.byMemory.delete(slab.buffer.buffer);
  }

  private fresh(): Slab {
    const slab = { buffer: Buffer.allocUnsafeSlow(SLAB_BYTES), used: 0, live: 0 };
    this.byMemory.set(slab.buffer.buffer, slab);
    return slab;
  }
}

/**
 * Reads a request whole (the body bounded) into what the emulator plans from; a body of
 * `offThreadFromBytes` or more is parsed by `parseLarge` (worker threads). A function of its own
 * so that the body, up to 16 MiB, is garbage once the answer is planned, not held while it plays.
 */
async function readRequest(
  emulator: ProviderEmulator,
  req: IncomingMessage,
  res: ServerResponse,
  parseLarge: (chunks: readonly Buffer[]) => Promise<ParsedBody>,
  offThreadFromBytes: number,
  slabs: BodySlabs,
): Promise<ProviderRequest | undefined> {
  let body: { chunks: Buffer[]; size: number } | undefined;
  if (req.method === 'POST') {
    try {
      body = await readBoundedChunks(req, BODY_LIMITS.provider);
    } catch (error) {
      if (error instanceof BodyTooLargeError)
        refuseBody(res, {
          error: { message: error.message, type: 'invalid_request_error', code: 'request_too_large' },
        });
      else res.destroy();
      return undefined;
    }
  } else req.resume();
  const arrivedAt = emulator.clock.now();
  const request: ProviderRequest = {
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    headers: req.headers,
    body: '',
    bodyBytes: body?.size ?? 0,
    arrivedAt,
  };
  if (body && body.size >= offThreadFromBytes) request.parsedBody = await parseLarge(body.chunks);
  else if (body) request.rawBody = slabs.join(body.chunks, body.size);
  return request;
}

/** One small request of each API, streamed and whole: what `warmUp` plans. */
const WARM_UP_REQUESTS: ReadonlyArray<{ path: string; headers: Record<string, string>; body: object }> = [
  {
    path: '/v1/responses',
    headers: { authorization: 'Bearer warm-up' },
    body: {
      model: 'gpt-5.5',
      input: 'warm up',
      tools: [{ type: 'function', name: 'shell', parameters: {} }],
    },
  },
  {
    path: '/v1/chat/completions',
    headers: { authorization: 'Bearer warm-up' },
    body: { model: 'gpt-5.5', messages: [{ role: 'user', content: 'warm up' }] },
  },
  {
    path: '/v1/messages',
    headers: { 'x-api-key': 'warm-up', 'anthropic-version': '2023-06-01' },
    body: { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'warm up' }] },
  },
];

/**
 * Plans and renders a few small requests on a throwaway emulator (its own clock and seed, no
 * trace), so that the first clients of a server do not pay the process's cold start (the JIT,
 * the parsers' and renderers' first runs: 7-13 ms of CPU for the first small request, under 1 ms
 * after). The served emulator's state, records and seeded draws are untouched.
 */
function warmUp(): void {
  const scratch = new ProviderEmulator({ clock: new VirtualClock(), rng: new Rng(0) });
  for (let round = 0; round < 3; round++)
    for (const { path, headers, body } of WARM_UP_REQUESTS)
      for (const stream of [true, false]) {
        const text = JSON.stringify({ ...body, stream });
        const planned = scratch.handle({ method: 'POST', path, headers, body: text, bodyBytes: text.length });
        planned.chunks?.data(0, planned.chunks.length);
        planned.finish('complete');
      }
}

export async function startProviderServer(options: ProviderServerOptions): Promise<RunningProviderServer> {
  const { emulator } = options;
  const host = options.host ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  const slices = turnSlices();
  const sliced = emulator.clock.kind === 'real';
  const playClock = slicedClock(emulator.clock, slices);
  /** Model requests waiting for their turn to be planned, and whether the server is closing. */
  let waiting = 0;
  let closing = false;
  /** What cancels each answer being played (a server closing records them as cancelled). */
  const playing = new Set<() => void>();
  // Only what the emulator reads of a large body comes back to this thread.
  const workers: JsonWorkers = jsonWorkers(options.wholeLargeBodies ? {} : { keep: REQUEST_FIELDS });
  const parseLarge = (chunks: readonly Buffer[]) => workers.parse(chunks, slices.run);
  const offThreadFromBytes = options.offThreadFromBytes ?? PROVIDER_LIMITS.jsonWorkers.fromBytes;
  const slabs = new BodySlabs();
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
    let request: ProviderRequest | undefined;
    try {
      request = await readRequest(emulator, req, res, parseLarge, offThreadFromBytes, slabs);
    } catch (error) {
      // The server closed while a worker parsed the body: nothing to answer.
      if (closing) {
        res.destroy();
        return;
      }
      throw error;
    }
    if (!request) return;
    // A model request (a POST) waits its turn; model lists, /metrics and the admin API do not.
    if (request.method === 'POST' && sliced) {
      waiting += 1;
      toPlan.push({ request, res });
      if (!planning) {
        planning = true;
        slices.run(planQueued);
      }
    } else {
      try {
        const planned = emulator.handle(request);
        slabs.release(request);
        play(request, planned, res);
      } catch (error) {
        slabs.release(request);
        failed(res, error);
      }
    }
  };
  /**
   * Model requests are planned one at a time, in the order they were read, as `handle()` would
   * plan them one after the other: token counts depend on what earlier requests left in the
   * emulator's memo, so no request is planned while another one's plan is between two steps. A
   * plan runs in steps (`emulator.plan`): it stops between two of them once its turn has run a
   * whole slice (TURN_SLICE_MS, even while clients connect: a small request is planned whole in
   * one turn, as before), so a large prompt's counting takes several turns and streams play and
   * other clients are answered in between (docs/performance.md, "One hostile request's hold").
   */
  const inSteps = options.planInSteps ?? true;
  const toPlan = new FifoQueue<{ request: ProviderRequest; res: ServerResponse }>();
  let planning = false;
  let current:
    | { request: ProviderRequest; res: ServerResponse; steps: Generator<void, ProviderAnswer> }
    | undefined;
  const planQueued = () => {
    while (current !== undefined || toPlan.size > 0) {
      if (current === undefined) {
        const job = toPlan.shift();
        current = { ...job, steps: emulator.plan(job.request) };
      }
      const { request, res, steps } = current;
      try {
        let next = steps.next();
        while (!next.done) {
          if (inSteps && slices.overTurn()) {
            slices.run(planQueued);
            return;
          }
          next = steps.next();
        }
        current = undefined;
        waiting -= 1;
        slabs.release(request);
        play(request, next.value, res);
      } catch (error) {
        current = undefined;
        waiting -= 1;
        slabs.release(request);
        failed(res, error);
      }
      if (toPlan.size > 0 && slices.spent()) {
        slices.run(planQueued);
        return;
      }
    }
    planning = false;
  };
  /** Starts playing a planned answer (see turnSlices). */
  const play = (request: ProviderRequest, planned: ProviderAnswer, res: ServerResponse) => {
    try {
      const arrival = request.arrivedAt as number;
      if (closing || res.destroyed) {
        // The server closed, or the client went away, while the request waited its turn: its
        // 'close' has passed, so nothing would cut the playback. Recorded as cancelled, never
        // played (it was played in full into the closed connection and recorded ok).
        planned.finish('cancelled');
        res.destroy();
        return;
      }
      let cancel: () => void = () => {};
      let over = false;
      const onClose = () => {
        if (!res.writableFinished) cancel();
      };
      cancel = startPlaying(planned, arrival, playClock, new ResponseSink(res), (_outcome, error) => {
        over = true;
        playing.delete(cancel);
        res.off('close', onClose);
        if (error !== undefined) failed(res, error);
      });
      if (over) return;
      playing.add(cancel);
      res.once('close', onClose);
    } catch (error) {
      failed(res, error);
    }
  };
  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => failed(res, error));
  });
  // Model requests can take minutes (a slow profile, a long stream): no server-side timeout cuts them.
  server.requestTimeout = 0;
  server.keepAliveTimeout = 65_000;
  server.on('connection', (socket: Socket) => {
    socket.setNoDelay(true);
    slices.accepted();
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  if (sliced) warmUp();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A backlog for a thousand clients connecting at once (LISTEN_BACKLOG, docs/limits.md).
    server.listen({ port: options.port ?? 0, host, backlog: LISTEN_BACKLOG }, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const hostInUrl = host === '::1' ? '[::1]' : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${hostInUrl}:${port}`,
    port,
    server,
    // Every answer still playing is cancelled first, so its record is written (as cancelled)
    // before the caller closes the trace.
    close: async () => {
      closing = true;
      slices.drain();
      for (const cancel of [...playing]) cancel();
      for (const socket of sockets) socket.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Requests that were waiting for their turn are planned and recorded as cancelled first.
      const deadline = performance.now() + 5_000;
      while (waiting > 0 && performance.now() < deadline)
        await new Promise((resolve) => setImmediate(resolve));
      await workers.close();
      await closed;
    },
  };
}
