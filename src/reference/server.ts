/**
 * The reference control plane as a real HTTP server (one process of `fleetbench reference
 * serve`; the supervisor in supervisor.ts owns the public port and runs this in a child it can
 * kill). It speaks the `http` target protocol (src/contract/protocol.ts, docs/http-target.md):
 * a run begins with POST /v1/run, sessions are created with POST /v1/sessions, and every record
 * the control plane would trace in-process goes out as an event through `emit` (to the
 * supervisor, which streams it to fleetbench).
 *
 * Durable state lives in the state directory (file-store.ts): a process started with
 * `recover` reloads the run and its sessions from there and says `controlplane.ready` with the
 * restart kind as its reason, exactly as the in-process restart does.
 */

import { existsSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { sample } from '../base/distribution.ts';
import { BodyTooLargeError, readBoundedBody, refuseBody } from '../base/http-body.ts';
import { answered, InFlight } from '../base/http-inflight.ts';
import { MalformedParam, METHODS, Routes } from '../base/http-router.ts';
import { BODY_LIMITS, LISTEN_BACKLOG, MAX_SERVED_SESSIONS } from '../base/limits.ts';
import { createRng, type Rng } from '../base/rng.ts';
import { VERSION } from '../base/version.ts';
import { RealClock } from '../clock/real.ts';
import {
  actorCreateSchema,
  actorPhaseSchema,
  actorStepSchema,
  dashboardRequestSchema,
  githubOfferSchema,
  type InfoResponse,
  type ProtocolErrorCode,
  providerFaultSchema,
  type RunStartRequest,
  recordToEvent,
  runOpenRequestSchema,
  runStartSchema,
  sessionSpecSchema,
  TARGET_PROTOCOL,
  type TargetEvent,
  turnRequestSchema,
} from '../contract/protocol.ts';
import { HttpTransport } from '../github/transport.ts';
import type { TraceSink } from '../trace/writer.ts';
import { type ReferenceConfig, type ServedConfig, servedConfig, servedConfigSchema } from './config.ts';
import { ReferenceControlPlane } from './control-plane.ts';
import { type CorruptStateHandler, FileStore, moveAside, readJson, writeAtomic } from './file-store.ts';

export interface ReferenceServerOptions {
  stateDir: string;
  /** 0 (default): a free port. Always loopback. */
  port?: number;
  /** A GitHub of its own (`--github`, `--token`): used instead of the one a run offers. */
  github?: { url: string; token: string };
  /** Where events go (the supervisor's hub). */
  emit(event: TargetEvent): void;
  /** Start again after a restart of this kind: reload the saved run and its sessions. */
  recover?: string;
  log?: (line: string) => void;
}

export interface RunningReferenceServer {
  port: number;
  server: Server;
  /** Graceful or hot: the running poll cycle finishes, runners drain or are handed over, then the control plane stops. */
  drain(kind?: 'graceful' | 'hot'): Promise<void>;
  close(): Promise<void>;
}

/** What run.json holds: enough to serve the run again after a kill. */
interface SavedRun extends Omit<RunStartRequest, 'config'> {
  github: { url: string; token: string };
  config?: ServedConfig;
}

/** POST /v1/run with the reference control plane's own `config` checked (config.ts). */
const referenceRunStartSchema = runStartSchema.extend({ config: servedConfigSchema.optional() });
/** run.json read back: what POST /v1/run accepted, with the GitHub the run is served against. */
const savedRunSchema = referenceRunStartSchema.extend({ github: githubOfferSchema });

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: ProtocolErrorCode,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (answered(res)) return; // cancelled by a shutdown meanwhile
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendError(
  res: ServerResponse,
  status: number,
  code: ProtocolErrorCode,
  message: string,
): void {
  send(res, status, { error: { code, message } });
}

/** The answer to a request a shutdown cancels (the supervisor's, or the control plane's own). */
export function shuttingDown(res: ServerResponse): void {
  res.setHeader('retry-after', '1');
  sendError(res, 503, 'unavailable', 'the control plane is shutting down');
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  let body: Buffer;
  try {
    body = await readBoundedBody(req, BODY_LIMITS.reference);
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw new HttpError(413, 'too_large', error.message);
    throw error;
  }
  if (body.length === 0) return {};
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpError(400, 'bad_request', 'body: malformed JSON');
  }
}

function parse<T>(
  schema: {
    safeParse(
      v: unknown,
    ):
      | { success: true; data: T }
      | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } };
  },
  value: unknown,
): T {
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new HttpError(400, 'bad_request', `${issue?.path.join('.') || 'body'}: ${issue?.message}`);
  }
  return result.data;
}

/**
 * After a real kill, sessions that were still spawning lost their spawn timer with the process:
 * the new process picks them up again (a fresh spawn time from now), as an orchestrator reclaims
 * half-started work. Their `session.spawn` span runs from creation, so it includes the outage.
 */
function resumeSpawns(
  plane: ReferenceControlPlane,
  sink: TraceSink,
  clock: RealClock,
  rng: Rng,
  config: ReferenceConfig,
): void {
  for (const record of plane.sessions.all()) {
    if (record.state !== 'spawning') continue;
    const delay = sample(config.spawnTime, rng);
    clock.setTimeout(() => {
      const current = plane.sessions.get(record.id);
      if (current?.state !== 'spawning') return;
      sink.write({
        kind: 'span',
        name: 'session.spawn',
        t: current.createdAt,
        dur: clock.now() - current.createdAt,
        session: current.id,
        data: { resumed: true },
      });
      plane.sessions.setState(current, 'working');
    }, delay);
  }
}

/** Native-run errors as protocol answers: a bad adapter is the request's fault, the rest conflicts. */
async function runCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const message = (error as Error).message;
    if (/unknown provider adapter/.test(message)) throw new HttpError(400, 'bad_request', message);
    if (/control plane stopped/.test(message)) throw new HttpError(503, 'unavailable', message);
    throw new HttpError(409, 'conflict', message);
  }
}

/** Actor errors (an unknown actor, an operation its state does not allow) are conflicts. */
async function actorCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new HttpError(409, 'conflict', (error as Error).message);
  }
}

/** A session's paths: the session is looked up before the method is (409 no_run, 404 no session). */
const SESSION_PATHS = {
  session: '/v1/sessions/:session',
  run: '/v1/sessions/:session/run',
  turns: '/v1/sessions/:session/turns',
} as const;

/** The field a malformed path parameter is named by in the 400 (by route parameter). */
const PATH_FIELDS: Record<string, string> = { session: 'session id', actor: 'actor id' };

/** The 404 of a path no route takes (the path as the URL parser normalised it, as ever). */
function noSuchEndpoint(req: IncomingMessage): HttpError {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  return new HttpError(404, 'not_found', `${req.method ?? 'GET'} ${path}: no such endpoint`);
}

/**
 * The run this process serves: the control plane, its GitHub transport, the saved run and the
 * durable store. A run begins (POST /v1/run, or a recovery after a restart), and stops.
 */
class ServedRun {
  plane: ReferenceControlPlane | undefined;
  private transport: HttpTransport | undefined;
  run: SavedRun | undefined;
  readonly store: FileStore;
  private readonly runPath: string;
  private readonly sink: TraceSink;
  private readonly log: (line: string) => void;

  constructor(private readonly options: ReferenceServerOptions) {
    this.log = options.log ?? (() => undefined);
    this.store = new FileStore(options.stateDir, { onCorrupt: this.onCorrupt });
    this.runPath = join(options.stateDir, 'run.json');
    this.sink = { write: (record) => options.emit(recordToEvent(record as never)) };
  }

  // A state file that does not parse: said with its path and what is lost, moved aside, and the
  // control plane goes on without it (docs/live-runs.md), never a crash loop on every restart.
  private readonly onCorrupt: CorruptStateHandler = (path, lost, reason, movedTo) => {
    this.log(`state file ${path} is corrupt (${reason}): moved to ${movedTo}; lost: ${lost}`);
    this.options.emit({
      type: 'event',
      name: 'controlplane.state_corrupt',
      data: { path, lost, reason, movedTo },
    } as TargetEvent);
  };

  /** The GitHub a run is served against: this server's own, else the one the run offers. */
  get ownGithub(): boolean {
    return this.options.github !== undefined;
  }

  requirePlane(): ReferenceControlPlane {
    if (!this.plane) throw new HttpError(409, 'no_run', 'no run: POST /v1/run first');
    return this.plane;
  }

  async stopPlane(): Promise<void> {
    await this.plane?.stop();
    this.transport?.close();
    this.plane = undefined;
    this.transport = undefined;
  }

  private async begin(saved: SavedRun, reason: string): Promise<void> {
    await this.stopPlane();
    const clock = new RealClock({ epochMs: saved.epochMs, timeScale: saved.timeScale });
    this.transport = new HttpTransport(saved.github.url, { maxSockets: 16 });
    this.run = saved;
    this.plane = new ReferenceControlPlane({
      clock,
      rng: createRng(saved.seed).fork('target'),
      trace: this.sink,
      transport: this.transport,
      token: saved.github.token,
      store: this.store,
      runStore: this.store,
      config: { ...servedConfig(saved.config), project: saved.scenario },
    });
    await this.plane.start(reason);
    if (reason !== 'start')
      resumeSpawns(
        this.plane,
        this.sink,
        clock,
        createRng(saved.seed).fork('respawn'),
        servedConfig(saved.config),
      );
  }

  /** POST /v1/run: a new run, saved first so that a restart serves it again. */
  async start(body: RunStartRequest & { config?: ServedConfig }): Promise<{ url: string }> {
    const github = this.options.github ?? body.github;
    if (!github)
      throw new HttpError(
        400,
        'bad_request',
        'github: this server has no GitHub of its own; the run must offer one',
      );
    await this.stopPlane();
    this.store.clear();
    const saved: SavedRun = { ...body, github };
    writeAtomic(this.runPath, JSON.stringify(saved));
    try {
      await this.begin(saved, 'start');
    } catch (error) {
      // The run did not start: nothing of it is kept, so no restart tries it again.
      await this.stopPlane().catch(() => undefined);
      this.run = undefined;
      rmSync(this.runPath, { force: true });
      this.store.clear();
      throw new HttpError(
        502,
        'bad_gateway',
        `github.url: the run cannot start against ${github.url}: ${(error as Error)?.message ?? error}`,
      );
    }
    return github;
  }

  /**
   * A process started again after a restart serves the saved run, or says why it cannot
   * (`controlplane.recover_failed`) and serves none: run.json is moved aside (`run.json.failed`),
   * so no saved state can make every later process fail the same way, and the next POST /v1/run
   * starts afresh. Exactly one of `controlplane.ready` and `controlplane.recover_failed` is sent.
   */
  async recover(kind: string): Promise<void> {
    try {
      await this.begin(this.savedRun(), kind);
      if (this.store.tornLines > 0)
        this.log(`recovered with ${this.store.tornLines} torn journal line(s) skipped`);
    } catch (error) {
      await this.stopPlane().catch(() => undefined);
      this.run = undefined;
      const message = (error as Error)?.message ?? String(error);
      let movedTo: string | undefined;
      try {
        if (existsSync(this.runPath)) movedTo = moveAside(this.runPath, 'failed');
      } catch (moveError) {
        this.log(`could not move ${this.runPath} aside: ${(moveError as Error).message}`);
      }
      this.log(
        `restart ${kind}: the run cannot be recovered: ${message}${movedTo ? ` (run.json moved to ${movedTo})` : ''}; serving no run until the next POST /v1/run`,
      );
      this.options.emit({
        type: 'event',
        name: 'controlplane.recover_failed',
        labels: { kind },
        data: { message, ...(movedTo ? { movedTo } : {}) },
      } as TargetEvent);
    }
  }

  /** run.json read back and checked; a missing, corrupt, hand-edited or foreign one is refused. */
  private savedRun(): SavedRun {
    const runPath = this.runPath;
    let corrupt: string | undefined;
    const raw = readJson<unknown>(runPath, (reason, movedTo) => {
      corrupt = `${runPath} is corrupt (${reason}): moved to ${movedTo}`;
      this.onCorrupt(
        runPath,
        'the run this control plane served (it starts with none: POST /v1/run)',
        reason,
        movedTo,
      );
    });
    if (raw === undefined) throw new Error(corrupt ?? `no run to recover: ${runPath} is missing`);
    // run.json was checked when the run began; a hand-edited or foreign one is refused here.
    const checked = savedRunSchema.safeParse(raw);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new Error(`${runPath}: ${issue?.path.join('.') || 'run'}: ${issue?.message}`);
    }
    return checked.data;
  }

  info(): InfoResponse {
    return {
      protocol: TARGET_PROTOCOL,
      name: 'fleetbench-reference',
      version: VERSION,
      capabilities: ['restart', 'flushCaches', 'setDashboard', 'events', 'runs', 'providerFaults', 'actors'],
      pid: process.pid,
      ...(this.run ? { github: { url: this.run.github.url, own: this.ownGithub } } : {}),
    };
  }

  async close(): Promise<void> {
    await this.stopPlane();
    this.store.close();
  }
}

/** The run's own endpoints: info, start and stop, the cache flush and the dashboard. */
function runRoutes(routes: Routes, served: ServedRun): void {
  routes.on('GET', '/v1/info', (_req, res) => send(res, 200, served.info()));
  routes.on('POST', '/v1/run', async (req, res) => {
    const github = await served.start(parse(referenceRunStartSchema, await readBody(req)));
    send(res, 200, { since: 0, github: { url: github.url, own: served.ownGithub } });
  });
  routes.on('POST', '/v1/run/stop', async (_req, res) => {
    await served.stopPlane();
    send(res, 200, { events: 0 });
  });
  routes.on('POST', '/v1/providers/faults', async (req, res) => {
    const fault = parse(providerFaultSchema, await readBody(req));
    const plane = served.requirePlane();
    await runCall(async () => plane.runs.providerFault(fault));
    send(res, 204);
  });
  routes.on('POST', '/v1/caches/flush', (_req, res) => {
    served.requirePlane().flushCaches();
    send(res, 204);
  });
  routes.on('POST', '/v1/dashboard', async (req, res) => {
    const { open } = parse(dashboardRequestSchema, await readBody(req));
    served.requirePlane().setDashboard(open);
    send(res, 204);
  });
}

type SessionRecord = NonNullable<ReturnType<ReferenceControlPlane['sessions']['get']>>;
type SessionHandler = (
  plane: ReferenceControlPlane,
  record: SessionRecord,
  req: IncomingMessage,
  res: ServerResponse,
) => unknown;

/** Sessions: created, counted, read, and their native runs opened, fed and ended. */
function sessionRoutes(routes: Routes, served: ServedRun): void {
  routes.on('POST', '/v1/sessions', async (req, res) => {
    const plane = served.requirePlane();
    const spec = parse(sessionSpecSchema, await readBody(req));
    const existing = plane.sessions.get(spec.id);
    // Idempotent: a client retrying after a restart may re-send a create that was saved.
    if (existing) return send(res, 200, { id: existing.id, state: existing.state });
    if (plane.sessions.size >= MAX_SERVED_SESSIONS)
      throw new HttpError(
        409,
        'conflict',
        `id: this run has ${MAX_SERVED_SESSIONS} sessions, the most one run may create (docs/limits.md)`,
      );
    const record = plane.createSession(spec);
    return send(res, 201, { id: record.id, state: record.state });
  });
  routes.on('GET', '/v1/sessions', (_req, res) =>
    send(res, 200, { counts: served.plane ? served.plane.counts() : {} }),
  );
  const handlers: Record<
    keyof typeof SESSION_PATHS,
    Partial<Record<(typeof METHODS)[number], SessionHandler>>
  > = {
    session: {
      GET: (_plane, record, _req, res) =>
        send(res, 200, { id: record.id, state: record.state, pr: record.pr }),
    },
    run: {
      POST: async (plane, record, req, res) => {
        const body = parse(runOpenRequestSchema, await readBody(req));
        const opened = await runCall(() =>
          plane.runs.startRun(record.id, body.adapter, body.input, body.key),
        );
        send(res, 201, opened);
      },
      DELETE: async (plane, record, _req, res) => {
        await runCall(() => plane.runs.endRun(record.id));
        send(res, 204);
      },
    },
    turns: {
      POST: async (plane, record, req, res) => {
        const body = parse(turnRequestSchema, await readBody(req));
        await runCall(() => plane.runs.sendInput(record.id, body.input, body.key));
        send(res, 202, {});
      },
    },
  };
  for (const [name, path] of Object.entries(SESSION_PATHS) as Array<[keyof typeof SESSION_PATHS, string]>) {
    // Every method: the session is looked up first, then an unknown method is a 404 endpoint.
    routes.on(METHODS, path, (req, res, match) => {
      const id = match.params.session!;
      if (id === '') throw noSuchEndpoint(req);
      const plane = served.requirePlane();
      const record = plane.sessions.get(id);
      // The id as sent (still percent-encoded), as this message always quoted it.
      if (!record) throw new HttpError(404, 'not_found', `no session '${match.path.split('/')[3]}'`);
      const handler = handlers[name][(req.method ?? 'GET') as (typeof METHODS)[number]];
      if (!handler) throw noSuchEndpoint(req);
      return handler(plane, record, req, res);
    });
  }
}

/** Park/wake actors: counted, created, parked, woken and stepped. */
function actorRoutes(routes: Routes, served: ServedRun): void {
  routes.on('GET', '/v1/actors', (_req, res) =>
    send(res, 200, { counts: served.requirePlane().actors.counts() }),
  );
  routes.on('POST', '/v1/actors', async (req, res) => {
    const body = parse(actorCreateSchema, await readBody(req));
    send(res, 200, await served.requirePlane().actors.create(body.id, body.base, body.phase));
  });
  for (const operation of ['park', 'wake', 'steps'] as const) {
    routes.on('POST', `/v1/actors/:actor/${operation}`, async (req, res, match) => {
      const id = match.params.actor!;
      if (id === '') throw noSuchEndpoint(req);
      const host = served.requirePlane().actors;
      const input = await readBody(req);
      if (operation === 'steps') {
        const body = parse(actorStepSchema, input);
        return send(res, 200, await actorCall(() => host.step(id, body.step, body.phase)));
      }
      const { phase } = parse(actorPhaseSchema, input);
      return send(
        res,
        200,
        await actorCall(() => (operation === 'park' ? host.park(id, phase) : host.wake(id, phase))),
      );
    });
  }
}

/** A request answered: its route's handler, a 400 for a malformed parameter, else a 404. */
async function answer(routes: Routes, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const matched = routes.match(req);
  if (matched instanceof MalformedParam)
    throw new HttpError(
      400,
      'bad_request',
      `${PATH_FIELDS[matched.param] ?? matched.param}: malformed percent-encoding in the path`,
    );
  if (!matched) throw noSuchEndpoint(req);
  await matched(res);
}

export async function startReferenceServer(options: ReferenceServerOptions): Promise<RunningReferenceServer> {
  const log = options.log ?? (() => undefined);
  const served = new ServedRun(options);
  if (options.recover !== undefined) await served.recover(options.recover);
  const routes = new Routes();
  runRoutes(routes, served);
  sessionRoutes(routes, served);
  actorRoutes(routes, served);

  const inFlight = new InFlight();
  const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    inFlight.track(res);
    answer(routes, req, res).catch((error: unknown) => {
      if (error instanceof HttpError && error.status === 413)
        return refuseBody(res, { error: { code: error.code, message: error.message } });
      if (error instanceof HttpError) return sendError(res, error.status, error.code, error.message);
      if (res.writableEnded) return; // cancelled by a shutdown: its read fails as the connection closes
      log(`internal error: ${(error as Error)?.stack ?? String(error)}`);
      if (!res.headersSent) sendError(res, 500, 'internal', String((error as Error)?.message ?? error));
      else if (!res.writableEnded) res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', LISTEN_BACKLOG, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    server,
    async drain(kind = 'graceful') {
      await served.plane?.drain(kind);
    },
    async close() {
      // No new connection; requests not answered yet are answered 503 (retry-after: the
      // supervisor is restarting it, or going too), then the run stops and connections close.
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      inFlight.cancelAll(shuttingDown);
      await served.close();
      server.closeAllConnections();
      await stopped;
    },
  };
}
