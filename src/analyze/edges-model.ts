/**
 * What crossed a world's edges, joined (docs/analysis.md#edges-any-control-plane-from-its-traffic):
 * the agents the control plane started (`agent.spawn`, `agent.exit`) and the session each worked
 * on (`agent.session`, the last one for a spawn wins), the model requests each made
 * (`provider.request` with `labels.spawn`), the work created (`work.created`) and how far each
 * session got (`session.state`), the control plane's restarts and deaths, and the attempts the
 * world refused (`world.blocked`). Record names and fields: docs/trace-format.md#world-and-command-target-records.
 *
 * Read from the retained records in time order (ties: trace order) and joined only once all are
 * read, so a record written late (an `agent.spawn` is stamped with the process's start, seen
 * after its first request) joins like any other. The edges finisher (edges.ts) and the speed
 * finisher (speed.ts, through edges-speed.ts) both read it. No zod: worker threads load this file.
 */
import { tokenCount } from './figures.ts';
import type { RetainedRecord } from './finisher.ts';

/** The record names the edges are made of. */
export const EDGE_RECORD_NAMES: ReadonlySet<string> = new Set([
  'world.started',
  'world.stopped',
  'world.blocked',
  'agent.spawn',
  'agent.exit',
  'agent.session',
  'provider.request',
  'work.created',
  'session.state',
  'controlplane.restart',
  'controlplane.ready',
  'controlplane.boot',
  'controlplane.exited',
]);

/** Records whose presence makes a trace one of a world (a provider request alone does not). */
const WORLD_MARKS: ReadonlySet<string> = new Set([
  'world.started',
  'world.blocked',
  'agent.spawn',
  'agent.session',
  'work.created',
  'controlplane.exited',
]);

/** The states a session moves through, in order; reaching its done state or a later one is done. */
export const SESSION_STATES = ['spawning', 'working', 'pr_open', 'review', 'merged', 'closed'] as const;
/** `work.created`'s `data.done` when it names none. */
export const DEFAULT_DONE_STATE = 'pr_open';
/** An agent gone within this many of its exit poll's periods after its control plane died with it. */
export const DIED_WITH_IT_PERIODS = 2;
/** `agent.exit`'s precision when the record does not say (the world's exit poll). */
const DEFAULT_EXIT_PRECISION_MS = 100;

export interface EdgeRequest {
  /** Arrival at the provider emulator. */
  t: number;
  dur: number;
  /** Arrival → first streamed token; null when none was streamed (an error, a reset). */
  ttftMs: number | null;
  tokensIn: number;
  tokensOut: number;
  /** `labels.spawn`: null for a client outside the launchers. */
  spawn: string | null;
  /** A request refused as bad (a 4xx other than 429): its status and error code (`404 not_found`); else null. */
  refusal: string | null;
}

/**
 * A request to the vendor's own endpoints (`labels.api: first-party`: Claude Code's settings and
 * policy at start), not a model request: kept apart, never counted with the model requests.
 */
export interface EdgeFirstParty {
  t: number;
  /** `data.path`. */
  path: string;
  /** `labels.spawn`: null without one. */
  spawn: string | null;
}

export interface EdgeSpawn {
  id: string;
  agent: string;
  /** The process's start. */
  t: number;
  pid: number | null;
  argv: string[];
  cwd: string | null;
  exitAt: number | null;
  exitPrecisionMs: number;
  /** The session of its last `agent.session`; null: the control plane's own. */
  session: string | null;
  how: string | null;
  /** Its model requests, by arrival. */
  requests: EdgeRequest[];
}

export interface EdgeSession {
  id: string;
  /** Its first `work.created`; null when the trace never said it was created. */
  createdAt: number | null;
  kind: string | null;
  repo: string | null;
  issue: number | null;
  title: string | null;
  doneState: string;
  /** The first `session.state` into its done state or a later one (closed counts only when it is the done state). */
  doneAt: number | null;
  /** The first `session.state` into `closed`. */
  closedAt: number | null;
  /** The state its last `session.state` moved it to; null when none did. */
  lastState: string | null;
  /** Its spawns, by start. */
  spawns: EdgeSpawn[];
}

export interface EdgeRestart {
  kind: string;
  killAt: number;
  readyAt: number | null;
  /**
   * When the old control plane was surely gone: the kill, except for a graceful restart, where it
   * drains first: the start of the next `controlplane.boot` (the new process was spawned once the
   * old one had exited), when there is one before ready.
   */
  goneAt: number;
}

/** A death of the control plane: a restart's, or one outside any restart (`controlplane.exited`). */
export interface EdgeDeath {
  cause: string;
  at: number;
  /** The restart it belongs to (index into `restarts`), or null for `controlplane.exited`. */
  restart: number | null;
  code: number | null;
  signal: string | null;
}

export interface EdgeBlocked {
  t: number;
  via: string;
  host: string;
  port: number | null;
  pid: number | null;
  argv: string[];
}

export interface EdgeWorld {
  mode: string | null;
  startedAt: number | null;
  stoppedAt: number | null;
  /** Σ `world.stopped` `data.blocked`: every refused attempt, recorded or coalesced; null without one. */
  blockedTotal: number | null;
  /**
   * Σ `world.stopped` `data.claimsRefused` and `data.spawnsRefused`: calls whose credential named
   * a spawn or a work command they did not come from, and spawn-list lines no launcher wrote.
   */
  claimsRefused: number;
  spawnsRefused: number;
  blocked: EdgeBlocked[];
  spawns: EdgeSpawn[];
  /** Sessions the traffic names (created, or an agent attributed to one), by creation then id. */
  sessions: EdgeSession[];
  /** Requests without a spawn label (outside the launchers), by arrival. */
  outside: EdgeRequest[];
  /** Requests whose spawn label names no `agent.spawn` in the trace. */
  unknownSpawnRequests: EdgeRequest[];
  /** Requests to the vendor's own endpoints, by arrival (not model requests). */
  firstParty: EdgeFirstParty[];
  restarts: EdgeRestart[];
  deaths: EdgeDeath[];
}

const str = (value: unknown): string | null =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null;
const num = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Whether a state is `done` or past it, for a session whose done state is `done`. */
export function reachesDone(state: string, done: string): boolean {
  if (state === done) return true;
  if (state === 'closed') return false;
  const at = SESSION_STATES.indexOf(state as (typeof SESSION_STATES)[number]);
  const target = SESSION_STATES.indexOf(done as (typeof SESSION_STATES)[number]);
  return at >= 0 && target >= 0 && at > target;
}

/** The edges of the trace, or undefined when it has none (no world, no command target). */
export function readEdges(records: readonly RetainedRecord[]): EdgeWorld | undefined {
  let marked = false;
  let mode: string | null = null;
  let startedAt: number | null = null;
  let stoppedAt: number | null = null;
  let blockedTotal: number | null = null;
  let claimsRefused = 0;
  let spawnsRefused = 0;
  const blocked: EdgeBlocked[] = [];
  const spawns = new Map<string, EdgeSpawn>();
  const exits = new Map<string, { t: number; precisionMs: number }>();
  const attributions = new Map<string, { session: string; how: string | null }>();
  const requests: EdgeRequest[] = [];
  const firstParty: EdgeFirstParty[] = [];
  const created = new Map<string, Omit<EdgeSession, 'spawns' | 'doneAt' | 'closedAt' | 'lastState'>>();
  const states: Array<{ t: number; session: string; to: string }> = [];
  const restarts: Array<Omit<EdgeRestart, 'goneAt'>> = [];
  const boots: number[] = [];
  const exited: EdgeDeath[] = [];
  let open: Omit<EdgeRestart, 'goneAt'> | undefined;

  for (const r of records) {
    if (WORLD_MARKS.has(r.name)) marked = true;
    const labels = r.labels ?? {};
    const data = (r.kind === 'gauge' ? undefined : r.data) ?? {};
    switch (r.name) {
      case 'world.started':
        if (r.kind !== 'event') break;
        mode = str(labels.mode);
        startedAt ??= r.t;
        break;
      case 'world.stopped':
        if (r.kind !== 'event') break;
        stoppedAt = r.t;
        if (num(data.blocked) !== null) blockedTotal = (blockedTotal ?? 0) + (num(data.blocked) as number);
        claimsRefused += num(data.claimsRefused) ?? 0;
        spawnsRefused += num(data.spawnsRefused) ?? 0;
        break;
      case 'world.blocked':
        if (r.kind !== 'event') break;
        blocked.push({
          t: r.t,
          via: str(labels.via) ?? 'unknown',
          host: str(labels.host) ?? 'unknown',
          port: num(labels.port),
          pid: num(data.pid),
          argv: Array.isArray(data.argv) ? data.argv.map(String) : [],
        });
        break;
      case 'agent.spawn': {
        if (r.kind !== 'event') break;
        const id = str(labels.spawn);
        if (id === null) break;
        spawns.set(id, {
          id,
          agent: str(labels.agent) ?? 'unknown',
          t: r.t,
          pid: num(data.pid),
          argv: Array.isArray(data.argv) ? data.argv.map(String) : [],
          cwd: str(data.cwd),
          exitAt: null,
          exitPrecisionMs: DEFAULT_EXIT_PRECISION_MS,
          session: null,
          how: null,
          requests: [],
        });
        break;
      }
      case 'agent.exit': {
        const id = str(labels.spawn);
        if (r.kind !== 'event' || id === null) break;
        exits.set(id, { t: r.t, precisionMs: num(data.precisionMs) ?? DEFAULT_EXIT_PRECISION_MS });
        break;
      }
      case 'agent.session': {
        const id = str(labels.spawn);
        const session = str(labels.session) ?? (r.kind === 'event' ? (r.session ?? null) : null);
        if (r.kind !== 'event' || id === null || session === null) break;
        // The last attribution of a spawn wins (a spawn first known by its cwd, then by its PR).
        attributions.set(id, { session, how: str(data.how) });
        break;
      }
      case 'provider.request': {
        if (r.kind !== 'span') break;
        if (labels.api === 'first-party') {
          firstParty.push({ t: r.t, path: str(data.path) ?? '(unknown)', spawn: str(labels.spawn) });
          break;
        }
        const ttft = num(data.ttftMs);
        const status = Number(labels.status);
        requests.push({
          t: r.t,
          dur: r.dur,
          ttftMs: ttft !== null && ttft >= 0 ? ttft : null,
          tokensIn: tokenCount(data.tokensIn),
          tokensOut: tokenCount(data.tokensOut),
          spawn: str(labels.spawn),
          // A 4xx other than 429: the request itself was refused (a 429, a 5xx are the provider's
          // limits and faults, which the provider section counts).
          refusal:
            status >= 400 && status < 500 && status !== 429
              ? `${status} ${str(data.error) ?? 'error'}`
              : null,
        });
        break;
      }
      case 'work.created': {
        if (r.kind !== 'event' || r.session === undefined || created.has(r.session)) break;
        created.set(r.session, {
          id: r.session,
          createdAt: r.t,
          kind: str(labels.kind),
          repo: str(labels.repo),
          issue: num(data.issue),
          title: str(data.title),
          doneState: str(data.done) ?? DEFAULT_DONE_STATE,
        });
        break;
      }
      case 'session.state': {
        const to = str(labels.to);
        if (r.kind !== 'event' || r.session === undefined || to === null) break;
        states.push({ t: r.t, session: r.session, to });
        break;
      }
      // Restarts as the speed finisher reads them: a kill, then the next ready.
      case 'controlplane.restart':
        if (r.kind !== 'event') break;
        if (open) restarts.push(open);
        open = { kind: str(labels.kind) ?? 'unknown', killAt: r.t, readyAt: null };
        break;
      case 'controlplane.ready':
        if (r.kind !== 'event' || !open) break;
        open.readyAt = r.t;
        restarts.push(open);
        open = undefined;
        break;
      case 'controlplane.boot':
        if (r.kind === 'span') boots.push(r.t);
        break;
      case 'controlplane.exited':
        if (r.kind !== 'event') break;
        exited.push({
          cause: 'exited',
          at: r.t,
          restart: null,
          code: num(data.code),
          signal: str(data.signal),
        });
        break;
    }
  }
  if (open) restarts.push(open);
  if (!marked) return undefined;

  for (const [id, exit] of exits) {
    const spawn = spawns.get(id);
    if (!spawn) continue;
    spawn.exitAt = exit.t;
    spawn.exitPrecisionMs = exit.precisionMs;
  }
  for (const [id, a] of attributions) {
    const spawn = spawns.get(id);
    if (!spawn) continue;
    spawn.session = a.session;
    spawn.how = a.how;
  }
  const outside: EdgeRequest[] = [];
  const unknownSpawnRequests: EdgeRequest[] = [];
  for (const request of requests) {
    if (request.spawn === null) outside.push(request);
    else {
      const spawn = spawns.get(request.spawn);
      if (spawn) spawn.requests.push(request);
      else unknownSpawnRequests.push(request);
    }
  }

  const sessions = new Map<string, EdgeSession>();
  const sessionOf = (id: string): EdgeSession => {
    let s = sessions.get(id);
    if (!s) {
      const c = created.get(id);
      s = {
        id,
        createdAt: c?.createdAt ?? null,
        kind: c?.kind ?? null,
        repo: c?.repo ?? null,
        issue: c?.issue ?? null,
        title: c?.title ?? null,
        doneState: c?.doneState ?? DEFAULT_DONE_STATE,
        doneAt: null,
        closedAt: null,
        lastState: null,
        spawns: [],
      };
      sessions.set(id, s);
    }
    return s;
  };
  for (const id of created.keys()) sessionOf(id);
  const spawnList = [...spawns.values()].sort((a, b) => a.t - b.t || cmp(a.id, b.id));
  for (const spawn of spawnList) if (spawn.session !== null) sessionOf(spawn.session).spawns.push(spawn);
  for (const s of states) {
    const session = sessions.get(s.session) ?? sessionOf(s.session);
    if (session.doneAt === null && reachesDone(s.to, session.doneState)) session.doneAt = s.t;
    if (session.closedAt === null && s.to === 'closed') session.closedAt = s.t;
    session.lastState = s.to;
  }

  const withGone: EdgeRestart[] = restarts.map((r) => {
    let goneAt = r.killAt;
    if (r.kind === 'graceful') {
      const boot = boots.find((b) => b >= r.killAt && (r.readyAt === null || b <= r.readyAt));
      if (boot !== undefined) goneAt = boot;
    }
    return { ...r, goneAt };
  });
  const deaths: EdgeDeath[] = [
    ...withGone.map((r, i) => ({ cause: r.kind, at: r.goneAt, restart: i, code: null, signal: null })),
    ...exited,
  ].sort((a, b) => a.at - b.at);

  return {
    mode,
    startedAt,
    stoppedAt,
    blockedTotal,
    claimsRefused,
    spawnsRefused,
    blocked,
    spawns: spawnList,
    sessions: [...sessions.values()].sort(
      (a, b) =>
        (a.createdAt ?? Number.POSITIVE_INFINITY) - (b.createdAt ?? Number.POSITIVE_INFINITY) ||
        cmp(a.id, b.id),
    ),
    outside,
    unknownSpawnRequests,
    firstParty,
    restarts: withGone,
    deaths,
  };
}

/** A request's tokens, in and out. */
export const tokensOf = (r: EdgeRequest): number => r.tokensIn + r.tokensOut;

/**
 * Whether a session was in progress at a kill: created before it (when the trace says), not done
 * nor closed by it, and an agent working on it had started before it. A session still waiting
 * for its first agent (a control plane that works one task after another) was not.
 */
export function inProgressAt(session: EdgeSession, killAt: number): boolean {
  if (session.createdAt !== null && session.createdAt >= killAt) return false;
  if (session.doneAt !== null && session.doneAt <= killAt) return false;
  if (session.closedAt !== null && session.closedAt <= killAt) return false;
  return session.spawns.some((s) => s.t < killAt);
}

/** Whether a spawn outlived a death of its control plane: started before it, gone later than it died with it. */
export function outlived(spawn: EdgeSpawn, diedAt: number): boolean {
  if (spawn.t >= diedAt) return false;
  return spawn.exitAt === null || spawn.exitAt > diedAt + DIED_WITH_IT_PERIODS * spawn.exitPrecisionMs;
}

/** The part of [from, to] inside restart outages (kill → ready), as the speed finisher removes it. */
export function outageWithin(restarts: readonly EdgeRestart[], from: number, to: number): number {
  let total = 0;
  for (const r of restarts) {
    if (r.readyAt === null) continue;
    const overlap = Math.min(to, r.readyAt) - Math.max(from, r.killAt);
    if (overlap > 0) total += overlap;
  }
  return total;
}
