/**
 * Real agents under the real Paperclip (docs/paperclip.md#real-agents-agents-real): a shortened
 * paperclip-chaos-c4 with `agents: real`, so Paperclip's codex_local agents are the real codex CLI
 * answered by the run's provider emulator, with a real SIGTERM restart. Run as root inside a
 * network namespace with only loopback (`unshare -n`: Paperclip's user must exist there, so not
 * `unshare -rn`), so nothing beyond 127.0.0.1 can be reached, and every connect() observed
 * (strace): nothing but loopback is dialled. Skipped off CI with one line when
 * Paperclip or the agent CLIs are not installed; required under CI (.ci/run installs both).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_PACKAGES, resolveAgentsInstall } from '../../src/agents/index.ts';
import { scratchDir } from '../helpers/tmp.ts';
import { dialled, straceConnects, straceTool } from '../helpers/tools.ts';
import { leftDirs, paperclipInstalled, processesIn, runCli, traceLines } from './helpers.ts';

const installed = paperclipInstalled();
const ci = Boolean(process.env.CI);
let agentsProblem: string | undefined;
try {
  resolveAgentsInstall(undefined, ['codex']);
} catch (error) {
  agentsProblem = (error as Error).message;
  if (!ci)
    process.stderr.write(
      `skipped: needs the agent CLIs (fleetbench targets install agents): ${agentsProblem}\n`,
    );
}
/** A namespace with only loopback, as root (util-linux's unshare, iproute2's ip). */
const isolated =
  process.getuid?.() === 0 &&
  spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore', timeout: 30_000 })
    .status === 0;
const PREFIX = isolated ? ['unshare', '-n', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"'] : [];
/** Every connect() of fleetbench, Paperclip, its PostgreSQL and the codex agents (strace). */
const connects = join(scratchDir('fleetbench-pc-connects-'), 'connects.log');
const OBSERVE = straceTool().present ? straceConnects(connects) : [];

describe.skipIf(installed.skip || (agentsProblem !== undefined && !ci))(
  'real agents under the real Paperclip',
  () => {
    it('paperclip-chaos-c4 with real codex agents: every model request answered by the emulator, a real restart recovered by the real CLI, its 429s in the recovery rows', async () => {
      installed.require();
      if (agentsProblem !== undefined)
        throw new Error(`the agent CLIs are not installed (.ci/run installs them): ${agentsProblem}`);
      // Each run a turn of about 15 s (a 12 s command), runs back to back: the restart at 75 s
      // finds both sessions' runs in flight (with the built-in script's 5 s turns and 3-10 s
      // think times, a restart often fell between runs and cut nothing).
      const scripts = join(scratchDir('fleetbench-pc-scripts-'), 'scripts.yaml');
      writeFileSync(
        scripts,
        "default: long-turn\nscripts:\n  long-turn:\n    turns:\n      - commands: ['sleep 12', ls]\n        final: Looked around.\n",
      );
      chmodSync(scripts, 0o644);
      const run = runCli(
        [
          'paperclip-chaos-c4',
          '--set',
          'agents=real',
          '--set',
          'duration=4m',
          '--set',
          'sessions.count=2',
          '--set',
          'executors.0.concurrency=2',
          '--set',
          'executors.0.restarts=1',
          '--set',
          'executors.0.kinds=[graceful]',
          '--set',
          'executors.0.provider-faults=0',
          '--set',
          'executors.0.first-fault=75s',
          '--set',
          'executors.0.think={min: 500ms, max: 1s}',
          '--set',
          `provider.scripts=${scripts}`,
          // From 10 s after the restart (75 s; the server is down longer than that), each session's
          // next two model requests are answered 429 (retry after 2 s): a recovered codex's first
          // requests, which it waits out and retries.
          '--set',
          `provider.faults=[${['s-0001', 's-0002']
            .map(
              (session) => `{kind: rate-limit, retryAfterS: 2, session: ${session}, count: 2, fromMs: 85000}`,
            )
            .join(', ')}]`,
          // Judged on this machine's speed, the wave may fail native-speed: not what this test is about.
          '--no-budgets',
        ],
        'real-agents',
        {},
        [...PREFIX, ...OBSERVE],
      );
      const code = await Promise.race([
        run.exited,
        new Promise<string>((r) => setTimeout(() => r('hung'), 900_000)),
      ]);
      if (code === 'hung') run.child.kill('SIGKILL');
      expect(code, run.stderr()).toBe(0);
      const records = traceLines(run.out);
      const named = (name: string) => records.filter((r) => r.name === name);
      // Real codex processes, their version in the trace.
      const boots = named('provider.boot');
      expect(boots.length).toBeGreaterThan(0);
      for (const boot of boots)
        expect(boot.data).toMatchObject({ cli: 'codex', cliVersion: AGENT_PACKAGES.codex.version });
      // Every model request answered by the emulator and traced, all from that codex.
      const requests = named('provider.request');
      expect(requests.length).toBeGreaterThan(boots.length);
      for (const request of requests) {
        expect(request.labels).toMatchObject({ api: 'responses', cli: 'codex' });
        expect((request.data as { cliVersion: string }).cliVersion).toBe(AGENT_PACKAGES.codex.version);
      }
      expect(named('provider.emulator.stopped')[0]?.labels).toEqual({ mismatch: false });
      // Each agent's boot ends at its session's first model request after its spawn (what a
      // world's edges measure too), and Paperclip's preparation before the spawn is its launch.
      for (const boot of boots) {
        const { t, dur, session } = boot as unknown as { t: number; dur: number; session: string };
        const first = requests
          .filter((r) => r.session === session && (r.t as number) >= t)
          .sort((a, b) => (a.t as number) - (b.t as number))[0];
        expect(first?.t).toBeCloseTo(t + dur, 3);
      }
      expect(named('agent.launch').length).toBeGreaterThanOrEqual(boots.length);
      // A real restart, and the speed table's provider rows from the real CLI.
      expect(named('controlplane.restart').map((r) => (r.labels as { kind: string }).kind)).toEqual([
        'graceful',
      ]);
      const speed = JSON.parse(readFileSync(join(run.out, 'summary.json'), 'utf8')).analysis.speed;
      expect(speed.metrics.agent_boot.samples).toBeGreaterThan(0);
      expect(speed.metrics.time_to_first_activity.samples).toBeGreaterThan(0);
      // Each recovered codex met its 429s before its first activity: they are in the report rows
      // measured to it (never in the judged control-plane row, which ends at its spawn).
      const recovered = (
        speed.recoveries as Array<{
          controlPlaneMs: number;
          toActivityMs: number | null;
          providerToActivityMs: number | null;
          modelRequests?: { retries: number; faults: Record<string, number> };
        }>
      ).filter((r) => r.toActivityMs !== null);
      // The restart cuts both sessions' runs, and Paperclip decides each one's fate by a race
      // (docs/paperclip.md, how a restart is handled: SIGTERM): a run the drain marks interrupted
      // is retried and recovered; a run whose agent exits on the SIGTERM first ends failed
      // (adapter_failed) and is not retried. One CI run (2026-12-06) found no recovered run,
      // likely both runs losing that race; then there is no recovery to look at, and every cut
      // run must still be accounted for as that documented loss (the failure prints them all).
      const unrecovered = speed.unrecovered as Array<{
        kind: string;
        status: string;
        errorCode: string | null;
      }>;
      const cutRuns = JSON.stringify({ recoveries: speed.recoveries, unrecovered });
      expect(recovered.length + unrecovered.length, cutRuns).toBeGreaterThan(0);
      if (recovered.length === 0)
        for (const lost of unrecovered)
          expect(lost, cutRuns).toMatchObject({
            kind: 'graceful',
            status: 'failed',
            errorCode: 'adapter_failed',
          });
      for (const r of recovered) {
        expect(r.modelRequests?.faults['rate-limit']).toBeGreaterThanOrEqual(1);
        expect(r.modelRequests?.retries).toBeGreaterThanOrEqual(1);
        // The retry waited 2 s: the provider's part holds it.
        expect(r.providerToActivityMs!).toBeGreaterThan(2_000);
        expect(r.toActivityMs!).toBeGreaterThan(r.controlPlaneMs);
      }
      expect(speed.metrics.restart_provider_to_activity.samples).toBe(recovered.length);
      const provider = JSON.parse(readFileSync(join(run.out, 'summary.json'), 'utf8')).analysis.provider;
      expect(provider.byCli.codex.versions).toEqual({
        [AGENT_PACKAGES.codex.version]: provider.byCli.codex.requests,
      });
      if (isolated) expect(run.stderr()).not.toMatch(/ENETUNREACH|EAI_AGAIN|getaddrinfo/);
      // Nothing but loopback dialled by any process of the run, Paperclip's agents included.
      if (ci) straceTool().require();
      if (OBSERVE.length > 0) {
        const seen = dialled(connects);
        expect(seen.inet).toBeGreaterThan(boots.length);
        expect(seen.beyondLoopback).toEqual([]);
      }
      expect(processesIn(run.tmp)).toEqual([]);
      expect(leftDirs(run.tmp)).toEqual([]);
    });
  },
);
