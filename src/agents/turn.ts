/**
 * One non-interactive turn of a real agent CLI: started as a process in its own group, its JSON
 * event stream read line by line (codex `exec --json`, Claude Code `stream-json`, opencode
 * `run --format json`), ended at its exit or at a deadline fleetbench sets (codex retries a
 * provider that is gone for ever). The result says what a user would see: the session id to
 * resume, when the first activity showed, the commands run, the last message, how it ended.
 */
import { spawn } from 'node:child_process';
import type { AgentCli } from './catalog.ts';
import type { AgentHome } from './home.ts';
import type { AgentBinary } from './install.ts';

export interface TurnEvent {
  /** ms since the process started. */
  atMs: number;
  /** activity (text, tool call, reasoning), tool-result, final, error, session */
  kind: 'session' | 'activity' | 'tool-call' | 'tool-result' | 'message' | 'error' | 'done';
  detail?: string;
}

export interface TurnResult {
  cli: AgentCli;
  version: string;
  binary: string;
  /** The CLI's own session (thread) id: what a resume names. */
  sessionId: string | undefined;
  resumed: boolean;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** ms from spawn to exit. */
  durationMs: number;
  /** ms from spawn to the first activity a user would see (text, tool call, reasoning). */
  firstActivityMs: number | undefined;
  commands: string[];
  lastMessage: string | undefined;
  /** The CLI said the turn completed (its own success event). */
  completed: boolean;
  errors: string[];
  events: TurnEvent[];
  /** The last lines of stderr, for a failure's message. */
  stderrTail: string;
}

type Json = Record<string, unknown>;

interface Reading {
  sessionId?: string | undefined;
  events: TurnEvent[];
  commands: string[];
  lastMessage?: string | undefined;
  completed: boolean;
  errors: string[];
}

/** What one line of each CLI's stream says. */
function readLine(cli: AgentCli, line: Json, atMs: number, into: Reading): void {
  const push = (kind: TurnEvent['kind'], detail?: string) =>
    into.events.push({ atMs, kind, ...(detail ? { detail } : {}) });
  const item = (line.item ?? line.part ?? {}) as Json;
  switch (cli) {
    case 'codex':
      if (line.type === 'thread.started') {
        into.sessionId = String(line.thread_id ?? '');
        push('session', into.sessionId);
      } else if (line.type === 'item.started' && item.type === 'command_execution') {
        into.commands.push(String(item.command ?? ''));
        push('tool-call', String(item.command ?? ''));
      } else if (line.type === 'item.completed' && item.type === 'command_execution') push('tool-result');
      else if (line.type === 'item.completed' && item.type === 'agent_message') {
        into.lastMessage = String(item.text ?? '');
        push('message');
      } else if (line.type === 'item.completed' && item.type === 'reasoning') push('activity', 'reasoning');
      else if (line.type === 'turn.completed') {
        into.completed = true;
        push('done');
      } else if (line.type === 'turn.failed' || line.type === 'error') {
        const message = String((line.error as Json | undefined)?.message ?? line.message ?? 'error');
        into.errors.push(message);
        push('error', message);
      }
      return;
    case 'claude': {
      if (line.type === 'system' && line.subtype === 'init') {
        into.sessionId = String(line.session_id ?? '');
        push('session', into.sessionId);
      } else if (line.type === 'assistant') {
        const content = ((line.message as Json | undefined)?.content ?? []) as Json[];
        for (const block of content) {
          if (block.type === 'tool_use') {
            const input = (block.input ?? {}) as Json;
            into.commands.push(String(input.command ?? block.name ?? ''));
            push('tool-call', String(input.command ?? ''));
          } else if (block.type === 'text') {
            into.lastMessage = String(block.text ?? '');
            push('message');
          } else if (block.type === 'thinking') push('activity', 'reasoning');
        }
      } else if (line.type === 'user') push('tool-result');
      else if (line.type === 'result') {
        if (line.is_error === true || line.subtype !== 'success') {
          const message = String(line.result ?? line.subtype ?? 'error');
          into.errors.push(message);
          push('error', message);
        } else {
          into.completed = true;
          push('done');
        }
      }
      return;
    }
    case 'opencode':
      if (typeof line.sessionID === 'string' && into.sessionId === undefined) {
        into.sessionId = line.sessionID;
        push('session', into.sessionId);
      }
      if (line.type === 'tool_use') {
        const input = ((item.state as Json | undefined)?.input ?? {}) as Json;
        into.commands.push(String(input.command ?? item.tool ?? ''));
        push('tool-call', String(input.command ?? ''));
        push('tool-result');
      } else if (line.type === 'text') {
        into.lastMessage = String(item.text ?? '');
        push('message');
      } else if (line.type === 'reasoning') push('activity', 'reasoning');
      else if (line.type === 'step_finish' && item.reason === 'stop') {
        into.completed = true;
        push('done');
      } else if (line.type === 'error') {
        const error = (line.error ?? {}) as Json;
        const message = String((error.data as Json | undefined)?.message ?? error.name ?? 'error');
        into.errors.push(message);
        push('error', message);
      }
      return;
  }
}

const ACTIVITY: ReadonlySet<TurnEvent['kind']> = new Set(['activity', 'tool-call', 'message']);

export interface RunTurnOptions {
  binary: AgentBinary;
  home: AgentHome;
  /** The workspace the agent works in (its commands run there). */
  cwd: string;
  prompt: string;
  /** The CLI's session id to resume. */
  resume?: string | undefined;
  /** The turn is ended (SIGTERM, then SIGKILL 5 s later) after this many ms. */
  deadlineMs: number;
  signal?: AbortSignal | undefined;
}

/** Runs one turn to its end (or deadline) and reads what it printed. */
export function runAgentTurn(options: RunTurnOptions): Promise<TurnResult> {
  const { binary, home } = options;
  const cli = binary.cli;
  const started = performance.now();
  const reading: Reading = { events: [], commands: [], completed: false, errors: [] };
  let stderr = '';
  let timedOut = false;
  const child = spawn(
    binary.command[0] as string,
    [...binary.command.slice(1), ...home.turnArgs(options.prompt, options.resume)],
    {
      cwd: options.cwd,
      env: home.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (text: string) => {
    pending += text;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line.startsWith('{')) {
        try {
          readLine(cli, JSON.parse(line) as Json, performance.now() - started, reading);
        } catch {
          // A line that is not JSON (a warning) is not an event.
        }
      }
      newline = pending.indexOf('\n');
    }
    // One line can be long (a tool's output) but never unbounded in memory.
    if (pending.length > 16 * 1024 * 1024) pending = '';
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => {
    stderr = (stderr + text).slice(-4096);
  });
  let hardKill: NodeJS.Timeout | undefined;
  const deadline = setTimeout(() => {
    timedOut = true;
    killGroup('SIGTERM');
    hardKill = setTimeout(() => killGroup('SIGKILL'), 5_000);
  }, options.deadlineMs);
  const onAbort = () => {
    killGroup('SIGTERM');
    hardKill = setTimeout(() => killGroup('SIGKILL'), 5_000);
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  return new Promise((resolve) => {
    const finish = (exitCode: number | null, signal: string | null) => {
      clearTimeout(deadline);
      options.signal?.removeEventListener('abort', onAbort);
      // The CLI's own children (a tool command it started) go with it.
      killGroup('SIGKILL');
      if (hardKill) clearTimeout(hardKill);
      const first = reading.events.find((event) => ACTIVITY.has(event.kind));
      resolve({
        cli,
        version: binary.version,
        binary: binary.path,
        sessionId: reading.sessionId,
        resumed: options.resume !== undefined,
        exitCode,
        signal,
        timedOut,
        durationMs: performance.now() - started,
        firstActivityMs: first?.atMs,
        commands: reading.commands,
        lastMessage: reading.lastMessage,
        completed: reading.completed && exitCode === 0,
        errors: reading.errors,
        events: reading.events,
        stderrTail: stderr.trim().split('\n').slice(-5).join('\n'),
      });
    };
    child.once('error', (error) => {
      reading.errors.push(error.message);
      finish(null, null);
    });
    child.once('close', (code, signal) => finish(code, signal));
  });
}
