/**
 * `fleetbench agents try`: the real CLIs, each run for a turn (the script's tool calls and final
 * message) and a resumed turn against a provider emulator of its own on 127.0.0.1, with the
 * emulator's record of every request they made. It is how a user checks an install end to end,
 * sees what a CLI does with a provider fault (`--fault`), and how the tests drive the real
 * binaries (docs/agents.md).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Rng } from '../base/rng.ts';
import { makeDirectories } from '../base/safe-write.ts';
import { RealClock } from '../clock/real.ts';
import {
  type FaultRule,
  type LatencyProfile,
  ProviderEmulator,
  type ProviderLimits,
  startProviderServer,
} from '../provider/index.ts';
import type { SpanRecord } from '../trace/schema.ts';
import { MemorySink, type TraceWriter } from '../trace/writer.ts';
import { AGENT_PACKAGES, type AgentCli } from './catalog.ts';
import { makeAgentHome, type RetrySettings } from './home.ts';
import type { AgentsInstall } from './install.ts';
import { runAgentTurn, type TurnResult } from './turn.ts';

export interface TryOptions {
  install: AgentsInstall;
  clis: AgentCli[];
  /** Where homes, workspaces and the trace go. */
  out: string;
  script: string;
  faults: FaultRule[];
  latency?: LatencyProfile | undefined;
  limits?: ProviderLimits | undefined;
  retries?: RetrySettings | undefined;
  /** Turns to run: the first, then resumes (2 by default). */
  turns: number;
  deadlineMs: number;
  seed: number;
  trace?: TraceWriter | undefined;
  signal?: AbortSignal | undefined;
  log?: (text: string) => void;
}

/** One request as the emulator recorded it. */
export interface TriedRequest {
  t: number;
  dur: number;
  status: string;
  turn: number | undefined;
  step: number | undefined;
  attempt: number | undefined;
  ttftMs: number | undefined;
  tokensIn: number | undefined;
  tokensOut: number | undefined;
  fault: string | undefined;
  outcome: string | undefined;
  reply: string | undefined;
}

export interface TriedAgent {
  cli: AgentCli;
  version: string;
  binary: string;
  turns: TurnResult[];
  requests: TriedRequest[];
}

export interface TryReport {
  providerUrl: string;
  agents: TriedAgent[];
  /** Every turn of every CLI completed. */
  ok: boolean;
}

function requestOf(record: SpanRecord): TriedRequest {
  const data = (record.data ?? {}) as Record<string, unknown>;
  const num = (name: string) => (typeof data[name] === 'number' ? (data[name] as number) : undefined);
  const text = (name: string) => (typeof data[name] === 'string' ? (data[name] as string) : undefined);
  return {
    t: record.t,
    dur: record.dur,
    status: String(record.labels?.status ?? ''),
    turn: num('turn'),
    step: num('step'),
    attempt: num('attempt'),
    ttftMs: num('ttftMs'),
    tokensIn: num('tokensIn'),
    tokensOut: num('tokensOut'),
    fault: text('fault'),
    outcome: text('outcome'),
    reply: text('reply'),
  };
}

export async function tryAgents(options: TryOptions): Promise<TryReport> {
  const clock = new RealClock();
  const memory = new MemorySink();
  const sink = {
    write: (record: Parameters<MemorySink['write']>[0]) => {
      memory.write(record);
      options.trace?.write(record);
    },
  };
  const emulator = new ProviderEmulator({
    clock,
    rng: new Rng(options.seed),
    trace: sink,
    latency: options.latency,
    limits: options.limits,
  });
  for (const fault of options.faults) emulator.addFault(fault);
  const server = await startProviderServer({ emulator });
  const agents: TriedAgent[] = [];
  try {
    for (const cli of options.clis) {
      const binary = options.install.clis[cli];
      if (!binary) throw new Error(`agents try: ${cli} was not resolved`);
      const session = `try-${cli}`;
      const key = emulator.mintKey({ session, script: options.script });
      const root = join(options.out, cli);
      const cwd = join(root, 'work');
      makeDirectories(cwd);
      // A repository, as the agents expect to work in one (their context says so).
      execFileSync('git', ['init', '-q'], { cwd, stdio: 'ignore' });
      const home = makeAgentHome(
        cli,
        join(root, 'home'),
        { url: server.url, key },
        { retries: options.retries },
      );
      const turns: TurnResult[] = [];
      for (let n = 1; n <= options.turns; n++) {
        if (options.signal?.aborted) break;
        const resume = n > 1 ? turns[turns.length - 1]?.sessionId : undefined;
        if (n > 1 && resume === undefined) break;
        options.log?.(
          `${AGENT_PACKAGES[cli].title} ${binary.version}: turn ${n}${resume ? ` (resume ${resume})` : ''}\n`,
        );
        const result = await runAgentTurn({
          binary,
          home,
          cwd,
          prompt: n === 1 ? `fleetbench agents try: turn ${n}` : `fleetbench agents try: turn ${n}, go on`,
          resume,
          deadlineMs: options.deadlineMs,
          signal: options.signal,
        });
        turns.push(result);
        if (!result.completed) break;
      }
      const requests = memory.records
        .filter((record): record is SpanRecord => record.kind === 'span' && record.session === session)
        .map(requestOf);
      agents.push({ cli, version: binary.version, binary: binary.path, turns, requests });
    }
  } finally {
    await server.close();
  }
  const ok = agents.every(
    (agent) => agent.turns.length === options.turns && agent.turns.every((turn) => turn.completed),
  );
  return { providerUrl: server.url, agents, ok };
}
