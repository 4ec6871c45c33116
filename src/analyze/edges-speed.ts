/**
 * Speed measured from a world's edges (docs/analysis.md#speed-from-the-traffic), for a control
 * plane fleetbench knows only by its traffic: the samples go into the speed metrics the built-in
 * budgets judge (the speed finisher, speed.ts, adds them to its groups), with the agent's CLI as
 * `adapter`, `start: unknown` (judged by the looser of the cold and warm budgets) and the restart's
 * `kind`:
 *
 * - time_to_first_activity: `work.created` → the first streamed model output (arrival + ttftMs)
 *   of an agent working on the session; left out (interrupted) when the control plane was
 *   killed or died in between.
 * - agent_boot: `agent.spawn` (the process's start) → that spawn's first `provider.request`.
 * - restart_recovery: `controlplane.ready` → the first model request of an agent spawned after
 *   ready on a session in progress at the kill (edges-model.ts `inProgressAt`);
 *   restart_recovery_control_plane: ready → that agent's spawn; restart_provider_load: the rest
 *   (spawn → first request). Outages (kill → ready) are removed from all three, and a session
 *   still recovering at the next kill stays one sample, as the speed finisher does for runs.
 *
 * No zod: worker threads load this file.
 */
import type { EdgeSession, EdgeSpawn, EdgeWorld } from './edges-model.ts';
import { inProgressAt, outageWithin } from './edges-model.ts';
import type { SpeedAnalysis } from './schema.ts';

export interface EdgeSample {
  labels: Record<string, string>;
  value: number;
}

type RecoveryRow = SpeedAnalysis['recoveries'][number];
type UnrecoveredRow = SpeedAnalysis['unrecovered'][number];
type RecoveryCount = SpeedAnalysis['recoveryCounts'][number];

export interface EdgeSpeed {
  firstActivity: EdgeSample[];
  agentBoot: EdgeSample[];
  recovery: EdgeSample[];
  recoveryControlPlane: EdgeSample[];
  recoveryProvider: EdgeSample[];
  recoveries: RecoveryRow[];
  unrecovered: UnrecoveredRow[];
  recoveryCounts: RecoveryCount[];
  /** The same counts by the restart that cut the sessions (its kill time): `restarts[].runs`. */
  restartRuns: Map<number, Omit<RecoveryCount, 'adapter' | 'kind'>>;
  /** Sessions created (`work.created`), and what became of their first activity. */
  sessions: { created: number; withActivity: number; interrupted: number; noActivity: number };
  notes: string[];
}

/** The start kind a command target's agents are measured with: fleetbench cannot tell cold from warm. */
export const EDGE_START = 'unknown';

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** A session's first streamed model output after its work was created: when, and which spawn. */
export function firstOutput(session: EdgeSession): { at: number; spawn: EdgeSpawn } | null {
  if (session.createdAt === null) return null;
  let best: { at: number; spawn: EdgeSpawn } | null = null;
  for (const spawn of session.spawns) {
    for (const r of spawn.requests) {
      if (r.ttftMs === null) continue;
      const at = r.t + r.ttftMs;
      if (at >= session.createdAt && (best === null || at < best.at)) best = { at, spawn };
    }
  }
  return best;
}

/** A spawn's first model request: its arrival, or null for an agent that never asked. */
export function firstRequestAt(spawn: EdgeSpawn): number | null {
  return spawn.requests[0]?.t ?? null;
}

/** The earliest first request of the session's agents spawned at or after `from`. */
function firstRequestAfter(session: EdgeSession, from: number): { at: number; spawn: EdgeSpawn } | null {
  let best: { at: number; spawn: EdgeSpawn } | null = null;
  for (const spawn of session.spawns) {
    if (spawn.t < from) continue;
    const at = firstRequestAt(spawn);
    if (at !== null && (best === null || at < best.at || (at === best.at && spawn.t < best.spawn.t)))
      best = { at, spawn };
  }
  return best;
}

/** Whether the edges measured any speed at all (a world whose command started no agent and created no work did not). */
export function measuredSpeed(e: EdgeSpeed): boolean {
  return e.agentBoot.length > 0 || e.sessions.created > 0 || e.recoveryCounts.length > 0;
}

export function edgeSpeed(world: EdgeWorld, endMs: number): EdgeSpeed {
  const out: EdgeSpeed = {
    firstActivity: [],
    agentBoot: [],
    recovery: [],
    recoveryControlPlane: [],
    recoveryProvider: [],
    recoveries: [],
    unrecovered: [],
    recoveryCounts: [],
    restartRuns: new Map(),
    sessions: { created: 0, withActivity: 0, interrupted: 0, noActivity: 0 },
    notes: [],
  };
  const diedBetween = (from: number, to: number) =>
    world.restarts.some((r) => r.killAt > from && r.killAt < to) ||
    world.deaths.some((d) => d.restart === null && d.at > from && d.at < to);

  for (const session of world.sessions) {
    if (session.createdAt === null) continue;
    out.sessions.created++;
    const first = firstOutput(session);
    if (first === null) out.sessions.noActivity++;
    else if (diedBetween(session.createdAt, first.at)) out.sessions.interrupted++;
    else {
      out.sessions.withActivity++;
      out.firstActivity.push({
        labels: { adapter: first.spawn.agent, start: EDGE_START },
        value: round3(first.at - session.createdAt),
      });
    }
  }

  for (const spawn of world.spawns) {
    const at = firstRequestAt(spawn);
    // The process's start is read from /proc to the clock tick: a request can look earlier by less.
    if (at !== null)
      out.agentBoot.push({
        labels: { adapter: spawn.agent, start: EDGE_START },
        value: round3(Math.max(0, at - spawn.t)),
      });
  }

  const counts = new Map<string, RecoveryCount>();
  const count = (adapter: string, kind: string, killAt: number): Tally => {
    const key = `${adapter}\u0000${kind}`;
    let c = counts.get(key);
    if (!c) {
      c = { adapter, kind, cut: 0, recovered: 0, finished: 0, unrecovered: 0, open: 0 };
      counts.set(key, c);
    }
    let own = out.restartRuns.get(killAt);
    if (!own) {
      own = { cut: 0, recovered: 0, finished: 0, unrecovered: 0, open: 0 };
      out.restartRuns.set(killAt, own);
    }
    return new Tally([c, own]);
  };
  for (const session of world.sessions) recoverSession(world, session, endMs, out, count);
  out.recoveryCounts = [...counts.values()].sort((a, b) =>
    a.adapter === b.adapter ? (a.kind < b.kind ? -1 : 1) : a.adapter < b.adapter ? -1 : 1,
  );
  if (out.sessions.interrupted > 0)
    out.notes.push(
      `${out.sessions.interrupted} session${out.sessions.interrupted === 1 ? '' : 's'} had a restart before ${out.sessions.interrupted === 1 ? 'its' : 'their'} first model output: left out of time_to_first_activity (the wait is a recovery)`,
    );
  return out;
}

type Counts = Omit<RecoveryCount, 'adapter' | 'kind'>;

/** A cut session counted by adapter and kind and by its restart at once. */
class Tally {
  constructor(private readonly into: readonly Counts[]) {}
  bump(field: keyof Counts): void {
    for (const c of this.into) c[field]++;
  }
}

/** Every restart that found the session in progress: a recovery sample, finished, or not recovered. */
function recoverSession(
  world: EdgeWorld,
  session: EdgeSession,
  endMs: number,
  out: EdgeSpeed,
  count: (adapter: string, kind: string, killAt: number) => Tally,
): void {
  let coveredUntil = Number.NEGATIVE_INFINITY;
  for (const restart of world.restarts) {
    // A session still recovering from an earlier restart: that sample goes on through this one.
    if (restart.killAt < coveredUntil || !inProgressAt(session, restart.killAt)) continue;
    const cut = session.spawns.filter((s) => s.t < restart.killAt);
    const cutSpawn = cut[cut.length - 1]!;
    const ready = restart.readyAt;
    // Its new agent may start before ready is seen (a log line read late, `ready: {delay}`): any
    // agent started once the old process was gone is the new one's; the time still counts from
    // ready (0 for what came before it).
    const next = ready === null ? null : firstRequestAfter(session, restart.goneAt);
    const adapter = next?.spawn.agent ?? cutSpawn.agent;
    const tally = count(adapter, restart.kind, restart.killAt);
    tally.bump('cut');
    if (ready === null || next === null) {
      coveredUntil = Number.POSITIVE_INFINITY;
      // Done after the kill with no new agent: its agent finished the work, nothing to recover.
      if (session.doneAt !== null && session.doneAt > restart.killAt) {
        tally.bump('finished');
        continue;
      }
      tally.bump('unrecovered');
      const open = session.closedAt === null;
      if (open) tally.bump('open');
      out.unrecovered.push({
        session: session.id,
        run: cutSpawn.id,
        adapter,
        kind: restart.kind,
        readyAtMs: ready === null ? null : round3(ready),
        killAtMs: round3(restart.killAt),
        status: open ? 'running' : 'closed',
        errorCode: null,
        open,
        atLeastMs:
          open && ready !== null
            ? round3(Math.max(0, endMs - ready - outageWithin(world.restarts, ready, endMs)))
            : null,
        lostAtMs: null,
      });
      continue;
    }
    tally.bump('recovered');
    coveredUntil = next.at;
    const removed = outageWithin(world.restarts, ready, next.at);
    const full = Math.max(0, next.at - ready - removed);
    const controlPlane = Math.min(
      full,
      Math.max(0, next.spawn.t - ready - outageWithin(world.restarts, ready, next.spawn.t)),
    );
    const provider = full - controlPlane;
    const labels = { adapter, kind: restart.kind };
    out.recovery.push({ labels, value: round3(full) });
    out.recoveryControlPlane.push({ labels, value: round3(controlPlane) });
    out.recoveryProvider.push({ labels, value: round3(provider) });
    out.recoveries.push({
      session: session.id,
      run: next.spawn.id,
      adapter,
      kind: restart.kind,
      readyAtMs: round3(ready),
      eventAtMs: round3(next.at),
      eventType: 'provider.request',
      fullMs: round3(full),
      controlPlaneMs: round3(controlPlane),
      providerLoadMs: round3(provider),
      loadStartMs: round3(next.spawn.t),
      outageRemovedMs: round3(removed),
      absorbedRestarts: world.restarts.filter(
        (r) => r.readyAt !== null && r.killAt > ready && r.killAt < next.at,
      ).length,
      killAtMs: round3(restart.killAt),
      lostAtMs: null,
      retryFromAtMs: null,
      retryAtMs: null,
      retryDueAtMs: null,
    });
  }
}
