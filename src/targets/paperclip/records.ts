/**
 * Paperclip's own timestamps as fleetbench's speed records (docs/paperclip.md#what-is-measured),
 * so the existing speed analysis (docs/analysis.md#speed) reads a Paperclip run like any other.
 *
 * A fleetbench run is one wake of an agent: the heartbeat run Paperclip created for it and the
 * retries Paperclip itself made of it (`retryOfRunId`), one attempt each:
 *
 * | record                   | from Paperclip                                                        |
 * | ------------------------ | --------------------------------------------------------------------- |
 * | `run.created`            | the first attempt's `createdAt` (the wake queued the run)             |
 * | `agent.launch` span      | each attempt's `startedAt` → `processStartedAt` (Paperclip's share)   |
 * | `provider.boot` span     | each attempt's `processStartedAt` → the agent ready (agent boot)      |
 * | `provider.event`         | each line the stand-in printed, at its log chunk's `ts`               |
 * | `provider.session.load`  | a retry's `processStartedAt` → the agent ready (provider share)       |
 * | `paperclip.attempt` span | each attempt's `createdAt` → `finishedAt`, its status and error code  |
 * | `paperclip.retry` span   | an attempt's end (lost, interrupted) → its retry's process spawned    |
 * | `run.lost` span          | the kill that orphaned an attempt → Paperclip marking it lost         |
 * | `run.ended`              | the last attempt's `finishedAt`                                       |
 *
 * An agent is ready at its first model request when it is a real CLI (the moment a world's edges
 * see too, docs/command-target.md), else at its first event (a stand-in makes no model request).
 *
 * Lines Paperclip itself writes into the log (`[paperclip] …`) are not the agent's and are left
 * out. The stand-ins print `codex exec --json`'s events; codex prints an agent message whole,
 * once, so its `item.completed` is recorded as the text's (first and only) `item.delta`.
 */
import { restartThatLostRun } from '../../trace/lost-run.ts';
import type { TraceSink } from '../../trace/writer.ts';
import type { HeartbeatRun, LogChunk } from './api.ts';

export interface Attempt {
  run: HeartbeatRun;
  log: LogChunk[];
}

/** A fleetbench run: one wake and the attempts Paperclip made of it. */
export interface RunChain {
  /** fleetbench's run id: the first attempt's heartbeat run id. */
  id: string;
  session: string;
  /** Paperclip's adapter type (`codex_local`, `process`): the `adapter` label of every record. */
  adapter: string;
  /** `warm` when the agent resumes a saved session (as its `run.created` said). */
  start: 'cold' | 'warm';
  /** The real agent CLI Paperclip ran (agents: real): recorded in each `provider.boot`. */
  agent?: { cli: string; version: string; binary: string };
  attempts: Attempt[];
}

export interface RecordContext {
  /** Paperclip's ISO time → run time (ms). */
  toRunTime: (iso: string) => number;
  /** Restarts so far, in run time: a lost attempt's detection is timed from the kill that orphaned it. */
  restarts: ReadonlyArray<{ kind: string; killAt: number }>;
  /** Run time now: spans ending earlier say when they were written. */
  now: number;
  /**
   * Real agents: when the session's first model request at or after `from` (before `until`)
   * began, run time. Absent for stand-ins, which are ready at their first event.
   */
  firstModelRequest?: (session: string, from: number, until?: number) => number | undefined;
}

export interface ProviderEvent {
  t: number;
  type: string;
  item?: string;
  /** codex's own event type, when it differs. */
  source: string;
}

const TOOL_ITEMS = new Set(['command_execution', 'mcp_tool_call', 'web_search', 'file_change', 'todo_list']);

function itemKind(item: unknown): string | undefined {
  const type = (item as { type?: unknown } | undefined)?.type;
  if (type === 'reasoning') return 'reasoning';
  if (type === 'agent_message') return 'text';
  if (typeof type === 'string' && TOOL_ITEMS.has(type)) return 'tool_call';
  return undefined;
}

/** Claude Code's `stream-json` lines (claude_local with real agents): their own types. */
const CLAUDE_TYPES = new Set(['system', 'assistant', 'user', 'result']);

interface ClaudeLine {
  type: string;
  subtype?: unknown;
  session_id?: unknown;
  is_error?: unknown;
  message?: { content?: Array<{ type?: unknown }> };
}

/**
 * One Claude Code line as fleetbench's provider events: its init is the session starting (or
 * resuming the saved one), each assistant block an item (text and thinking arrive whole: their
 * first delta), a tool result a completed tool call, the result the turn's end.
 */
function claudeEvents(line: ClaudeLine, t: number, sessionBefore: string | null): ProviderEvent[] {
  const source = `claude.${line.type}`;
  switch (line.type) {
    case 'system':
      if (line.subtype !== 'init') return [{ t, type: 'diagnostic', source }];
      return [
        {
          t,
          type:
            sessionBefore !== null && line.session_id === sessionBefore
              ? 'session.resumed'
              : 'session.started',
          source,
        },
      ];
    case 'assistant':
      return (line.message?.content ?? []).flatMap((block): ProviderEvent[] => {
        if (block.type === 'text') return [{ t, type: 'item.delta', item: 'text', source }];
        if (block.type === 'thinking') return [{ t, type: 'item.delta', item: 'reasoning', source }];
        if (block.type === 'tool_use') return [{ t, type: 'item.started', item: 'tool_call', source }];
        return [];
      });
    case 'user':
      return [{ t, type: 'item.completed', item: 'tool_call', source }];
    default:
      return [{ t, type: line.is_error === true ? 'diagnostic' : 'turn.completed', source }];
  }
}

/**
 * The agent's events of one attempt, from its log: every stdout line that is a JSON object with
 * a `type` (codex's stream), mapped to fleetbench's provider event types. `resumed` is whether
 * the thread it started is the session the attempt resumed (`sessionIdBefore`).
 */
export function providerEventsOf(attempt: Attempt, toRunTime: (iso: string) => number): ProviderEvent[] {
  const events: ProviderEvent[] = [];
  for (const chunk of attempt.log) {
    if (chunk.stream !== 'stdout') continue;
    const t = toRunTime(chunk.ts);
    if (!Number.isFinite(t)) continue;
    for (const line of chunk.chunk.split('\n')) {
      const text = line.trim();
      if (!text.startsWith('{')) continue;
      let event: { type?: unknown; item?: unknown; thread_id?: unknown };
      try {
        event = JSON.parse(text);
      } catch {
        continue;
      }
      if (typeof event.type !== 'string') continue;
      if (CLAUDE_TYPES.has(event.type)) {
        events.push(...claudeEvents(event as ClaudeLine, t, attempt.run.sessionIdBefore));
        continue;
      }
      const source = event.type;
      const item = itemKind(event.item);
      switch (source) {
        case 'thread.started': {
          const resumed =
            attempt.run.sessionIdBefore !== null && event.thread_id === attempt.run.sessionIdBefore;
          events.push({ t, type: resumed ? 'session.resumed' : 'session.started', source });
          break;
        }
        case 'item.completed':
          // codex prints an agent message once, whole: that is when its text appears.
          events.push(
            item === 'text'
              ? { t, type: 'item.delta', item, source }
              : { t, type: 'item.completed', ...(item ? { item } : {}), source },
          );
          break;
        case 'item.updated':
          events.push({ t, type: 'item.delta', ...(item ? { item } : {}), source });
          break;
        default:
          events.push({ t, type: source, ...(item ? { item } : {}), source });
      }
    }
  }
  return events;
}

const ms = (from: number, to: number) => Math.max(0, to - from);

/** `run.created`, written as soon as the wake answers (the live progress counts it). */
export function writeRunCreated(
  trace: TraceSink,
  run: { id: string; session: string; adapter: string; createdAt: string; warm: boolean },
  toRunTime: (iso: string) => number,
): void {
  trace.write({
    kind: 'event',
    name: 'run.created',
    t: toRunTime(run.createdAt),
    session: run.session,
    labels: { adapter: run.adapter, start: run.warm ? 'warm' : 'cold' },
    data: { run: run.id },
  });
}

/**
 * Writes a concluded run (all its attempts finished, its `run.created` already written) into the
 * trace: its attempts' records, a `run.turn` span (the wake → the agent's last event) when the
 * agent finished its turn, and `run.ended`.
 */
export function writeRunChain(trace: TraceSink, chain: RunChain, context: RecordContext): void {
  const { toRunTime, now } = context;
  const first = chain.attempts[0];
  if (!first) return;
  const { session, adapter } = chain;
  const { start } = chain;
  const at = (iso: string | null) => (iso === null ? undefined : toRunTime(iso));
  const span = (name: string, t: number, end: number, rest: Record<string, unknown>) => {
    trace.write({
      kind: 'span',
      name,
      t,
      dur: ms(t, end),
      session,
      ...(now > end + 1 ? { writtenAt: now } : {}),
      ...rest,
    } as Parameters<TraceSink['write']>[0]);
  };
  chain.attempts.forEach((attempt, index) => {
    const { run } = attempt;
    const reason = index === 0 ? 'start' : 'retry';
    const startedAt = at(run.startedAt);
    const spawnedAt = at(run.processStartedAt);
    const finishedAt = at(run.finishedAt);
    const events = providerEventsOf(attempt, toRunTime);
    if (startedAt !== undefined && spawnedAt !== undefined) {
      // Paperclip's own preparation of the run: claim, workspace, CODEX_HOME, skills, the spawn.
      span('agent.launch', startedAt, spawnedAt, {
        labels: { adapter, start, reason },
        data: { run: chain.id, paperclipRun: run.id },
      });
    }
    const readyAt =
      spawnedAt === undefined
        ? undefined
        : context.firstModelRequest
          ? context.firstModelRequest(session, spawnedAt, finishedAt)
          : events[0]?.t;
    if (spawnedAt !== undefined && readyAt !== undefined) {
      span('provider.boot', spawnedAt, readyAt, {
        labels: { adapter, start, reason },
        data: {
          run: chain.id,
          paperclipRun: run.id,
          ...(chain.agent
            ? { cli: chain.agent.cli, cliVersion: chain.agent.version, binary: chain.agent.binary }
            : {}),
        },
      });
      if (index > 0) {
        // The retry's agent starts and loads its session: the provider's share of the recovery.
        span('provider.session.load', spawnedAt, readyAt, {
          labels: { adapter, start, reason },
          data: { run: chain.id, paperclipRun: run.id },
        });
      }
    }
    for (const event of events) {
      trace.write({
        kind: 'event',
        name: 'provider.event',
        t: event.t,
        session,
        labels: { adapter, type: event.type, ...(event.item ? { item: event.item } : {}) },
        // The agent's own event type when it differs (codex's `item.completed`, `claude.assistant`).
        data: {
          run: chain.id,
          turn: 1,
          ...(event.source !== event.type
            ? { [event.source.startsWith('claude.') ? 'claude' : 'codex']: event.source }
            : {}),
        },
      });
    }
    const attemptCreated = at(run.createdAt)!;
    span('paperclip.attempt', attemptCreated, finishedAt ?? attemptCreated, {
      outcome: run.status === 'succeeded' ? 'ok' : run.status === 'cancelled' ? 'cancelled' : 'error',
      labels: { adapter, status: run.status, ...(run.errorCode ? { errorCode: run.errorCode } : {}), reason },
      data: {
        run: chain.id,
        paperclipRun: run.id,
        ...(run.retryOfRunId ? { retryOf: run.retryOfRunId } : {}),
        ...(startedAt !== undefined ? { startedAtMs: startedAt } : {}),
        ...(spawnedAt !== undefined ? { processStartedAtMs: spawnedAt } : {}),
        ...(events[0] ? { firstEventAtMs: events[0].t } : {}),
        ...(run.error ? { error: run.error.slice(0, 300) } : {}),
        ...(finishedAt === undefined ? { unfinished: true } : {}),
      },
    });
    if (run.errorCode === 'process_lost' && finishedAt !== undefined) {
      // The kill that orphaned this attempt's agent, not the restart after which it was noticed.
      const kill = restartThatLostRun(
        [...context.restarts].sort((a, b) => a.killAt - b.killAt),
        spawnedAt ?? startedAt ?? attemptCreated,
        finishedAt,
      );
      if (kill) {
        span('run.lost', kill.killAt, finishedAt, {
          labels: { adapter, kind: kill.kind },
          data: { run: chain.id, paperclipRun: run.id },
        });
      }
    }
    const next = chain.attempts[index + 1];
    if (next && finishedAt !== undefined) {
      const retrySpawned = at(next.run.processStartedAt);
      span('paperclip.retry', finishedAt, retrySpawned ?? finishedAt, {
        ...(retrySpawned === undefined ? { outcome: 'error' as const } : {}),
        labels: { adapter, reason: run.errorCode ?? run.status },
        data: {
          run: chain.id,
          paperclipRun: run.id,
          retryRun: next.run.id,
          retryCreatedAtMs: at(next.run.createdAt),
          ...(next.run.scheduledRetryAt ? { retryDueAtMs: at(next.run.scheduledRetryAt) } : {}),
          ...(next.run.startedAt ? { retryStartedAtMs: at(next.run.startedAt) } : {}),
        },
      });
    }
  });
  const last = chain.attempts[chain.attempts.length - 1]!;
  const lastEvents = providerEventsOf(last, toRunTime);
  const turnDone = lastEvents.findLast((e) => e.type === 'turn.completed');
  if (last.run.status === 'succeeded' && turnDone) {
    span('run.turn', at(first.run.createdAt)!, turnDone.t, {
      labels: { adapter },
      data: {
        run: chain.id,
        turn: 1,
        items: lastEvents.filter((e) => e.type === 'item.completed' || e.type === 'item.delta').length,
        attempts: chain.attempts.length,
      },
    });
  }
  const ended = at(last.run.finishedAt);
  if (ended !== undefined) {
    trace.write({
      kind: 'event',
      name: 'run.ended',
      t: ended,
      session,
      labels: { adapter, status: last.run.status },
      data: { run: chain.id, turns: 1, attempts: chain.attempts.length },
    });
  }
}
