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
import { BODY_LIMITS, MAX_SERVED_SESSIONS } from '../base/limits.ts';
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

/** A path segment as the client encoded it; a malformed escape is the request's fault. */
function pathSegment(encoded: string, what: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, 'bad_request', `${what}: malformed percent-encoding in the path`);
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

export async function startReferenceServer(options: ReferenceServerOptions): Promise<RunningReferenceServer> {
  const log = options.log ?? (() => undefined);
  // A state file that does not parse: said with its path and what is lost, moved aside, and the
  // control plane goes on without it (docs/live-runs.md), never a crash loop on every restart.
  const onCorrupt: CorruptStateHandler = (path, lost, reason, movedTo) => {
    log(`state file ${path} is corrupt (${reason}): moved to ${movedTo}; lost: ${lost}`);
    options.emit({
      type: 'event',
      name: 'controlplane.state_corrupt',
      data: { path, lost, reason, movedTo },
    } as TargetEvent);
  };
  const store = new FileStore(options.stateDir, { onCorrupt });
  const runPath = join(options.stateDir, 'run.json');
  let plane: ReferenceControlPlane | undefined;
  let transport: HttpTransport | undefined;
  let run: SavedRun | undefined;
  const sink: TraceSink = { write: (record) => options.emit(recordToEvent(record as never)) };

  const stopPlane = async () => {
    await plane?.stop();
    transport?.close();
    plane = undefined;
    transport = undefined;
  };

  const begin = async (saved: SavedRun, reason: string) => {
    await stopPlane();
    const clock = new RealClock({ epochMs: saved.epochMs, timeScale: saved.timeScale });
    transport = new HttpTransport(saved.github.url, { maxSockets: 16 });
    run = saved;
    plane = new ReferenceControlPlane({
      clock,
      rng: createRng(saved.seed).fork('target'),
      trace: sink,
      transport,
      token: saved.github.token,
      store,
      runStore: store,
      config: { ...servedConfig(saved.config), project: saved.scenario },
    });
    await plane.start(reason);
    if (reason !== 'start')
      resumeSpawns(plane, sink, clock, createRng(saved.seed).fork('respawn'), servedConfig(saved.config));
  };

  if (options.recover !== undefined) await recover(options.recover);

  /**
   * A process started again after a restart serves the saved run, or says why it cannot
   * (`controlplane.recover_failed`) and serves none: run.json is moved aside (`run.json.failed`),
   * so no saved state can make every later process fail the same way, and the next POST /v1/run
   * starts afresh. Exactly one of `controlplane.ready` and `controlplane.recover_failed` is sent.
   */
  async function recover(kind: string): Promise<void> {
    try {
      let corrupt: string | undefined;
      const raw = readJson<unknown>(runPath, (reason, movedTo) => {
        corrupt = `${runPath} is corrupt (${reason}): moved to ${movedTo}`;
        onCorrupt(
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
      await begin(checked.data, kind);
      if (store.tornLines > 0) log(`recovered with ${store.tornLines} torn journal line(s) skipped`);
    } catch (error) {
      await stopPlane().catch(() => undefined);
      run = undefined;
      const message = (error as Error)?.message ?? String(error);
      let movedTo: string | undefined;
      try {
        if (existsSync(runPath)) movedTo = moveAside(runPath, 'failed');
      } catch (moveError) {
        log(`could not move ${runPath} aside: ${(moveError as Error).message}`);
      }
      log(
        `restart ${kind}: the run cannot be recovered: ${message}${movedTo ? ` (run.json moved to ${movedTo})` : ''}; serving no run until the next POST /v1/run`,
      );
      options.emit({
        type: 'event',
        name: 'controlplane.recover_failed',
        labels: { kind },
        data: { message, ...(movedTo ? { movedTo } : {}) },
      } as TargetEvent);
    }
  }

  const info = (): InfoResponse => ({
    protocol: TARGET_PROTOCOL,
    name: 'fleetbench-reference',
    version: VERSION,
    capabilities: ['restart', 'flushCaches', 'setDashboard', 'events', 'runs', 'providerFaults', 'actors'],
    pid: process.pid,
    ...(run ? { github: { url: run.github.url, own: options.github !== undefined } } : {}),
  });

  const requirePlane = (): ReferenceControlPlane => {
    if (!plane) throw new HttpError(409, 'no_run', 'no run: POST /v1/run first');
    return plane;
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/v1/info') return send(res, 200, info());
    if (method === 'POST' && path === '/v1/run') {
      const body = parse(referenceRunStartSchema, await readBody(req));
      const github = options.github ?? body.github;
      if (!github)
        throw new HttpError(
          400,
          'bad_request',
          'github: this server has no GitHub of its own; the run must offer one',
        );
      await stopPlane();
      store.clear();
      const saved: SavedRun = { ...body, github };
      writeAtomic(runPath, JSON.stringify(saved));
      try {
        await begin(saved, 'start');
      } catch (error) {
        // The run did not start: nothing of it is kept, so no restart tries it again.
        await stopPlane().catch(() => undefined);
        run = undefined;
        rmSync(runPath, { force: true });
        store.clear();
        throw new HttpError(
          502,
          'bad_gateway',
          `github.url: the run cannot start against ${github.url}: ${(error as Error)?.message ?? error}`,
        );
      }
      return send(res, 200, { since: 0, github: { url: github.url, own: options.github !== undefined } });
    }
    if (method === 'POST' && path === '/v1/run/stop') {
      await stopPlane();
      return send(res, 200, { events: 0 });
    }
    if (path === '/v1/sessions' && method === 'POST') {
      const p = requirePlane();
      const spec = parse(sessionSpecSchema, await readBody(req));
      const existing = p.sessions.get(spec.id);
      // Idempotent: a client retrying after a restart may re-send a create that was saved.
      if (existing) return send(res, 200, { id: existing.id, state: existing.state });
      if (p.sessions.size >= MAX_SERVED_SESSIONS)
        throw new HttpError(
          409,
          'conflict',
          `id: this run has ${MAX_SERVED_SESSIONS} sessions, the most one run may create (docs/limits.md)`,
        );
      const record = p.createSession(spec);
      return send(res, 201, { id: record.id, state: record.state });
    }
    if (path === '/v1/sessions' && method === 'GET') {
      return send(res, 200, { counts: plane ? plane.counts() : {} });
    }
    const session = /^\/v1\/sessions\/([^/]+)(\/(turns|run))?$/.exec(path);
    if (session) {
      const p = requirePlane();
      const record = p.sessions.get(pathSegment(session[1]!, 'session id'));
      if (!record) throw new HttpError(404, 'not_found', `no session '${session[1]}'`);
      if (session[3] === 'run' && method === 'POST') {
        const body = parse(runOpenRequestSchema, await readBody(req));
        const opened = await runCall(() => p.runs.startRun(record.id, body.adapter, body.input, body.key));
        return send(res, 201, opened);
      }
      if (session[3] === 'run' && method === 'DELETE') {
        await runCall(() => p.runs.endRun(record.id));
        return send(res, 204);
      }
      if (session[3] === 'turns' && method === 'POST') {
        const body = parse(turnRequestSchema, await readBody(req));
        await runCall(() => p.runs.sendInput(record.id, body.input, body.key));
        return send(res, 202, {});
      }
      if (session[3] === undefined && method === 'GET')
        return send(res, 200, { id: record.id, state: record.state, pr: record.pr });
    }
    if (method === 'POST' && path === '/v1/providers/faults') {
      const fault = parse(providerFaultSchema, await readBody(req));
      const p = requirePlane();
      await runCall(async () => p.runs.providerFault(fault));
      return send(res, 204);
    }
    if (path === '/v1/actors' && method === 'GET')
      return send(res, 200, { counts: requirePlane().actors.counts() });
    if (path === '/v1/actors' && method === 'POST') {
      const body = parse(actorCreateSchema, await readBody(req));
      return send(res, 200, await requirePlane().actors.create(body.id, body.base, body.phase));
    }
    const actor = /^\/v1\/actors\/([^/]+)\/(park|wake|steps)$/.exec(path);
    if (actor && method === 'POST') {
      const host = requirePlane().actors;
      const id = pathSegment(actor[1]!, 'actor id');
      const input = await readBody(req);
      if (actor[2] === 'steps') {
        const body = parse(actorStepSchema, input);
        return send(res, 200, await actorCall(() => host.step(id, body.step, body.phase)));
      }
      const { phase } = parse(actorPhaseSchema, input);
      return send(
        res,
        200,
        await actorCall(() => (actor[2] === 'park' ? host.park(id, phase) : host.wake(id, phase))),
      );
    }
    if (method === 'POST' && path === '/v1/caches/flush') {
      requirePlane().flushCaches();
      return send(res, 204);
    }
    if (method === 'POST' && path === '/v1/dashboard') {
      const { open } = parse(dashboardRequestSchema, await readBody(req));
      requirePlane().setDashboard(open);
      return send(res, 204);
    }
    throw new HttpError(404, 'not_found', `${method} ${path}: no such endpoint`);
  };

  const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    route(req, res).catch((error: unknown) => {
      if (error instanceof HttpError && error.status === 413)
        return refuseBody(res, { error: { code: error.code, message: error.message } });
      if (error instanceof HttpError) return sendError(res, error.status, error.code, error.message);
      log(`internal error: ${(error as Error)?.stack ?? String(error)}`);
      if (!res.headersSent) sendError(res, 500, 'internal', String((error as Error)?.message ?? error));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    server,
    async drain(kind = 'graceful') {
      await plane?.drain(kind);
    },
    async close() {
      await stopPlane();
      store.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
