/**
 * The GitHub emulator under load, side by side with bare node:http serving the same bytes:
 * autocannon against an authenticated `GET /repos/{owner}/{repo}/pulls` with quota accounting
 * and trace recording on, then a check that every answered request became a trace record.
 * Also in-process handle() throughput under the VirtualClock (what virtual-time runs use).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { VirtualClock } from '../src/clock/index.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import { Rng } from '../src/rng.ts';
import { readTrace, TraceWriter } from '../src/trace/index.ts';
import type { Bench } from './run.ts';

const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
/** Emulator and bare alternate this many times, so background load hits both alike. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = 32;
const PATH = '/repos/fleetbench/repo-1/pulls';
const target = fileURLToPath(new URL('./emulator-target.ts', import.meta.url));

interface Target {
  child: ChildProcess;
  lines: AsyncIterator<string>;
  ready: { port: number; token?: string };
}

async function start(kind: 'emulator' | 'bare', file: string): Promise<Target> {
  const child = spawn(process.execPath, ['--import', 'tsx', target, kind, file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error(`${kind} target exited before it was ready`);
  return { child, lines, ready: JSON.parse(first.value) };
}

async function stop(t: Target): Promise<{ answered: number; traced?: number }> {
  t.child.kill('SIGTERM');
  const line = await t.lines.next();
  if (line.done) throw new Error('target exited without reporting');
  return JSON.parse(line.value);
}

async function load(port: number, headers: Record<string, string>) {
  const url = `http://127.0.0.1:${port}${PATH}`;
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 }); // warm-up (JIT)
  return autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION_S });
}

type Result = Awaited<ReturnType<typeof autocannon>>;

/** Rounds pooled: total requests over total time; p50/p99 the worst round's (conservative). */
function summarize(runs: Result[]) {
  const seconds = runs.reduce((a, r) => a + r.duration, 0);
  const requests = runs.reduce((a, r) => a + r.requests.total, 0);
  return {
    rps: Math.round(requests / seconds),
    p50: Math.max(...runs.map((r) => r.latency.p50)),
    p99: Math.max(...runs.map((r) => r.latency.p99)),
    requests,
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    perRound: runs.map((r) => Math.round(r.requests.average)).join(' / '),
  };
}

/** handle() throughput in-process under the VirtualClock, with modelled latency and a trace file. */
async function inProcess(dir: string, latency: boolean): Promise<{ rps: number; requests: number }> {
  const clock = new VirtualClock();
  const trace = new TraceWriter(
    join(dir, `inproc-${latency}.jsonl`),
    {
      runId: 'bench',
      tool: { name: 'fleetbench', version: 'bench' },
      clock: 'virtual',
      seed: 1,
      scenario: { name: 'inproc', hash: null },
      epochMs: clock.epochMs,
      startedAt: new Date(clock.epochMs).toISOString(),
    },
    { flushIntervalMs: 0 },
  );
  const emulator = new GitHubEmulator({
    clock,
    rng: new Rng(1),
    trace,
    fixtures: { repos: 10, issuesPerRepo: 20, pullsPerRepo: 10 },
    latency: latency ? undefined : false,
    limits: { primary: { user: { core: 1e9, graphql: 1e9 } }, secondary: { restPointsPerMinute: 1e9 } },
  });
  const headers = { authorization: `token ${emulator.defaultToken}`, 'x-fleetbench-op': 'guard-pr-list' };
  const sessions = 200;
  const perSession = 1_000;
  const started = performance.now();
  const work = Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      const repo = `fleetbench/repo-${(s % 10) + 1}`;
      let etag: string | undefined;
      for (let i = 0; i < perSession; i++) {
        // A guarded poller: the list guard with If-None-Match, then a check-runs guard.
        const res = await emulator.handle({
          method: 'GET',
          path: `/repos/${repo}/pulls?state=open&sort=updated&direction=desc&per_page=1`,
          headers: etag ? { ...headers, 'if-none-match': etag } : headers,
        });
        etag = res.headers.etag;
      }
    }),
  );
  await clock.run();
  await work;
  const seconds = (performance.now() - started) / 1000;
  trace.close();
  const requests = sessions * perSession;
  return { rps: Math.round(requests / seconds), requests };
}

const bench: Bench = {
  name: 'emulator',
  description: `GitHub emulator vs bare node:http, autocannon ${CONNECTIONS} connections x ${DURATION_S} s x ${ROUNDS} alternating rounds, GET ${PATH}`,
  async run() {
    const dir = mkdtempSync(join(tmpdir(), 'fleetbench-bench-'));
    try {
      const emuRuns: Result[] = [];
      const refRuns: Result[] = [];
      let answered = 0;
      let traced = 0;
      let footerApi = 0;
      let bodyBytes = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const tracePath = join(dir, `emulator-${round}.jsonl`);
        const emulator = await start('emulator', tracePath);
        const auth = { authorization: `token ${emulator.ready.token}` };
        const sample = await fetch(`http://127.0.0.1:${emulator.ready.port}${PATH}`, { headers: auth });
        const body = Buffer.from(await sample.arrayBuffer());
        bodyBytes = body.length;
        const bodyPath = join(dir, 'body.json');
        writeFileSync(bodyPath, body);
        emuRuns.push(await load(emulator.ready.port, auth));
        const done = await stop(emulator);
        const { records, stats } = await readTrace(tracePath);
        answered += done.answered;
        traced += records.filter((r) => r.kind === 'api').length;
        footerApi += stats.footer?.counts.api ?? 0;
        const bare = await start('bare', bodyPath);
        refRuns.push(await load(bare.ready.port, {}));
        await stop(bare);
      }
      const emu = summarize(emuRuns);
      const ref = summarize(refRuns);

      const inVirtual = await inProcess(dir, true);
      const inBare = await inProcess(dir, false);

      const ratio = emu.rps / ref.rps;
      const rows = [
        ['server', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx', 'errors', 'req/s per round'],
        ['---', '---', '---', '---', '---', '---', '---', '---'],
        ['bare node:http', ref.rps, ref.p50, ref.p99, ref.requests, ref.non2xx, ref.errors, ref.perRound],
        [
          'fleetbench emulator',
          emu.rps,
          emu.p50,
          emu.p99,
          emu.requests,
          emu.non2xx,
          emu.errors,
          emu.perRound,
        ],
      ];
      console.log(rows.map((r) => `| ${r.join(' | ')} |`).join('\n'));
      console.log(
        `\nbody ${bodyBytes} bytes; emulator/bare throughput ratio ${(ratio * 100).toFixed(1)}% (target >= 50%)`,
      );
      console.log(
        `trace: server answered ${answered}, trace records ${traced} (footers api=${footerApi}) -> ${
          answered === traced && footerApi === traced ? 'none lost' : 'MISMATCH'
        }`,
      );
      console.log(
        `\nin-process handle(), 200 pollers x 1,000 conditional GETs under the VirtualClock, trace to file:\n` +
          `| latency model | requests | handle() req/s (wall) |\n| --- | --- | --- |\n` +
          `| on (60/250 ms log-normal, clock.sleep) | ${inVirtual.requests} | ${inVirtual.rps} |\n` +
          `| off | ${inBare.requests} | ${inBare.rps} |`,
      );
      return {
        bareRps: ref.rps,
        bareP99Ms: ref.p99,
        emulatorRps: emu.rps,
        emulatorP99Ms: emu.p99,
        ratio: Number(ratio.toFixed(3)),
        answered,
        traced,
        inProcessRpsWithLatency: inVirtual.rps,
        inProcessRpsNoLatency: inBare.rps,
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

export default bench;
