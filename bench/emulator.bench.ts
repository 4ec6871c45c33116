/**
 * The GitHub emulator under load, side by side with bare node:http replaying the same response
 * (status, headers, body bytes):
 * autocannon against an authenticated `GET /repos/{owner}/{repo}/pulls` with quota accounting
 * and trace recording on, then a check that every answered request became a trace record.
 * Also the guard poll over TLS with HTTP/2 (`github serve --tls`) against a bare node:http2
 * server replaying the same answer, with a small node:http2 load generator (autocannon speaks
 * HTTP/1.1 only), and in-process handle() throughput under the VirtualClock (what virtual-time
 * runs use).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, constants } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Rng } from '../src/base/rng.ts';
import { VirtualClock } from '../src/clock/index.ts';
import { GitHubEmulator, generateSelfSignedCert } from '../src/github/index.ts';
import { readTrace, TraceWriter } from '../src/trace/index.ts';
import { envInteger } from './env.ts';
import type { Bench } from './run.ts';

const DURATION_S = envInteger('BENCH_DURATION', 6, 1, 3_600);
/** Emulator and bare alternate this many times, so background load hits both alike. */
const ROUNDS = envInteger('BENCH_ROUNDS', 4, 1, 100);
const CONNECTIONS = 32;
/** The full list (5 PRs, about 25 KB) and the guard poll a control plane repeats (about 5 KB). */
const GUARD = '/repos/fleetbench/repo-1/pulls?state=open&sort=updated&direction=desc&per_page=1';
const REQUESTS = [
  { name: 'list pulls', path: '/repos/fleetbench/repo-1/pulls', conditional: false },
  { name: 'guard (per_page=1)', path: GUARD, conditional: false },
  // What a guarded poller sends once it holds the ETag: If-None-Match, answered 304 (free).
  { name: 'guard 304 (If-None-Match)', path: GUARD, conditional: true },
] as const;
/** Issue 17 target 3: emulator CPU per 304 at most this many times bare node:http's. */
const NOT_MODIFIED_CPU_TARGET = 1.5;
/** BENCH_ONLY=304 (or list, guard, h2, inproc; comma-separated) runs only those parts. */
const ONLY = process.env.BENCH_ONLY?.split(',');
const wanted = (part: string) => ONLY === undefined || ONLY.includes(part);
const target = fileURLToPath(new URL('./emulator-target.ts', import.meta.url));

interface Target {
  child: ChildProcess;
  lines: AsyncIterator<string>;
  ready: { port: number; token?: string };
}

/** With a TLS directory the targets serve HTTP/2 over TLS (and the load is HTTP/2). */
let tlsDir: string | undefined;

async function start(kind: 'emulator' | 'bare', file: string): Promise<Target> {
  const child = spawn(process.execPath, ['--import', 'tsx', target, kind, file], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: tlsDir ? { ...process.env, BENCH_TLS_DIR: tlsDir } : process.env,
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error(`${kind} target exited before it was ready`);
  return { child, lines, ready: JSON.parse(first.value) };
}

interface Done {
  answered: number;
  traced?: number;
  /** Requests answered and CPU µs spent by the server during the measured run (after warm-up). */
  measured: number;
  cpuMicros: number;
}

async function stop(t: Target): Promise<Done> {
  t.child.kill('SIGTERM');
  const line = await t.lines.next();
  if (line.done) throw new Error('target exited without reporting');
  return JSON.parse(line.value);
}

type Result = Pick<Awaited<ReturnType<typeof autocannon>>, 'duration' | 'non2xx' | 'errors'> & {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
};

/**
 * HTTP/2 load: SESSIONS connections, each keeping CONNECTIONS / SESSIONS streams in flight (so as
 * many requests outstanding as autocannon's connections), for `seconds`.
 */
async function h2load(port: number, path: string, headers: Record<string, string>, seconds: number) {
  const SESSIONS = 4;
  const ca = tlsDir ? readFileSync(join(tlsDir, 'cert.pem')) : undefined;
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: SESSIONS }, async () => {
      const session = connect(`https://127.0.0.1:${port}`, { ca });
      session.on('error', () => errors++);
      const one = () =>
        new Promise<void>((resolve) => {
          const t0 = performance.now();
          const stream = session.request({ [constants.HTTP2_HEADER_PATH]: path, ...headers });
          stream.on('response', (h) => {
            if (Number(h[constants.HTTP2_HEADER_STATUS]) >= 300) non2xx++;
          });
          stream.resume();
          stream.on('end', () => {
            latencies.push(performance.now() - t0);
            resolve();
          });
          stream.on('error', () => {
            errors++;
            resolve();
          });
          stream.end();
        });
      await Promise.all(
        Array.from({ length: CONNECTIONS / SESSIONS }, async () => {
          while (performance.now() < until) await one();
        }),
      );
      session.close();
    }),
  );
  const duration = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
  return {
    duration,
    non2xx,
    errors,
    requests: { total: latencies.length, average: latencies.length / duration },
    latency: { p50: at(0.5), p99: at(0.99) },
  } satisfies Result;
}

async function load(t: Target, path: string, headers: Record<string, string>): Promise<Result> {
  if (tlsDir) {
    await h2load(t.ready.port, path, headers, 2); // warm-up (JIT)
    t.child.kill('SIGUSR2');
    return h2load(t.ready.port, path, headers, DURATION_S);
  }
  const url = `http://127.0.0.1:${t.ready.port}${path}`;
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 }); // warm-up (JIT)
  t.child.kill('SIGUSR2'); // start the server's CPU count
  return autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION_S });
}

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

interface Comparison {
  name: string;
  bodyBytes: number;
  emu: ReturnType<typeof summarize>;
  ref: ReturnType<typeof summarize>;
  /** Server CPU µs per request answered (user + system), the figure least bent by a busy machine. */
  emuCpuUs: number;
  refCpuUs: number;
  answered: number;
  traced: number;
  footerApi: number;
}

/** The request's headers: the token, and with `conditional` the ETag of a first GET. */
async function requestHeaders(
  t: Target,
  path: string,
  conditional: boolean,
): Promise<Record<string, string>> {
  const headers: Record<string, string> = { authorization: `token ${t.ready.token}` };
  if (!conditional) return headers;
  const first = await fetch(`http://127.0.0.1:${t.ready.port}${path}`, { headers });
  await first.arrayBuffer();
  const etag = first.headers.get('etag');
  if (etag === null) throw new Error(`${path} answered without an ETag`);
  return { ...headers, 'if-none-match': etag };
}

/** Emulator and bare node:http on one request, in rounds that alternate which goes first. */
async function compare(dir: string, name: string, path: string, conditional = false): Promise<Comparison> {
  const emuRuns: Result[] = [];
  const refRuns: Result[] = [];
  let answered = 0;
  let traced = 0;
  let footerApi = 0;
  const emuCpu = { micros: 0, requests: 0 };
  const refCpu = { micros: 0, requests: 0 };
  // What bare Node replays: the emulator's own answer (headers and body), captured once.
  const bodyPath = join(dir, 'response.json');
  // Probed over plain HTTP: the same answer whichever protocol carries it.
  const tls = tlsDir;
  tlsDir = undefined;
  const probe = await start('emulator', join(dir, 'probe.jsonl'));
  const probeHeaders = await requestHeaders(probe, path, conditional);
  const sample = await fetch(`http://127.0.0.1:${probe.ready.port}${path}`, { headers: probeHeaders });
  if (sample.status !== (conditional ? 304 : 200))
    throw new Error(`probe of ${path} answered ${sample.status}`);
  const body = Buffer.from(await sample.arrayBuffer());
  const headers: Record<string, string> = {};
  sample.headers.forEach((value, key) => {
    // Node adds these itself on every response.
    if (key !== 'date' && key !== 'connection' && key !== 'keep-alive') headers[key] = value;
  });
  writeFileSync(bodyPath, JSON.stringify({ status: sample.status, headers, body: body.toString('base64') }));
  await stop(probe);
  tlsDir = tls;
  const runEmulator = async (round: number) => {
    const tracePath = join(dir, `emulator-${round}.jsonl`);
    const emulator = await start('emulator', tracePath);
    // Each emulator process has its own token, so its own ETags: asked for before the load.
    emuRuns.push(await load(emulator, path, await requestHeaders(emulator, path, conditional)));
    const done = await stop(emulator);
    emuCpu.micros += done.cpuMicros;
    emuCpu.requests += done.measured;
    const { records, stats } = await readTrace(tracePath);
    answered += done.answered;
    traced += records.filter((r) => r.kind === 'api').length;
    footerApi += stats.footer?.counts.api ?? 0;
  };
  const runBare = async () => {
    const bare = await start('bare', bodyPath);
    refRuns.push(await load(bare, path, {}));
    const done = await stop(bare);
    refCpu.micros += done.cpuMicros;
    refCpu.requests += done.measured;
  };
  // Whichever runs second in a round tends to be faster here; alternating cancels that out.
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      await runEmulator(round);
      await runBare();
    } else {
      await runBare();
      await runEmulator(round);
    }
  }
  return {
    name,
    bodyBytes: body.length,
    emu: summarize(emuRuns),
    ref: summarize(refRuns),
    emuCpuUs: emuCpu.micros / emuCpu.requests,
    refCpuUs: refCpu.micros / refCpu.requests,
    answered,
    traced,
    footerApi,
  };
}

const bench: Bench = {
  name: 'emulator',
  description: `GitHub emulator vs bare node:http, autocannon ${CONNECTIONS} connections x ${DURATION_S} s x ${ROUNDS} alternating rounds`,
  async run() {
    const dir = mkdtempSync(join(tmpdir(), 'fleetbench-bench-'));
    try {
      const comparisons: Comparison[] = [];
      const parts = ['list', 'guard', '304'];
      for (const [i, r] of REQUESTS.entries())
        if (wanted(parts[i]!)) comparisons.push(await compare(dir, r.name, r.path, r.conditional));
      // The guard poll again over TLS + HTTP/2, both servers alike: reported separately.
      if (wanted('h2')) {
        generateSelfSignedCert(join(dir, 'tls'));
        tlsDir = join(dir, 'tls');
        comparisons.push(await compare(dir, 'h2 guard (TLS, HTTP/2)', GUARD));
        tlsDir = undefined;
      }
      const inVirtual = wanted('inproc') ? await inProcess(dir, true) : { rps: 0, requests: 0 };
      const inBare = wanted('inproc') ? await inProcess(dir, false) : { rps: 0, requests: 0 };

      const rows = [
        [
          'request',
          'body bytes',
          'server',
          'req/s',
          'p50 ms',
          'p99 ms',
          'requests',
          'non-2xx',
          'errors',
          'req/s per round',
          'server CPU µs/req',
          'emulator / bare req/s',
          'bare / emulator CPU',
        ],
        ['---', '---', '---', '---', '---', '---', '---', '---', '---', '---', '---', '---', '---'],
      ];
      const figures: Record<string, number | string> = {};
      for (const c of comparisons) {
        const ratio = c.emu.rps / c.ref.rps;
        const cpuRatio = c.refCpuUs / c.emuCpuUs;
        for (const [label, x, cpu] of [
          ['bare node:http', c.ref, c.refCpuUs],
          ['fleetbench emulator', c.emu, c.emuCpuUs],
        ] as const) {
          rows.push(
            [
              c.name,
              c.bodyBytes,
              label,
              x.rps,
              x.p50,
              x.p99,
              x.requests,
              x.non2xx,
              x.errors,
              x.perRound,
              cpu.toFixed(1),
              label === 'bare node:http' ? '' : `${(ratio * 100).toFixed(1)}%`,
              label === 'bare node:http' ? '' : `${(cpuRatio * 100).toFixed(1)}%`,
            ].map(String),
          );
        }
        const lost = c.answered === c.traced && c.footerApi === c.traced ? 'none lost' : 'MISMATCH';
        console.log(
          `${c.name}: emulator answered ${c.answered}, trace records ${c.traced} (footers api=${c.footerApi}): ${lost}`,
        );
        const key = c.name.startsWith('guard 304') ? 'guard304' : c.name.split(' ')[0]!;
        Object.assign(figures, {
          [`${key}BareRps`]: c.ref.rps,
          [`${key}BareP99Ms`]: c.ref.p99,
          [`${key}EmulatorRps`]: c.emu.rps,
          [`${key}EmulatorP99Ms`]: c.emu.p99,
          [`${key}Ratio`]: Number(ratio.toFixed(3)),
          [`${key}BareCpuUsPerReq`]: Number(c.refCpuUs.toFixed(1)),
          [`${key}EmulatorCpuUsPerReq`]: Number(c.emuCpuUs.toFixed(1)),
          [`${key}CpuRatio`]: Number(cpuRatio.toFixed(3)),
          [`${key}Answered`]: c.answered,
          [`${key}Traced`]: c.traced,
        });
      }
      console.log(
        `\n${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}\n\n(target: emulator >= 50% of bare. "bare / emulator CPU" is the throughput ratio each would reach if the server alone were the bottleneck.)`,
      );
      const notModified = comparisons.find((c) => c.name.startsWith('guard 304'));
      if (notModified !== undefined) {
        const times = notModified.emuCpuUs / notModified.refCpuUs;
        console.log(
          `\nguard 304 server CPU: emulator ${notModified.emuCpuUs.toFixed(1)} µs vs bare node:http ${notModified.refCpuUs.toFixed(1)} µs per request = ${times.toFixed(2)}× (target ≤ ${NOT_MODIFIED_CPU_TARGET}×: ${times <= NOT_MODIFIED_CPU_TARGET ? 'met' : 'not met'}); records ${notModified.traced} of ${notModified.answered} answered (${notModified.traced === notModified.answered ? 'none lost' : 'LOST'})`,
        );
        figures['304EmulatorOverBareCpu'] = Number(times.toFixed(2));
        figures['304Target'] = times <= NOT_MODIFIED_CPU_TARGET ? 'met' : 'not met';
      }
      if (wanted('inproc'))
        console.log(
          `\nin-process handle(), 200 pollers x 1,000 conditional GETs under the VirtualClock, trace to file:\n` +
            `| latency model | requests | handle() req/s (wall) |\n| --- | --- | --- |\n` +
            `| on (60/250 ms log-normal, clock.sleep) | ${inVirtual.requests} | ${inVirtual.rps} |\n` +
            `| off | ${inBare.requests} | ${inBare.rps} |`,
        );
      return { ...figures, inProcessRpsWithLatency: inVirtual.rps, inProcessRpsNoLatency: inBare.rps };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

export default bench;
