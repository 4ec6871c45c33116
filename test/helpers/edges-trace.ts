/**
 * Records as a world and the command target write them (docs/trace-format.md#world-and-command-target-records),
 * field for field: `agent.spawn` as src/world/spawns.ts writes it, `provider.request` as the
 * provider emulator does for an agent behind a launcher (labels spawn and agent), `world.*` as
 * src/world/world.ts does, and the command target's lifecycle records. For hand-written traces
 * of what a real world cannot be made to do on demand (restarts, orphans, work done again).
 */
import { writeFileSync } from 'node:fs';
import type { ApiRecord, BodyRecord } from '../../src/trace/schema.ts';

type Labels = Record<string, string | number>;

const event = (t: number, name: string, labels?: Labels, data?: Record<string, unknown>, session?: string) =>
  ({
    kind: 'event',
    name,
    t,
    ...(session === undefined ? {} : { session }),
    ...(labels ? { labels } : {}),
    ...(data ? { data } : {}),
  }) as BodyRecord;

export const worldStarted = (t: number, mode = 'sandbox') =>
  event(
    t,
    'world.started',
    { mode },
    { hosts: {}, github: 'http://127.0.0.1:1', provider: 'http://127.0.0.1:2' },
  );

export const worldStopped = (t: number, blocked: number, spawns: number) =>
  event(t, 'world.stopped', { mode: 'sandbox' }, { blocked, blockedWritten: blocked, spawns });

export const blocked = (
  t: number,
  via: 'dns' | 'tcp' | 'connect' | 'http',
  host: string,
  argv: string[],
  port?: number,
) => event(t, 'world.blocked', { via, host, ...(port === undefined ? {} : { port }) }, { pid: 4242, argv });

export const spawned = (t: number, spawn: string, agent: string, cwd = `/work/${spawn}`) =>
  event(
    t,
    'agent.spawn',
    { agent, spawn },
    { pid: 1000 + Number(spawn.slice(1)), innerPid: 20, ppid: 999, argv: [agent, 'exec', 'do it'], cwd },
  );

export const exited = (t: number, spawn: string, agent: string, startedAt: number) =>
  event(t, 'agent.exit', { agent, spawn }, { ranMs: t - startedAt, precisionMs: 100 });

export const attributed = (t: number, spawn: string, session: string, how = 'cwd') =>
  event(t, 'agent.session', { spawn, session }, { how });

/** One model request: arrival t, first token ttftMs after it (null: none streamed). */
export const request = (
  t: number,
  spawn: { id: string; agent: string } | null,
  tokensIn: number,
  tokensOut: number,
  ttftMs: number | null = 100,
  dur = 300,
): BodyRecord => ({
  kind: 'span',
  name: 'provider.request',
  t,
  dur,
  // The CLI's own session id, never a GitHub session: attribution goes through the spawn.
  session: `cli-${spawn?.id ?? 'sdk'}`,
  outcome: ttftMs === null ? 'error' : 'ok',
  labels: {
    ...(spawn ? { spawn: spawn.id, agent: spawn.agent } : {}),
    api: 'responses',
    cli: spawn?.agent ?? 'other',
    status: ttftMs === null ? '500' : '200',
  },
  data: {
    requestId: `req_${t}`,
    bytesIn: 1000,
    tokensIn,
    ...(ttftMs === null ? {} : { tokensOut, ttftMs }),
    reply: 'text',
    attempt: 1,
    outcome: 'complete',
  },
});

export const workCreated = (t: number, session: string, issue: number, done?: string) =>
  event(
    t,
    'work.created',
    { kind: 'issue', repo: 'fleetbench/repo-1' },
    { issue, title: `task ${issue}`, ...(done ? { done } : {}) },
    session,
  );

export const state = (t: number, session: string, from: string, to: string) =>
  event(t, 'session.state', { from, to }, undefined, session);

export const restarted = (t: number, kind: 'hard' | 'graceful') => event(t, 'controlplane.restart', { kind });
export const ready = (t: number, reason: string) => event(t, 'controlplane.ready', { reason });
export const boot = (t: number, dur: number, reason: string): BodyRecord => ({
  kind: 'span',
  name: 'controlplane.boot',
  t,
  dur,
  outcome: 'ok',
  labels: { reason },
});
export const cpExited = (t: number, code: number | null, signal: string | null) =>
  event(t, 'controlplane.exited', undefined, { code, signal });

/** A GitHub call as the emulator records it (`session` when it was attributed). */
export function call(
  t: number,
  method: string,
  route: string,
  session?: string,
  resource: 'core' | 'graphql' = 'core',
): ApiRecord {
  return {
    kind: 'api',
    t,
    dur: 10,
    service: 'github',
    protocol: resource === 'graphql' ? 'graphql' : 'rest',
    method,
    route,
    status: method === 'POST' ? 201 : 200,
    conditional: false,
    notModified: false,
    resource,
    cost: 1,
    secondaryCost: method === 'GET' ? 1 : 5,
    repo: 'fleetbench/repo-1',
    ...(session === undefined ? {} : { session }),
  };
}

/** A trace file: the world's header, the records in the order given, the footer. */
export function writeTrace(path: string, records: readonly BodyRecord[]): string {
  const header = {
    kind: 'run',
    format: 'fleetbench-trace/1',
    runId: 'edges-test',
    tool: { name: 'fleetbench', version: 'test' },
    clock: 'real',
    timeScale: 1,
    seed: 1,
    scenario: { name: 'world', hash: null },
    target: 'world:sandbox',
    epochMs: Date.UTC(2026, 0, 1),
    startedAt: new Date(Date.UTC(2026, 0, 1)).toISOString(),
  };
  const counts = { api: 0, span: 0, event: 0, gauge: 0 };
  for (const r of records) counts[r.kind]++;
  const end = Math.max(0, ...records.map((r) => r.t + ('dur' in r ? r.dur : 0)));
  const lines = [header, ...records, { kind: 'end', t: end, reason: 'completed', counts }];
  writeFileSync(path, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return path;
}
