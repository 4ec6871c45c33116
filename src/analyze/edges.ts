/**
 * A control plane measured from what crossed its world's edges (docs/analysis.md#edges-any-control-plane-from-its-traffic),
 * whatever it is: GitHub calls attributed to sessions or left as its own overhead, model requests
 * and tokens by session through the agent that made them, cost per completed task, per-hour
 * figures over the active window only, agents orphaned by a restart, work done again after one,
 * and the attempts the world refused. A finisher (finisher.ts) over the records of edges-model.ts
 * and the GitHub calls of accumulators/session-calls.ts; its speed samples go through the speed
 * finisher (edges-speed.ts). Its schema is edges-schema.ts: this file runs in analysis worker
 * threads, which load no zod.
 */
import type { CallTally } from './accumulators/session-calls.ts';
import { newTally, pointsByResource, SessionCalls } from './accumulators/session-calls.ts';
import type { EdgeRequest, EdgeRestart, EdgeSession, EdgeWorld } from './edges-model.ts';
import {
  DEFAULT_DONE_STATE,
  EDGE_RECORD_NAMES,
  inProgressAt,
  outlived,
  readEdges,
  tokensOf,
} from './edges-model.ts';
import type { EdgesAnalysis } from './edges-schema.ts';
import { edgeSpeed, firstOutput, firstRequestAt } from './edges-speed.ts';
import { cmp, HOUR_MS, round } from './figures.ts';
import type { Finisher, FinisherContext, RetainedRecord } from './finisher.ts';
import {
  MAX_BLOCKED_HOSTS,
  MAX_BLOCKED_PROCESSES,
  MAX_EDGE_ROWS,
  MAX_FIRST_PARTY_PATHS,
} from './schema-constants.ts';

type Tokens = EdgesAnalysis['attribution']['model']['sessions'];

const noCalls: CallTally = newTally();

function tokensOfAll(requests: readonly EdgeRequest[]): Tokens {
  const out = { requests: 0, tokensIn: 0, tokensOut: 0 };
  for (const r of requests) {
    out.requests++;
    out.tokensIn += r.tokensIn;
    out.tokensOut += r.tokensOut;
  }
  return out;
}

const total = (t: Tokens) => t.tokensIn + t.tokensOut;
const pct = (part: number, whole: number) => (whole > 0 ? round((100 * part) / whole) : null);
const at = (t: number | null) => (t === null ? null : round(t));
const sortedRecord = (map: ReadonlyMap<string, number>) =>
  Object.fromEntries([...map].sort(([a], [b]) => cmp(a, b)).map(([k, v]) => [k, round(v)]));

/** Nearest rank: p of n sorted values is the one at rank ⌈p/100 × n⌉ (docs/analysis.md#percentiles). */
function nearestRank(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function costFigure(own: number[], overhead: number): EdgesAnalysis['costPerTask']['calls'] {
  if (own.length === 0) return null;
  const sorted = [...own].sort((a, b) => a - b);
  const mean = own.reduce((a, b) => a + b, 0) / own.length;
  const overheadPerTask = overhead / own.length;
  return {
    mean: round(mean),
    p50: round(nearestRank(sorted, 50)),
    overheadPerTask: round(overheadPerTask),
    allIn: round(mean + overheadPerTask),
  };
}

export function computeEdges(
  world: EdgeWorld,
  calls: SessionCalls,
  context: Pick<FinisherContext, 'endMs'>,
): EdgesAnalysis {
  const notes: string[] = [];
  const tallyOf = (session: string) => calls.bySession.get(session) ?? noCalls;
  // Every session the traffic names: created, worked on by an agent, or named by GitHub calls.
  const sessions = new Map<string, EdgeSession>(world.sessions.map((s) => [s.id, s]));
  for (const id of [...calls.bySession.keys()].sort(cmp)) {
    if (sessions.has(id)) continue;
    sessions.set(id, {
      id,
      createdAt: null,
      kind: null,
      repo: null,
      issue: null,
      title: null,
      doneState: DEFAULT_DONE_STATE,
      doneAt: null,
      closedAt: null,
      lastState: null,
      spawns: [],
    });
  }
  const sessionList = [...sessions.values()];
  const sessionRequests = (s: EdgeSession) => s.spawns.flatMap((spawn) => spawn.requests);

  // ── Attribution ──
  let attributedCalls = 0;
  let attributedPoints = 0;
  let attributedWrites = 0;
  for (const tally of calls.bySession.values()) {
    attributedCalls += tally.calls;
    attributedPoints += tally.points;
    attributedWrites += tally.writes;
  }
  const overhead = calls.unattributed;
  const ofSessions = tokensOfAll(world.spawns.filter((s) => s.session !== null).flatMap((s) => s.requests));
  const ofControlPlane = tokensOfAll(
    world.spawns.filter((s) => s.session === null).flatMap((s) => s.requests),
  );
  const outside = tokensOfAll(world.outside);
  const unidentified = tokensOfAll(world.unknownSpawnRequests);
  const requests = ofSessions.requests + ofControlPlane.requests + outside.requests + unidentified.requests;
  const refused = refusalsOf([
    ...world.spawns.flatMap((s) => s.requests),
    ...world.outside,
    ...world.unknownSpawnRequests,
  ]);
  if (unidentified.requests > 0)
    notes.push(
      `${unidentified.requests} model request(s) carry a spawn label no agent.spawn of the trace has: counted as unidentified, neither a session's nor the control plane's`,
    );

  // ── Per session ──
  const completed = sessionList.filter((s) => s.doneAt !== null);
  const rows = sessionList.slice(0, MAX_EDGE_ROWS).map((s) => {
    const tally = tallyOf(s.id);
    return {
      session: s.id,
      kind: s.kind,
      repo: s.repo,
      issue: s.issue,
      createdAtMs: at(s.createdAt),
      doneAtMs: at(s.doneAt),
      closedAtMs: at(s.closedAt),
      firstOutputAtMs: at(firstOutput(s)?.at ?? null),
      github: {
        calls: tally.calls,
        points: round(tally.points),
        pointsByResource: sortedRecord(pointsByResource(tally)),
        writes: tally.writes,
      },
      model: tokensOfAll(sessionRequests(s)),
      spawns: s.spawns.length,
    };
  });

  // ── Cost per task: completed sessions, the control plane's overhead shared over them ──
  const overheadTokens = total(ofControlPlane) + total(outside) + total(unidentified);
  const costPerTask = {
    completed: completed.length,
    calls: costFigure(
      completed.map((s) => tallyOf(s.id).calls),
      overhead.calls,
    ),
    points: costFigure(
      completed.map((s) => tallyOf(s.id).points),
      overhead.points,
    ),
    tokens: costFigure(
      completed.map((s) => sessionRequests(s).reduce((n, r) => n + tokensOf(r), 0)),
      overheadTokens,
    ),
  };
  if (world.sessions.every((s) => s.createdAt === null))
    notes.push(
      'no work.created in the trace: no active window, and sessions are only those its calls and agents name',
    );

  const speed = edgeSpeed(world, context.endMs);
  return {
    world: { mode: world.mode, startedAtMs: at(world.startedAt), stoppedAtMs: at(world.stoppedAt) },
    attribution: {
      github: {
        calls: attributedCalls + overhead.calls,
        attributed: attributedCalls,
        overhead: overhead.calls,
        attributedPct: pct(attributedCalls, attributedCalls + overhead.calls),
        points: round(attributedPoints + overhead.points),
        attributedPoints: round(attributedPoints),
        overheadPoints: round(overhead.points),
        writes: attributedWrites + overhead.writes,
        overheadWrites: overhead.writes,
        handover: {
          calls: calls.handover.calls,
          points: round(calls.handover.points),
          writes: calls.handover.writes,
        },
        ...(calls.unserved.size > 0
          ? {
              unserved: {
                calls: [...calls.unserved.values()].reduce((a, b) => a + b, 0),
                byPath: sortedRecord(calls.unserved),
              },
            }
          : {}),
      },
      model: {
        requests,
        sessions: ofSessions,
        controlPlane: ofControlPlane,
        outside,
        unidentified,
        attributedPct: pct(ofSessions.requests, requests),
        ...(refused ? { refused } : {}),
      },
      ...(world.claimsRefused > 0 || world.spawnsRefused > 0
        ? { refusedClaims: { calls: world.claimsRefused, spawns: world.spawnsRefused } }
        : {}),
      firstParty: firstPartySection(world),
    },
    sessions: {
      count: sessionList.length,
      created: sessionList.filter((s) => s.createdAt !== null).length,
      completed: completed.length,
      ...reachedOf(sessionList),
      list: rows,
      leftOut: sessionList.length - rows.length,
    },
    spawns: spawnSection(world),
    firstActivity: speed.sessions,
    costPerTask,
    activeWindow: activeWindow(world, sessionList, calls),
    orphans: orphanSection(world, context.endMs),
    duplicated: duplicatedSection(world, calls),
    blocked: blockedSection(world),
    controlPlane: {
      restarts: world.restarts.length,
      exited: world.deaths
        .filter((d) => d.restart === null)
        .map((d) => ({ atMs: round(d.at), code: d.code, signal: d.signal })),
    },
    notes,
  };
}

/**
 * Requests to the vendor's own endpoints (Claude Code's settings and policy at start): counted
 * apart from the model requests, by whether an agent of the launchers made them, and by path.
 */
function firstPartySection(world: EdgeWorld): EdgesAnalysis['attribution']['firstParty'] {
  const byPath = new Map<string, number>();
  let agents = 0;
  for (const r of world.firstParty) {
    if (r.spawn !== null) agents++;
    const path = byPath.has(r.path) || byPath.size < MAX_FIRST_PARTY_PATHS ? r.path : '(other)';
    byPath.set(path, (byPath.get(path) ?? 0) + 1);
  }
  return {
    requests: world.firstParty.length,
    agents,
    outside: world.firstParty.length - agents,
    byPath: sortedRecord(byPath),
  };
}

function spawnSection(world: EdgeWorld): EdgesAnalysis['spawns'] {
  const spawns = world.spawns;
  const firstPartyOf = new Map<string, number>();
  for (const r of world.firstParty)
    if (r.spawn !== null) firstPartyOf.set(r.spawn, (firstPartyOf.get(r.spawn) ?? 0) + 1);
  const list = spawns.slice(0, MAX_EDGE_ROWS).map((s) => {
    const first = firstRequestAt(s);
    return {
      spawn: s.id,
      agent: s.agent,
      session: s.session,
      how: s.how,
      pid: s.pid,
      cwd: s.cwd,
      command: s.argv.join(' ').slice(0, 300),
      startedAtMs: round(s.t),
      firstRequestAtMs: at(first),
      bootMs: first === null ? null : round(Math.max(0, first - s.t)),
      exitedAtMs: at(s.exitAt),
      model: tokensOfAll(s.requests),
      firstParty: firstPartyOf.get(s.id) ?? 0,
    };
  });
  const ofSessions = spawns.filter((s) => s.session !== null).length;
  return {
    count: spawns.length,
    ofSessions,
    ofControlPlane: spawns.length - ofSessions,
    list,
    leftOut: spawns.length - list.length,
  };
}

/**
 * From the first `work.created` to the last attributed activity: a session's GitHub call ending,
 * a request of a session's agent ending, a session reaching its done state. Counted by whole
 * seconds of run time (the calls and points accumulate per second): every call, point and token
 * whose second is inside, whoever made it.
 */
function activeWindow(
  world: EdgeWorld,
  sessions: readonly EdgeSession[],
  calls: SessionCalls,
): EdgesAnalysis['activeWindow'] {
  const created = sessions.map((s) => s.createdAt).filter((t): t is number => t !== null);
  if (created.length === 0) return null;
  const startMs = Math.min(...created);
  let endMs = startMs;
  for (const s of sessions) {
    const tally = calls.bySession.get(s.id);
    if (tally && tally.lastEnd > endMs) endMs = tally.lastEnd;
    if (s.doneAt !== null && s.doneAt > endMs) endMs = s.doneAt;
    for (const spawn of s.spawns)
      for (const r of spawn.requests) if (r.t + r.dur > endMs) endMs = r.t + r.dur;
  }
  const first = Math.max(0, Math.floor(startMs / 1000));
  const last = Math.max(first, Math.floor(endMs / 1000));
  const seconds = last - first + 1;
  const inWindow = (t: number) => {
    const second = Math.max(0, Math.floor(t / 1000));
    return second >= first && second <= last;
  };
  let tokens = 0;
  const all = [...world.spawns.flatMap((s) => s.requests), ...world.outside, ...world.unknownSpawnRequests];
  for (const r of all) if (inWindow(r.t)) tokens += tokensOf(r);
  const windowCalls = calls.callsPerSecond.sum(first, last);
  const points = calls.pointsPerSecond.sum(first, last);
  const hours = (seconds * 1000) / HOUR_MS;
  return {
    startMs: round(startMs),
    endMs: round(endMs),
    seconds,
    calls: windowCalls,
    points: round(points),
    tokens,
    callsPerHour: round(windowCalls / hours),
    pointsPerHour: round(points / hours),
    tokensPerHour: round(tokens / hours),
  };
}

/**
 * Agents alive when their control plane died (each restart, each `controlplane.exited`), counted
 * once, at the first death they outlived.
 */
function orphanSection(world: EdgeWorld, endMs: number): EdgesAnalysis['orphans'] {
  const counted = new Set<string>();
  const list: EdgesAnalysis['orphans']['list'] = [];
  let tokensAfter = 0;
  let longest: number | null = null;
  let n = 0;
  for (const death of world.deaths) {
    const killAt = death.restart === null ? death.at : world.restarts[death.restart]!.killAt;
    for (const spawn of world.spawns) {
      if (counted.has(spawn.id) || !outlived(spawn, death.at)) continue;
      counted.add(spawn.id);
      n++;
      const after = spawn.requests.filter((r) => r.t >= death.at);
      const tokens = after.reduce((sum, r) => sum + tokensOf(r), 0);
      const ranAfter = Math.max(0, (spawn.exitAt ?? endMs) - death.at);
      tokensAfter += tokens;
      longest = longest === null ? ranAfter : Math.max(longest, ranAfter);
      if (list.length >= MAX_EDGE_ROWS) continue;
      list.push({
        spawn: spawn.id,
        agent: spawn.agent,
        session: spawn.session,
        cause: death.cause,
        killAtMs: round(killAt),
        goneAtMs: round(death.at),
        startedAtMs: round(spawn.t),
        exitedAtMs: at(spawn.exitAt),
        open: spawn.exitAt === null,
        ranAfterMs: round(ranAfter),
        requestsAfter: after.length,
        tokensAfter: tokens,
      });
    }
  }
  return { count: n, ranAfterMs: at(longest), tokensAfter, list };
}

/** How many of `times` fall in [from, to). */
const timesIn = (times: readonly number[], from: number, to: number) =>
  times.reduce((n, t) => (t >= from && t < to ? n + 1 : n), 0);

/**
 * Per restart, the sessions in progress at its kill: the tokens of their cut agents (started
 * before the kill, after the previous one) when the session got a new agent once the old process
 * was gone, and the writes from then (until the next kill) whose method and route (a mutation's operation) it had
 * made before the kill.
 */
function duplicatedSection(world: EdgeWorld, calls: SessionCalls): EdgesAnalysis['duplicated'] {
  let tokens = 0;
  let writes = 0;
  const restarts = world.restarts.map((restart: EdgeRestart, i: number) => {
    const previousKill = i > 0 ? world.restarts[i - 1]!.killAt : Number.NEGATIVE_INFINITY;
    const nextKill = world.restarts[i + 1]?.killAt ?? Number.POSITIVE_INFINITY;
    const ready = restart.readyAt;
    const sessions: EdgesAnalysis['duplicated']['restarts'][number]['sessions'] = [];
    for (const session of world.sessions) {
      if (!inProgressAt(session, restart.killAt)) continue;
      const cut = session.spawns.filter((s) => s.t >= previousKill && s.t < restart.killAt);
      // The new process's work from its start, not from ready: it may be at work before ready is
      // seen (a log line read late, `ready: {delay}`).
      const fresh =
        ready === null ? undefined : session.spawns.find((s) => s.t >= restart.goneAt && s.t < nextKill);
      let before = 0;
      let after = 0;
      for (const spawn of cut)
        for (const r of spawn.requests) {
          if (r.t < restart.killAt) before += tokensOf(r);
          else after += tokensOf(r);
        }
      const again: Array<{ write: string; count: number }> = [];
      const tally = calls.bySession.get(session.id);
      if (tally && ready !== null) {
        for (const [write, times] of [...tally.writeTimes].sort(([a], [b]) => cmp(a, b))) {
          if (!times.some((t) => t < restart.killAt)) continue;
          const n = timesIn(times, restart.goneAt, nextKill);
          if (n > 0) again.push({ write, count: n });
        }
      }
      const spentAgain = fresh ? before + after : 0;
      const writesAgain = again.reduce((n, w) => n + w.count, 0);
      tokens += spentAgain;
      writes += writesAgain;
      sessions.push({
        session: session.id,
        cutSpawns: cut.map((s) => s.id),
        newSpawn: fresh?.id ?? null,
        tokensBeforeKill: before,
        tokensAfterKill: after,
        tokens: spentAgain,
        writes: writesAgain,
        writesAgain: again,
      });
    }
    return {
      kind: restart.kind,
      killAtMs: round(restart.killAt),
      readyAtMs: at(ready),
      sessions,
    };
  });
  return { tokens, writes, restarts };
}

function blockedSection(world: EdgeWorld): EdgesAnalysis['blocked'] {
  const groups = new Map<
    string,
    {
      via: string;
      host: string;
      ports: Set<number>;
      attempts: number;
      processes: Set<string>;
      first: number;
      last: number;
    }
  >();
  for (const b of world.blocked) {
    const key = `${b.via}\u0000${b.host}`;
    let g = groups.get(key);
    if (!g) {
      g = {
        via: b.via,
        host: b.host,
        ports: new Set(),
        attempts: 0,
        processes: new Set(),
        first: b.t,
        last: b.t,
      };
      groups.set(key, g);
    }
    g.attempts++;
    if (b.port !== null) g.ports.add(b.port);
    const process =
      b.argv.length > 0 ? b.argv.join(' ').slice(0, 200) : b.pid === null ? '(unknown)' : `pid ${b.pid}`;
    if (g.processes.size < MAX_BLOCKED_PROCESSES) g.processes.add(process);
    g.first = Math.min(g.first, b.t);
    g.last = Math.max(g.last, b.t);
  }
  const byHost = [...groups.values()]
    .sort((a, b) => b.attempts - a.attempts || cmp(a.host, b.host) || cmp(a.via, b.via))
    .slice(0, MAX_BLOCKED_HOSTS)
    .map((g) => ({
      via: g.via,
      host: g.host,
      ports: [...g.ports].sort((a, b) => a - b),
      attempts: g.attempts,
      processes: [...g.processes].sort(cmp),
      firstAtMs: round(g.first),
      lastAtMs: round(g.last),
    }));
  return {
    attempts: Math.max(world.blockedTotal ?? 0, world.blocked.length),
    recorded: world.blocked.length,
    byHost,
  };
}

/** Sessions by the last state they reached, as `{reached}`; nothing when no session moved. */
function reachedOf(sessions: readonly EdgeSession[]): { reached?: Record<string, number> } {
  const counts = new Map<string, number>();
  for (const s of sessions)
    if (s.lastState !== null) counts.set(s.lastState, (counts.get(s.lastState) ?? 0) + 1);
  if (counts.size === 0) return {};
  return { reached: Object.fromEntries([...counts].sort((a, b) => cmp(a[0], b[0]))) };
}

/** Refused model requests by status and error code, the commonest first; undefined when none was refused. */
function refusalsOf(requests: readonly EdgeRequest[]): Record<string, number> | undefined {
  const counts = new Map<string, number>();
  for (const r of requests) if (r.refusal !== null) counts.set(r.refusal, (counts.get(r.refusal) ?? 0) + 1);
  if (counts.size === 0) return undefined;
  return Object.fromEntries([...counts].sort((a, b) => b[1] - a[1] || cmp(a[0], b[0])));
}

/** ` (where they got to: 3 merged)`, or nothing when no session moved. */
function reachedText(reached: Record<string, number> | undefined): string {
  if (reached === undefined) return '';
  return ` (where they got to: ${Object.entries(reached)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ')})`;
}

/**
 * What a run of a control plane measured from its edges must say beside its verdict (the
 * analysis' warnings, docs/command-target.md "When nothing was done"): work was given and none of
 * it was done, so its cost per task and time to done are not measured and a budget on the
 * GitHub traffic alone may pass a control plane that did nothing; the provider emulator
 * refused model requests (a model it does not serve is the usual reason); or the control plane
 * called GitHub paths the emulator serves no route for.
 */
export function edgesWarnings(e: EdgesAnalysis): string[] {
  const warnings: string[] = [];
  if (e.sessions.created > 0 && e.sessions.completed === 0)
    warnings.push(
      `no piece of work was done: ${e.sessions.created} given, none reached its done state by the run's end${reachedText(e.sessions.reached)}, so cost per task and time to done are not measured (the control plane's command.log may say why; a done state its work never reaches, such as done: closed for work whose pull requests are merged: docs/command-target.md)`,
    );
  const refused = e.attribution.model.refused;
  if (refused) {
    const total = Object.values(refused).reduce((a, b) => a + b, 0);
    const reasons = Object.entries(refused)
      .map(([reason, n]) => `${n} × ${reason}`)
      .join(', ');
    const hint = Object.keys(refused).some((r) => r.startsWith('404 '))
      ? ' (a 404 is a model the emulator does not serve: docs/provider-emulator.md#models)'
      : '';
    warnings.push(
      `${total} of ${e.attribution.model.requests} model requests were refused by the provider emulator: ${reasons}${hint}`,
    );
  }
  const unserved = e.attribution.github.unserved;
  if (unserved) {
    const paths = Object.entries(unserved.byPath)
      .slice(0, 5)
      .map(([path, n]) => `${path} × ${n}`)
      .join(', ');
    const more = Object.keys(unserved.byPath).length > 5 ? ', …' : '';
    warnings.push(
      `${unserved.calls} GitHub call(s) to paths the emulator serves no route for (answered 404) or GraphQL fields its schema lacks: ${paths}${more}. Where GitHub serves them, the control plane did not run here as it runs there (docs/github-emulator.md lists what is served)`,
    );
  }
  const claims = e.attribution.refusedClaims;
  if (claims && claims.calls > 0)
    warnings.push(
      `${claims.calls} call(s) named a credential (a spawn's, or a work command's) the process that made them was not given; they are counted as the control plane's own (docs/world.md, "Whose call it is")`,
    );
  if (claims && claims.spawns > 0)
    warnings.push(
      `${claims.spawns} line(s) of the world's spawn list named a process that was neither a launcher nor an agent CLI; they are not spawns (docs/world.md, "Whose call it is")`,
    );
  return warnings;
}

export const edgesFinisher: Finisher = {
  key: 'edges',
  retains: (name: string) => EDGE_RECORD_NAMES.has(name),
  finish(records: readonly RetainedRecord[], context: FinisherContext): EdgesAnalysis | undefined {
    const world = readEdges(records);
    if (!world) return undefined;
    return computeEdges(world, context.calls ?? new SessionCalls(), context);
  },
};
