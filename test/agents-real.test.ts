/**
 * The real codex, Claude Code and opencode binaries against the provider emulator, run by
 * `fleetbench agents try` as a process inside a network namespace that has only loopback
 * (`unshare -rn`), so nothing beyond 127.0.0.1 can be reached, and every `connect()` of every
 * process is observed (strace): none dials anything but loopback. Off CI, skipped with one line
 * when the CLIs are not installed (`fleetbench targets install agents`) or the namespace cannot
 * be made, and the connects are not observed without strace; under CI all are required (.ci/run
 * installs them).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_PACKAGES } from '../src/agents/index.ts';
import { BIN } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import {
  agentClisPresent,
  dialled,
  inLoopbackNamespace,
  loopbackNamespace,
  straceTool,
} from './helpers/tools.ts';

const ci = Boolean(process.env.CI);

const ready = agentClisPresent() && loopbackNamespace();
const skip = !ready && !ci;

interface Request {
  t: number;
  dur: number;
  status: string;
  turn?: number;
  attempt?: number;
  fault?: string;
  tokensIn?: number;
}
interface Turn {
  completed: boolean;
  exitCode: number | null;
  sessionId?: string;
  resumed: boolean;
  commands: string[];
  errors: string[];
}
interface Report {
  ok: boolean;
  agents: Array<{ cli: string; version: string; turns: Turn[]; requests: Request[] }>;
}

/**
 * `fleetbench agents try ARGS --json` in a namespace of its own: its exit code and report, and
 * with strace what the whole process tree dialled.
 */
function tryInNamespace(
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; report: Report; stderr: string; dialled?: ReturnType<typeof dialled> }> {
  const out = scratchDir('fleetbench-agents-');
  const connects = straceTool().present
    ? join(scratchDir('fleetbench-agents-connects-'), 'connects.log')
    : undefined;
  return new Promise((resolve, reject) => {
    const child = spawn(
      ...inLoopbackNamespace(
        process.execPath,
        [BIN, 'agents', 'try', ...args, '--json', '--out', out],
        connects,
      ),
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      try {
        resolve({
          code,
          report: JSON.parse(stdout) as Report,
          stderr,
          ...(connects !== undefined ? { dialled: dialled(connects) } : {}),
        });
      } catch {
        reject(new Error(`agents try printed no report (exit ${code}): ${stderr.slice(-2000)}`));
      }
    });
  });
}

/** The first request after the one at `index` began: how long after `index` ended it started. */
const gapAfter = (requests: Request[], index: number) =>
  (requests[index + 1]?.t ?? Number.NaN) - ((requests[index]?.t ?? 0) + (requests[index]?.dur ?? 0));

describe.skipIf(skip)('the real agent CLIs against the provider emulator, with only loopback', () => {
  it('each CLI runs a turn with a tool call and a resumed turn, every request answered and recorded, nothing but loopback dialled', async () => {
    if (ci) straceTool().require();
    const { code, report, stderr, dialled: seen } = await tryInNamespace([], 600_000);
    expect(code, stderr).toBe(0);
    // Every connect of fleetbench, the three CLIs and what they ran: loopback only (the
    // emulator, and opencode's npm install refused at the loopback registry its home names).
    if (seen) {
      expect(seen.inet).toBeGreaterThan(6);
      expect(seen.beyondLoopback).toEqual([]);
    }
    expect(report.ok).toBe(true);
    expect(report.agents.map((agent) => agent.cli)).toEqual(['codex', 'claude', 'opencode']);
    for (const agent of report.agents) {
      expect(agent.version).toBe(AGENT_PACKAGES[agent.cli as keyof typeof AGENT_PACKAGES].version);
      const [first, second] = agent.turns;
      expect(first?.completed, `${agent.cli}: ${first?.errors.join('; ')}`).toBe(true);
      expect(first?.commands.join(' ')).toContain('echo fleetbench-tool-ok');
      expect(second?.resumed).toBe(true);
      expect(second?.sessionId).toBe(first?.sessionId);
      expect(second?.completed).toBe(true);
      expect(agent.requests.every((request) => request.status === '200')).toBe(true);
      // The resumed turn's requests carry the first turn's history: turn 2, and more input.
      const turnOne = agent.requests.filter((request) => request.turn === 1);
      const turnTwo = agent.requests.filter((request) => request.turn === 2);
      expect(turnOne.length).toBeGreaterThanOrEqual(2);
      expect(turnTwo.length).toBeGreaterThanOrEqual(2);
      expect(Math.min(...turnTwo.map((r) => r.tokensIn ?? 0))).toBeGreaterThan(
        Math.max(...turnOne.map((r) => r.tokensIn ?? 0)),
      );
    }
  }, 660_000);

  // A 429 with Retry-After 3 s, then a 529 (or the OpenAI APIs' 503), then a stream cut in the
  // middle: each retried as the CLI's vendor documents, the Retry-After waited out, the turn
  // completed. Retries show in the records as attempts of the same place in the conversation.
  const faults = ['rate-limit:3@count=1', 'overloaded@count=1', 'cut@count=1'].flatMap((fault) => [
    '--fault',
    fault,
  ]);

  it.each(['codex', 'claude', 'opencode'])(
    '%s retries a 429 (waiting out its Retry-After), an overload and a cut stream',
    async (cli) => {
      const { code, report, stderr } = await tryInNamespace([cli, '--turns', '1', ...faults], 300_000);
      expect(code, stderr).toBe(0);
      const agent = report.agents[0]!;
      expect(agent.turns[0]?.completed).toBe(true);
      const requests = agent.requests;
      expect(
        requests.slice(0, 4).map((request) => [request.status, request.fault ?? null, request.attempt]),
      ).toEqual([
        ['429', 'rate-limit', 1],
        [cli === 'claude' ? '529' : '503', 'overloaded', 2],
        ['200', 'cut', 3],
        ['200', null, 4],
      ]);
      // Waited out Retry-After (3 s; every CLI's own first backoff is shorter).
      expect(gapAfter(requests, 0)).toBeGreaterThanOrEqual(2_900);
    },
    320_000,
  );

  it('codex gives up at once on a 429 without Retry-After (one request, exit 1); Claude Code and opencode back off and retry', async () => {
    const codex = await tryInNamespace(
      ['codex', '--turns', '1', '--fault', 'rate-limit-bare@count=1'],
      120_000,
    );
    expect(codex.code).toBe(3);
    expect(codex.report.agents[0]?.turns[0]?.exitCode).toBe(1);
    expect(codex.report.agents[0]?.requests.map((request) => request.status)).toEqual(['429']);
    for (const cli of ['claude', 'opencode']) {
      const { code, report } = await tryInNamespace(
        [cli, '--turns', '1', '--fault', 'rate-limit-bare@count=1'],
        300_000,
      );
      expect(code).toBe(0);
      const requests = report.agents[0]!.requests;
      expect(requests.slice(0, 2).map((request) => [request.status, request.attempt])).toEqual([
        ['429', 1],
        ['200', 2],
      ]);
      // Their own backoff: Claude Code from 0.5 s, opencode from 2 s (each with jitter).
      expect(gapAfter(requests, 0)).toBeGreaterThanOrEqual(cli === 'claude' ? 300 : 1_500);
    }
  }, 720_000);
});
