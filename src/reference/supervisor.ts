/**
 * `fleetbench reference serve`: a small supervisor that owns the public port and runs the
 * reference control plane (server.ts) in a child process it can really kill and start again.
 *
 *   client ──HTTP──► supervisor (port P) ──proxy──► control-plane child (loopback, own port)
 *                        ▲   event hub ◄──IPC events── child
 *                        └── GET /v1/events streams the hub: it survives the child's death
 *
 * A `hard` restart (POST /v1/restart) is a SIGKILL of the child; `graceful` and `hot` ask it to
 * drain (the running poll cycle finishes) and exit. Either way a new child starts with
 * `--recover KIND`, rebuilds from the state directory and says `controlplane.ready`. From the
 * kill until then every proxied request is answered 503 `unavailable` with `retry-after: 1`
 * (the supervisor is up, the control plane is not), which is what a load balancer in front of
 * a restarting orchestrator answers. The supervisor writes `controlplane.restart` at the kill
 * and the `controlplane.outage` span (kill → ready) once the new child is ready.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { BodyTooLargeError, readBoundedBody, refuseBody } from '../base/http-body.ts';
import { BODY_LIMITS } from '../base/limits.ts';
import { RealClock } from '../clock/real.ts';
import {
  type RestartResponse,
  restartRequestSchema,
  runStartSchema,
  runStopSchema,
  type TargetEvent,
} from '../contract/protocol.ts';
import type { RestartKind } from '../contract/types.ts';
import { quarantineState } from './file-store.ts';
import { sendError } from './server.ts';

/** A child that dies unasked this many times within CRASH_WINDOW_MS starts with its state quarantined. */
const CRASHES_BEFORE_QUARANTINE = 3;
const CRASH_WINDOW_MS = 60_000;

const WORKER = fileURLToPath(new URL('../../bin/reference-worker.js', import.meta.url));

export interface SupervisorOptions {
  port?: number;
  /** 127.0.0.1 (default); 0.0.0.0 only in a container behind a Service (docs/distributed.md). */
  host?: '127.0.0.1' | '0.0.0.0';
  stateDir: string;
  github?: { url: string; token: string };
  /** Events kept for streams that (re)connect with `since` (default 200,000). */
  bufferEvents?: number;
  log?: (line: string) => void;
  /** How long a restart may take before it is reported failed (real ms, default 60 s). */
  readyTimeoutMs?: number;
}

export interface RunningSupervisor {
  url: string;
  port: number;
  /** The control plane's current pid (undefined while it is down). */
  childPid(): number | undefined;
  close(): Promise<void>;
}

type WorkerMessage =
  | { type: 'listening'; port: number; pid: number }
  | { type: 'drained'; pid: number }
  | { type: 'event'; event: TargetEvent }
  | { type: 'log'; line: string };

interface Child {
  process: ChildProcess;
  port?: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  listening: Promise<number>;
}

/** Events of the current run, numbered, fanned out to every open stream. */
class EventHub {
  private base = 1;
  private last = 0;
  private buffer: string[] = [];
  private readonly streams = new Set<{ res: ServerResponse; sse: boolean }>();
  private readonly watchers = new Set<(event: TargetEvent) => void>();

  constructor(private readonly capacity: number) {}

  get since(): number {
    return this.base;
  }

  /** Events of this run so far. */
  get count(): number {
    return this.last - this.base + 1;
  }

  newRun(): number {
    this.base = this.last + 1;
    this.buffer = [];
    return this.base;
  }

  publish(event: TargetEvent): void {
    const seq = ++this.last;
    const line = JSON.stringify({ seq, ...event });
    this.buffer.push(line);
    if (this.buffer.length > this.capacity) this.buffer.splice(0, this.buffer.length - this.capacity);
    for (const stream of this.streams) stream.res.write(frame(line, seq, stream.sse));
    for (const watcher of this.watchers) watcher(event);
  }

  watch(fn: (event: TargetEvent) => void): () => void {
    this.watchers.add(fn);
    return () => this.watchers.delete(fn);
  }

  subscribe(req: IncomingMessage, res: ServerResponse, since: number): void {
    const sse = (req.headers.accept ?? '').includes('text/event-stream');
    res.writeHead(200, {
      'content-type': sse ? 'text/event-stream' : 'application/x-ndjson',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    const first = this.last - this.buffer.length + 1;
    const from = Math.max(since, this.base);
    res.write(frame(JSON.stringify({ type: 'hello', since: from, oldest: first }), undefined, sse));
    for (let seq = Math.max(from, first); seq <= this.last; seq++) {
      res.write(frame(this.buffer[seq - first]!, seq, sse));
    }
    const stream = { res, sse };
    this.streams.add(stream);
    res.on('close', () => this.streams.delete(stream));
  }

  /** Tells every stream the run ended and how many events it had, then closes them. */
  endRun(): number {
    const events = this.count;
    const line = JSON.stringify({ type: 'end', events });
    for (const stream of this.streams) stream.res.end(frame(line, undefined, stream.sse));
    this.streams.clear();
    return events;
  }

  closeAll(): void {
    for (const stream of this.streams) stream.res.end();
    this.streams.clear();
  }
}

function frame(line: string, seq: number | undefined, sse: boolean): string {
  if (!sse) return `${line}\n`;
  return `${seq !== undefined ? `id: ${seq}\n` : ''}data: ${line}\n\n`;
}

export async function startSupervisor(options: SupervisorOptions): Promise<RunningSupervisor> {
  const log = options.log ?? (() => undefined);
  const hub = new EventHub(options.bufferEvents ?? 200_000);
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  let child: Child | undefined;
  /** Up: requests go through. Down: 503 (a restart, or the child died). */
  let up = false;
  let closing = false;
  let restarting = false;
  /** Why the control plane is gone for good (a restart that failed), until one succeeds. */
  let lost: string | undefined;
  let clock: RealClock | undefined;
  // A run driven by several generators (live-run segments, docs/distributed.md): the first POST
  // /v1/run of a run id starts it, the others join; only the last segment's stop ends it.
  let shared:
    | {
        runId: string;
        count: number;
        stopped: Set<number>;
        started: Promise<Record<string, unknown> | undefined>;
      }
    | undefined;
  const now = () => clock?.now() ?? 0;

  const spawnChild = (recover?: string): Child => {
    const args = [WORKER, '--state', options.stateDir];
    if (recover) args.push('--recover', recover);
    if (options.github) args.push('--github', options.github.url, '--token', options.github.token);
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let resolveListening!: (port: number) => void;
    let rejectListening!: (error: Error) => void;
    const listening = new Promise<number>((resolve, reject) => {
      resolveListening = resolve;
      rejectListening = reject;
    });
    listening.catch(() => undefined);
    const created: Child = {
      process: proc,
      listening,
      exited: new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal }))),
    };
    proc.on('message', (message: WorkerMessage) => {
      if (message.type === 'event') hub.publish(message.event);
      else if (message.type === 'listening') {
        created.port = message.port;
        resolveListening(message.port);
      } else if (message.type === 'log') log(message.line);
    });
    void created.exited.then(({ code, signal }) => {
      rejectListening(new Error(`control plane exited (${signal ?? code}) before listening`));
      if (child !== created) return;
      up = false;
      child = undefined;
      if (closing || restarting) return;
      // A child that died before it listened is reported by whoever started it (no crash loop).
      if (created.port === undefined) return;
      // Not asked for: the process crashed. Start it again as after a hard kill, unless it keeps
      // dying: then what it reloads is the likely cause, and it starts empty (quarantine).
      log(`control plane ${proc.pid} exited unexpectedly (${signal ?? code}); starting it again`);
      hub.publish({
        type: 'event',
        name: 'controlplane.exit',
        t: now(),
        data: { pid: proc.pid, code, signal },
      });
      const at = performance.now();
      crashes.push(at);
      while (crashes.length > 0 && at - crashes[0]! > CRASH_WINDOW_MS) crashes.shift();
      let recover: string | undefined = 'hard';
      if (crashes.length >= CRASHES_BEFORE_QUARANTINE) {
        crashes.length = 0;
        recover = undefined;
        quarantine(
          `the control plane died ${CRASHES_BEFORE_QUARANTINE} times within ${CRASH_WINDOW_MS / 1000} s`,
        );
      }
      void startChild(recover).catch((error: Error) => {
        lost = error.message;
        log(`could not start the control plane: ${error.message}`);
      });
    });
    return created;
  };

  /** When the child died unasked, recently (real ms): a crash loop is broken by a quarantine. */
  const crashes: number[] = [];
  const quarantine = (reason: string) => {
    let moved: string[] = [];
    try {
      moved = quarantineState(options.stateDir);
    } catch (error) {
      log(`could not quarantine ${options.stateDir}: ${(error as Error).message}`);
    }
    log(
      `${reason}: its state is quarantined (${moved.join(', ') || 'nothing to move'}); it starts with no run (POST /v1/run)`,
    );
    hub.publish({
      type: 'event',
      name: 'controlplane.state_quarantined',
      t: now(),
      data: { reason, moved },
    });
  };

  const startChild = async (recover?: string): Promise<Child> => {
    const next = spawnChild(recover);
    child = next;
    await withTimeout(next.listening, readyTimeoutMs, 'control plane did not start listening');
    if (child === next) up = true;
    return next;
  };

  await startChild();

  /** A control plane that is down for good (not restarting) replaced by a new one with no run. */
  let fresh: Promise<Child> | undefined;
  const startFresh = (): Promise<Child> =>
    (fresh ??= (async () => {
      log(`the control plane is down (${lost ?? 'not started'}); starting a new one for the new run`);
      const stale = child;
      if (stale) {
        child = undefined; // its exit is asked for: not a crash to recover from
        stale.process.kill('SIGKILL');
        await stale.exited;
      }
      return startChild();
    })().finally(() => {
      fresh = undefined;
    }));

  interface Answer {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: Buffer;
  }

  /** Forwards a request to the control plane; rejects when it is down or dies mid-request. */
  const forward = (req: IncomingMessage, body: Buffer): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const target = child;
      if (!up || target?.port === undefined) {
        reject(new Error('down'));
        return;
      }
      const out = httpRequest(
        {
          host: '127.0.0.1',
          port: target.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, connection: 'close', 'content-length': String(body.length) },
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (c: Buffer) => chunks.push(c));
          answer.on('end', () => {
            const headers = { ...answer.headers };
            delete headers.connection;
            delete headers['keep-alive'];
            delete headers['transfer-encoding'];
            resolve({ status: answer.statusCode ?? 502, headers, body: Buffer.concat(chunks) });
          });
          answer.on('error', reject);
        },
      );
      out.on('error', reject);
      out.end(body);
    });

  const relay = (res: ServerResponse, answer: Answer) => {
    res.writeHead(answer.status, { ...answer.headers, 'content-length': String(answer.body.length) });
    res.end(answer.body);
  };

  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  /**
   * Resolves once every event the child sent before now has reached the hub: IPC messages
   * arrive in order, so the child's answer to a barrier comes after them.
   */
  let barrierId = 0;
  const barrier = (): Promise<void> => {
    const target = child;
    if (!target?.process.connected) return Promise.resolve();
    const id = ++barrierId;
    return withTimeout(
      new Promise<void>((resolve) => {
        const onMessage = (message: { type?: string; id?: number }) => {
          if (message.type === 'barrier' && message.id === id) {
            target.process.off('message', onMessage);
            resolve();
          }
        };
        target.process.on('message', onMessage);
        target.process.send({ type: 'barrier', id });
      }),
      5_000,
      'control plane did not answer the event barrier',
    ).catch(() => undefined);
  };

  const unavailable = (res: ServerResponse) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (lost !== undefined && !restarting)
      return sendError(res, 500, 'internal', `the control plane is down: ${lost}`);
    res.setHeader('retry-after', '1');
    sendError(res, 503, 'unavailable', 'the control plane is restarting');
  };

  const restart = async (kind: RestartKind): Promise<RestartResponse> => {
    const current = child;
    const before = current?.process.pid;
    const killedAt = now();
    hub.publish({
      type: 'event',
      name: 'controlplane.restart',
      t: killedAt,
      labels: { kind },
      data: { pid: before },
    });
    restarting = true;
    try {
      up = false;
      if (current) {
        if (kind === 'hard') current.process.kill('SIGKILL');
        else current.process.send({ type: 'drain', kind });
        const exited = await Promise.race([current.exited, sleep(30_000).then(() => undefined)]);
        if (exited === undefined) {
          current.process.kill('SIGKILL');
          await current.exited;
        }
      }
      const drainedAt = now();
      let resolveReady!: (t: number) => void;
      let rejectReady!: (error: Error) => void;
      const ready = new Promise<number>((resolve, reject) => {
        resolveReady = resolve;
        rejectReady = reject;
      });
      ready.catch(() => undefined);
      const unwatch = hub.watch((event) => {
        if (event.name === 'controlplane.ready' && typeof event.t === 'number') resolveReady(event.t);
        if (event.name === 'controlplane.recover_failed')
          rejectReady(
            new Error(
              `the run cannot be recovered: ${(event.data as { message?: string } | undefined)?.message ?? 'unknown'}`,
            ),
          );
      });
      try {
        let next: Child;
        let readyAt: number;
        try {
          next = await startChild(kind);
          readyAt = await withTimeout(ready, readyTimeoutMs, 'control plane did not become ready');
        } catch (error) {
          // Not an outage but a lost run: said once, the restart answered 500 (a 503 would tell
          // clients to wait for a restart that is not happening). A child that listens serves
          // no run (409 no_run) and takes the next POST /v1/run; one that does not is started
          // afresh by that POST.
          lost = (error as Error).message;
          log(`restart ${kind}: the control plane did not come back: ${lost}`);
          hub.publish({
            type: 'event',
            name: 'controlplane.lost',
            t: now(),
            labels: { kind },
            data: { message: lost, pidBefore: before },
          });
          throw error;
        }
        lost = undefined;
        const after = next.process.pid;
        const realMs = Math.max(0, readyAt - killedAt) / (clock?.timeScale ?? 1);
        log(
          `restart ${kind}: control plane ${before} ${kind === 'hard' ? 'killed (SIGKILL)' : kind === 'hot' ? 'handed its runners over' : 'drained'}, ${after} ready after ${(realMs / 1000).toFixed(2)} s`,
        );
        hub.publish({
          type: 'span',
          name: 'controlplane.outage',
          t: killedAt,
          dur: Math.max(0, readyAt - killedAt),
          labels: { kind },
          data: { drainMs: drainedAt - killedAt, pidBefore: before, pidAfter: after },
        });
        return {
          outageMs: Math.max(0, readyAt - killedAt) / (clock?.timeScale ?? 1),
          pid: { before, after },
        };
      } finally {
        unwatch();
      }
    } finally {
      restarting = false;
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    if (method === 'GET' && url.pathname === '/v1/events') {
      const since = Number(url.searchParams.get('since') ?? hub.since);
      hub.subscribe(req, res, Number.isFinite(since) ? since : hub.since);
      return;
    }
    let body: Buffer;
    try {
      body = await readBoundedBody(req, BODY_LIMITS.reference);
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error;
      return refuseBody(res, { error: { code: 'too_large', message: error.message } });
    }
    if (method === 'POST' && url.pathname === '/v1/restart') {
      let input: unknown;
      try {
        input = JSON.parse(body.toString('utf8') || '{}');
      } catch {
        input = undefined;
      }
      const parsed = restartRequestSchema.safeParse(input);
      if (!parsed.success) return sendError(res, 400, 'bad_request', 'kind: expected hard, graceful or hot');
      if (clock === undefined) return sendError(res, 409, 'no_run', 'no run: POST /v1/run first');
      if (restarting) return sendError(res, 409, 'conflict', 'a restart is already under way');
      return json(res, 200, await restart(parsed.data.kind));
    }
    let answer: Answer;
    try {
      if (method === 'POST' && url.pathname === '/v1/run') {
        let parsed: ReturnType<typeof runStartSchema.safeParse> | undefined;
        try {
          parsed = runStartSchema.safeParse(JSON.parse(body.toString('utf8')));
        } catch {
          parsed = undefined;
        }
        const segment = parsed?.success ? parsed.data.segment : undefined;
        if (
          segment &&
          shared &&
          parsed?.success &&
          shared.runId === parsed.data.runId &&
          shared.count === segment.count
        ) {
          // A segment joining the run another one started: no reset, the run's events from its start.
          const started = await shared.started;
          if (!started) return unavailable(res); // the start failed: retried, this one starts it
          return json(res, 200, { ...started, since: hub.since, joined: true });
        }
        let startedRun!: (answer: Record<string, unknown> | undefined) => void;
        shared =
          segment && parsed?.success
            ? {
                runId: parsed.data.runId,
                count: segment.count,
                stopped: new Set(),
                started: new Promise((resolve) => {
                  startedRun = resolve;
                }),
              }
            : undefined;
        const starting = shared;
        try {
          if (parsed?.success) {
            clock = new RealClock({ epochMs: parsed.data.epochMs, timeScale: parsed.data.timeScale });
            hub.endRun();
            hub.newRun();
          }
          // The control plane was lost (a restart or a start that failed): a new run starts a
          // new one, with nothing to recover.
          if (!up && !restarting && !closing) await startFresh();
          answer = await forward(req, body);
        } catch (error) {
          if (starting) {
            if (shared === starting) shared = undefined;
            startedRun(undefined);
          }
          throw error;
        }
        if (answer.status !== 200) {
          if (starting) {
            if (shared === starting) shared = undefined;
            startedRun(undefined);
          }
          return relay(res, answer);
        }
        const started = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;
        lost = undefined;
        if (starting) startedRun(started);
        return json(res, 200, { ...started, since: hub.since });
      }
      if (method === 'POST' && url.pathname === '/v1/run/stop') {
        let stop: ReturnType<typeof runStopSchema.safeParse> | undefined;
        try {
          stop = runStopSchema.safeParse(JSON.parse(body.toString('utf8') || '{}'));
        } catch {
          stop = undefined;
        }
        const segment = stop?.success ? stop.data.segment : undefined;
        if (segment && shared && stop?.success && stop.data.runId === shared.runId) {
          shared.stopped.add(segment.index);
          const running = shared.count - shared.stopped.size;
          // Other segments still run: the run goes on for them; this one reads the events so far.
          if (running > 0) return json(res, 200, { events: hub.count, running });
        }
        shared = undefined;
        answer = await forward(req, body);
        if (answer.status !== 200) return relay(res, answer);
        await barrier();
        return json(res, 200, { events: hub.endRun() });
      }
      answer = await forward(req, body);
    } catch {
      return unavailable(res);
    }
    relay(res, answer);
  };

  const server: Server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      log(`supervisor: ${(error as Error)?.stack ?? String(error)}`);
      if (!res.headersSent) sendError(res, 500, 'internal', String((error as Error)?.message ?? error));
      else res.destroy();
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    closing = true;
    child?.process.kill('SIGKILL');
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    childPid: () => (up ? child?.process.pid : undefined),
    close() {
      closed ??= (async () => {
        closing = true;
        up = false;
        hub.closeAll();
        const current = child;
        if (current && current.process.exitCode === null && current.process.signalCode === null) {
          current.process.kill('SIGTERM');
          const exited = await Promise.race([current.exited, sleep(3_000).then(() => undefined)]);
          if (exited === undefined) {
            current.process.kill('SIGKILL');
            await current.exited;
          }
        }
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      })();
      return closed;
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<T>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
