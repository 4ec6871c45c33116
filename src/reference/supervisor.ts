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
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { BodyTooLargeError, readBoundedBody, refuseBody } from '../base/http-body.ts';
import { answered, InFlight } from '../base/http-inflight.ts';
import { type RouteHandler, Routes } from '../base/http-router.ts';
import { BODY_LIMITS, LISTEN_BACKLOG } from '../base/limits.ts';
import { withTimeout } from '../base/with-timeout.ts';
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
import { sendError, shuttingDown } from './server.ts';

/** How long the control plane has to stop on a shutdown before it is killed (real ms). */
const CHILD_STOP_GRACE_MS = 3_000;

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

/** What the child answered a forwarded request, read whole. */
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * A run driven by several generators (live-run segments, docs/distributed.md): the first POST
 * /v1/run of a run id starts it, the others join; only the last segment's stop ends it.
 */
interface SharedRun {
  runId: string;
  count: number;
  stopped: Set<number>;
  /** The start's answer, or undefined when it failed (a joining segment then answers 503). */
  started: Promise<Record<string, unknown> | undefined>;
  settle(answer: Record<string, unknown> | undefined): void;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (answered(res)) return; // cancelled by a shutdown meanwhile
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function relay(res: ServerResponse, answer: Answer): void {
  if (answered(res)) return;
  res.writeHead(answer.status, { ...answer.headers, 'content-length': String(answer.body.length) });
  res.end(answer.body);
}

/** A JSON body through a schema; undefined when it is not JSON (the child then says why). */
function parseBody<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } },
  body: Buffer,
  empty?: string,
): { success: true; data: T } | { success: false } | undefined {
  try {
    return schema.safeParse(JSON.parse(body.toString('utf8') || (empty ?? '')));
  } catch {
    return undefined;
  }
}

/**
 * The supervisor's state and what it does: the control-plane child (started, restarted,
 * replaced after a crash or a loss), the event hub, the run's clock and its shared segments.
 */
class Supervisor {
  readonly hub: EventHub;
  /** Requests not answered yet: a shutdown answers them 503 and counts them. */
  readonly inFlight = new InFlight();
  /**
   * Connections to the control plane kept open and reused: a new one per forwarded request
   * cost both processes most of their CPU under a flood (1,000 clients at once: ~1.5 ms of the
   * supervisor's CPU a request), and a probe waited behind it.
   */
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });
  private readonly log: (line: string) => void;
  private readonly readyTimeoutMs: number;
  private child: Child | undefined;
  /** Up: requests go through. Down: 503 (a restart, or the child died). */
  private up = false;
  private closing = false;
  private restarting = false;
  /** Why the control plane is gone for good (a restart that failed), until one succeeds. */
  private lost: string | undefined;
  private clock: RealClock | undefined;
  private shared: SharedRun | undefined;
  /** When the child died unasked, recently (real ms): a crash loop is broken by a quarantine. */
  private readonly crashes: number[] = [];
  /** A control plane that is down for good (not restarting) being replaced by a new one. */
  private fresh: Promise<Child> | undefined;
  private barrierId = 0;

  constructor(private readonly options: SupervisorOptions) {
    this.log = options.log ?? (() => undefined);
    this.hub = new EventHub(options.bufferEvents ?? 200_000);
    this.readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  }

  private now(): number {
    return this.clock?.now() ?? 0;
  }

  /** The control plane's current pid (undefined while it is down). */
  childPid(): number | undefined {
    return this.up ? this.child?.process.pid : undefined;
  }

  private spawnChild(recover?: string): Child {
    const { options } = this;
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
      if (message.type === 'event') this.hub.publish(message.event);
      else if (message.type === 'listening') {
        created.port = message.port;
        resolveListening(message.port);
      } else if (message.type === 'log') this.log(message.line);
    });
    void created.exited.then(({ code, signal }) => {
      rejectListening(new Error(`control plane exited (${signal ?? code}) before listening`));
      this.onExit(created, code, signal);
    });
    return created;
  }

  private onExit(created: Child, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child !== created) return;
    this.up = false;
    this.child = undefined;
    if (this.closing || this.restarting) return;
    // A child that died before it listened is reported by whoever started it (no crash loop).
    if (created.port === undefined) return;
    // Not asked for: the process crashed. Start it again as after a hard kill, unless it keeps
    // dying: then what it reloads is the likely cause, and it starts empty (quarantine).
    const pid = created.process.pid;
    this.log(`control plane ${pid} exited unexpectedly (${signal ?? code}); starting it again`);
    this.hub.publish({
      type: 'event',
      name: 'controlplane.exit',
      t: this.now(),
      data: { pid, code, signal },
    });
    const { crashes } = this;
    const at = performance.now();
    crashes.push(at);
    while (crashes.length > 0 && at - crashes[0]! > CRASH_WINDOW_MS) crashes.shift();
    let recover: string | undefined = 'hard';
    if (crashes.length >= CRASHES_BEFORE_QUARANTINE) {
      crashes.length = 0;
      recover = undefined;
      this.quarantine(
        `the control plane died ${CRASHES_BEFORE_QUARANTINE} times within ${CRASH_WINDOW_MS / 1000} s`,
      );
    }
    void this.startChild(recover).catch((error: Error) => {
      this.lost = error.message;
      this.log(`could not start the control plane: ${error.message}`);
    });
  }

  private quarantine(reason: string): void {
    let moved: string[] = [];
    try {
      moved = quarantineState(this.options.stateDir);
    } catch (error) {
      this.log(`could not quarantine ${this.options.stateDir}: ${(error as Error).message}`);
    }
    this.log(
      `${reason}: its state is quarantined (${moved.join(', ') || 'nothing to move'}); it starts with no run (POST /v1/run)`,
    );
    this.hub.publish({
      type: 'event',
      name: 'controlplane.state_quarantined',
      t: this.now(),
      data: { reason, moved },
    });
  }

  async startChild(recover?: string): Promise<Child> {
    const next = this.spawnChild(recover);
    this.child = next;
    await withTimeout(
      next.listening,
      this.readyTimeoutMs,
      `control plane did not start listening within ${this.readyTimeoutMs} ms`,
    );
    if (this.child === next) this.up = true;
    return next;
  }

  /** A control plane that is down for good (not restarting) replaced by a new one with no run. */
  private startFresh(): Promise<Child> {
    this.fresh ??= (async () => {
      this.log(
        `the control plane is down (${this.lost ?? 'not started'}); starting a new one for the new run`,
      );
      const stale = this.child;
      if (stale) {
        this.child = undefined; // its exit is asked for: not a crash to recover from
        stale.process.kill('SIGKILL');
        await stale.exited;
      }
      return this.startChild();
    })().finally(() => {
      this.fresh = undefined;
    });
    return this.fresh;
  }

  /** Forwards a request to the control plane; rejects when it is down or dies mid-request. */
  forward(req: IncomingMessage, body: Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const target = this.child;
      if (!this.up || target?.port === undefined) {
        reject(new Error('down'));
        return;
      }
      const out = httpRequest(
        {
          host: '127.0.0.1',
          port: target.port,
          method: req.method,
          path: req.url,
          agent: this.agent,
          headers: { ...req.headers, connection: 'keep-alive', 'content-length': String(body.length) },
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
  }

  /**
   * Resolves once every event the child sent before now has reached the hub: IPC messages
   * arrive in order, so the child's answer to a barrier comes after them.
   */
  private barrier(): Promise<void> {
    const target = this.child;
    if (!target?.process.connected) return Promise.resolve();
    const id = ++this.barrierId;
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
      'control plane did not answer the event barrier within 5000 ms',
    ).catch(() => undefined);
  }

  unavailable(res: ServerResponse): void {
    if (res.writableEnded) return;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (this.closing) {
      shuttingDown(res);
      return;
    }
    if (this.lost !== undefined && !this.restarting) {
      sendError(res, 500, 'internal', `the control plane is down: ${this.lost}`);
      return;
    }
    res.setHeader('retry-after', '1');
    sendError(res, 503, 'unavailable', 'the control plane is restarting');
  }

  /** POST /v1/restart. */
  async restartRequest(res: ServerResponse, body: Buffer): Promise<void> {
    const parsed = parseBody(restartRequestSchema, body, '{}');
    if (!parsed?.success) return sendError(res, 400, 'bad_request', 'kind: expected hard, graceful or hot');
    if (this.clock === undefined) return sendError(res, 409, 'no_run', 'no run: POST /v1/run first');
    if (this.restarting) return sendError(res, 409, 'conflict', 'a restart is already under way');
    json(res, 200, await this.restart(parsed.data.kind));
  }

  private async restart(kind: RestartKind): Promise<RestartResponse> {
    const current = this.child;
    const before = current?.process.pid;
    const killedAt = this.now();
    this.hub.publish({
      type: 'event',
      name: 'controlplane.restart',
      t: killedAt,
      labels: { kind },
      data: { pid: before },
    });
    this.restarting = true;
    try {
      this.up = false;
      if (current) await stopChild(current, kind);
      const drainedAt = this.now();
      const ready = this.readyOrFailed();
      try {
        return await this.comeBack(kind, ready.at, { before, killedAt, drainedAt });
      } finally {
        ready.unwatch();
      }
    } finally {
      this.restarting = false;
    }
  }

  /** When the next child says it is ready (run time), or why it cannot recover the run. */
  private readyOrFailed(): { at: Promise<number>; unwatch: () => void } {
    let resolveReady!: (t: number) => void;
    let rejectReady!: (error: Error) => void;
    const at = new Promise<number>((resolve, reject) => {
      resolveReady = resolve;
      rejectReady = reject;
    });
    at.catch(() => undefined);
    const unwatch = this.hub.watch((event) => {
      if (event.name === 'controlplane.ready' && typeof event.t === 'number') resolveReady(event.t);
      if (event.name === 'controlplane.recover_failed')
        rejectReady(
          new Error(
            `the run cannot be recovered: ${(event.data as { message?: string } | undefined)?.message ?? 'unknown'}`,
          ),
        );
    });
    return { at, unwatch };
  }

  /** The restart's second half: a new child started and ready, the outage traced. */
  private async comeBack(
    kind: RestartKind,
    ready: Promise<number>,
    { before, killedAt, drainedAt }: { before: number | undefined; killedAt: number; drainedAt: number },
  ): Promise<RestartResponse> {
    let next: Child;
    let readyAt: number;
    try {
      next = await this.startChild(kind);
      readyAt = await withTimeout(
        ready,
        this.readyTimeoutMs,
        `control plane did not become ready within ${this.readyTimeoutMs} ms`,
      );
    } catch (error) {
      // Not an outage but a lost run: said once, the restart answered 500 (a 503 would tell
      // clients to wait for a restart that is not happening). A child that listens serves
      // no run (409 no_run) and takes the next POST /v1/run; one that does not is started
      // afresh by that POST.
      this.lost = (error as Error).message;
      this.log(`restart ${kind}: the control plane did not come back: ${this.lost}`);
      this.hub.publish({
        type: 'event',
        name: 'controlplane.lost',
        t: this.now(),
        labels: { kind },
        data: { message: this.lost, pidBefore: before },
      });
      throw error;
    }
    this.lost = undefined;
    const after = next.process.pid;
    const realMs = Math.max(0, readyAt - killedAt) / (this.clock?.timeScale ?? 1);
    this.log(
      `restart ${kind}: control plane ${before} ${kind === 'hard' ? 'killed (SIGKILL)' : kind === 'hot' ? 'handed its runners over' : 'drained'}, ${after} ready after ${(realMs / 1000).toFixed(2)} s`,
    );
    this.hub.publish({
      type: 'span',
      name: 'controlplane.outage',
      t: killedAt,
      dur: Math.max(0, readyAt - killedAt),
      labels: { kind },
      data: { drainMs: drainedAt - killedAt, pidBefore: before, pidAfter: after },
    });
    return { outageMs: realMs, pid: { before, after } };
  }

  /** POST /v1/run: a new run (its clock, its events from here), or a segment joining one. */
  async startRun(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const parsed = parseBody(runStartSchema, body);
    const run = parsed?.success ? parsed.data : undefined;
    const segment = run?.segment;
    const shared = this.shared;
    if (segment && shared && run && shared.runId === run.runId && shared.count === segment.count) {
      // A segment joining the run another one started: no reset, the run's events from its start.
      const started = await shared.started;
      if (!started) return this.unavailable(res); // the start failed: retried, this one starts it
      return json(res, 200, { ...started, since: this.hub.since, joined: true });
    }
    const starting = segment && run ? newSharedRun(run.runId, segment.count) : undefined;
    this.shared = starting;
    const abandon = () => {
      if (!starting) return;
      if (this.shared === starting) this.shared = undefined;
      starting.settle(undefined);
    };
    let answer: Answer;
    try {
      if (run) {
        this.clock = new RealClock({ epochMs: run.epochMs, timeScale: run.timeScale });
        this.hub.endRun();
        this.hub.newRun();
      }
      // The control plane was lost (a restart or a start that failed): a new run starts a
      // new one, with nothing to recover.
      if (!this.up && !this.restarting && !this.closing) await this.startFresh();
      answer = await this.forward(req, body);
    } catch (error) {
      abandon();
      throw error;
    }
    if (answer.status !== 200) {
      abandon();
      return relay(res, answer);
    }
    const started = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;
    this.lost = undefined;
    starting?.settle(started);
    json(res, 200, { ...started, since: this.hub.since });
  }

  /** POST /v1/run/stop: a segment's stop while others run, or the run's end (events counted). */
  async stopRun(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const stop = parseBody(runStopSchema, body, '{}');
    const request = stop?.success ? stop.data : undefined;
    const segment = request?.segment;
    const shared = this.shared;
    if (segment && shared && request?.runId === shared.runId) {
      shared.stopped.add(segment.index);
      const running = shared.count - shared.stopped.size;
      // Other segments still run: the run goes on for them; this one reads the events so far.
      if (running > 0) return json(res, 200, { events: this.hub.count, running });
    }
    this.shared = undefined;
    const answer = await this.forward(req, body);
    if (answer.status !== 200) return relay(res, answer);
    await this.barrier();
    json(res, 200, { events: this.hub.endRun() });
  }

  /**
   * Stops for good (SIGTERM, Ctrl-C): every request not answered yet is answered 503 and
   * counted in a `controlplane.shutdown` event, which the event streams get before they end; then
   * the control plane is asked to stop (SIGTERM) and killed if it is not gone within
   * CHILD_STOP_GRACE_MS. Within 5 s in all (docs/limits.md#servers).
   */
  async close(): Promise<void> {
    this.closing = true;
    this.up = false;
    const cancelled = this.inFlight.cancelAll(shuttingDown);
    this.log(`shutting down: ${cancelled} request(s) in flight answered 503`);
    this.hub.publish({
      type: 'event',
      name: 'controlplane.shutdown',
      t: this.now(),
      data: { cancelled, pid: this.child?.process.pid },
    });
    this.hub.closeAll();
    const current = this.child;
    if (current && current.process.exitCode === null && current.process.signalCode === null) {
      current.process.kill('SIGTERM');
      const exited = await Promise.race([current.exited, sleep(CHILD_STOP_GRACE_MS).then(() => undefined)]);
      if (exited === undefined) {
        current.process.kill('SIGKILL');
        await current.exited;
      }
    }
    this.agent.destroy();
  }

  /** A server that failed to listen: the child goes with it. */
  abandonChild(): void {
    this.closing = true;
    this.child?.process.kill('SIGKILL');
  }
}

/** A child asked to go (SIGKILL for hard, a drain otherwise), killed if it takes over 30 s. */
async function stopChild(current: Child, kind: RestartKind): Promise<void> {
  if (kind === 'hard') current.process.kill('SIGKILL');
  else current.process.send({ type: 'drain', kind });
  const exited = await Promise.race([current.exited, sleep(30_000).then(() => undefined)]);
  if (exited === undefined) {
    current.process.kill('SIGKILL');
    await current.exited;
  }
}

function newSharedRun(runId: string, count: number): SharedRun {
  let settle!: SharedRun['settle'];
  const started = new Promise<Record<string, unknown> | undefined>((resolve) => {
    settle = resolve;
  });
  return { runId, count, stopped: new Set(), started, settle };
}

/** A body read whole within the bound, or undefined once a 413 has answered it. */
async function readBody(res: ServerResponse, req: IncomingMessage): Promise<Buffer | undefined> {
  try {
    return await readBoundedBody(req, BODY_LIMITS.reference);
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error;
    refuseBody(res, { error: { code: 'too_large', message: error.message } });
    return undefined;
  }
}

/**
 * The supervisor's own endpoints; every other request is forwarded to the control plane. A
 * run's start and stop are forwarded too, around the supervisor's part (its clock, the event
 * hub, segments); when the control plane is down they answer as any forwarded request does.
 */
function supervisorRoutes(supervisor: Supervisor): Routes {
  const withBody =
    (work: (req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<void>): RouteHandler =>
    async (req, res) => {
      const body = await readBody(res, req);
      if (body) await work(req, res, body);
    };
  const orUnavailable =
    (work: (req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<void>) =>
    (req: IncomingMessage, res: ServerResponse, body: Buffer) =>
      work(req, res, body).catch(() => supervisor.unavailable(res));
  return new Routes()
    .on('GET', '/v1/events', (req, res, { query }) => {
      const { hub } = supervisor;
      const since = Number(query.get('since') ?? hub.since);
      hub.subscribe(req, res, Number.isFinite(since) ? since : hub.since);
    })
    .on(
      'POST',
      '/v1/restart',
      withBody((_req, res, body) => supervisor.restartRequest(res, body)),
    )
    .on('POST', '/v1/run', withBody(orUnavailable((req, res, body) => supervisor.startRun(req, res, body))))
    .on(
      'POST',
      '/v1/run/stop',
      withBody(orUnavailable((req, res, body) => supervisor.stopRun(req, res, body))),
    );
}

/** Anything not the supervisor's own, relayed as the control plane answered (503 while it is down). */
async function proxy(supervisor: Supervisor, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(res, req);
  if (!body) return;
  let answer: Answer;
  try {
    answer = await supervisor.forward(req, body);
  } catch {
    return supervisor.unavailable(res);
  }
  relay(res, answer);
}

export async function startSupervisor(options: SupervisorOptions): Promise<RunningSupervisor> {
  const log = options.log ?? (() => undefined);
  const supervisor = new Supervisor(options);
  await supervisor.startChild();
  const routes = supervisorRoutes(supervisor);
  const server: Server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    supervisor.inFlight.track(res);
    // Its routes take no parameters: a malformed path is the control plane's to answer.
    const own = routes.match(req);
    const handled = typeof own === 'function' ? own(res) : proxy(supervisor, req, res);
    Promise.resolve(handled).catch((error: unknown) => {
      // A request a shutdown answered (cancelled) fails its read as its connection closes: said already.
      if (res.writableEnded) return;
      log(`supervisor: ${(error as Error)?.stack ?? String(error)}`);
      if (!res.headersSent) sendError(res, 500, 'internal', String((error as Error)?.message ?? error));
      else if (!res.writableEnded) res.destroy();
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', LISTEN_BACKLOG, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    supervisor.abandonChild();
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    childPid: () => supervisor.childPid(),
    close() {
      closed ??= (async () => {
        // No new connection from here; those open get their answers, then are closed.
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await supervisor.close();
        server.closeAllConnections();
        await stopped;
      })();
      return closed;
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
