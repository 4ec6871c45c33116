/**
 * The load generator of bench/live.bench.ts, in its own process so its CPU time is its own:
 * `live-child RATE SECONDS URL TOKEN PATH TRACE [--pipelining N] [--connections N] [--otlp URL]`
 * drives GET PATH on the emulator at RATE operations per second for SECONDS, open model, with
 * the engine's own pacing (arrivalTimes + paceOpen on a RealClock, what the arrival-rate executor
 * runs), writes one span per operation to a trace (as a run does) and prints one JSON line: start
 * lag and response-time percentiles, operations, errors, spans written, and the CPU seconds of
 * the load window.
 *
 * - `--pipelining N`: the transport's pipelining depth (GETs started together share a
 *   connection and a write); default 1, one request per connection at a time.
 * - `--connections N`: N clients, each with one keep-alive connection of its own, taking the
 *   operations in turn (what N sessions polling through their own clients look like, and what
 *   `hey -c N` does); default one client whose pool opens what the rate needs.
 * - `--otlp URL` also sends every trace record there, as `--otlp-export` does
 *   (src/live/otlp-export.ts), to measure what exporting costs the schedule.
 * - `--timer-slack MS`: the pacer's timer slack (PaceOptions.timerSlackMs; default TIMER_SLACK_MS).
 * - `--warmup S`: also reports the CPU and the answers in the first S seconds of the schedule
 *   (`first`: V8 still compiling the request path) and after them (`steady`: the cost per
 *   request once the JIT has compiled it); default 2.
 */
import { LatencyHistogram } from '../src/analyze/histogram.ts';
import { RealClock } from '../src/clock/real.ts';
import { HttpTransport } from '../src/github/transport.ts';
import type { EmulatorResponse } from '../src/github/types.ts';
import { TraceWriter } from '../src/trace/writer.ts';
import { arrivalTimes, paceOpen } from '../src/workload/schedule.ts';

const [rateText, secondsText, url, token, path, tracePath, ...flags] = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = flags.indexOf(name);
  return i >= 0 ? flags[i + 1] : undefined;
};
const rate = Number(rateText);
const durationMs = Number(secondsText) * 1000;
const pipelining = Number(flag('--pipelining') ?? 1);
const connections = Number(flag('--connections') ?? 0);
const otlpUrl = flag('--otlp');
const warmupMs = Number(flag('--warmup') ?? 2) * 1000;
const timerSlack = flag('--timer-slack');
const clock = new RealClock();
const trace = new TraceWriter(tracePath!, {
  runId: 'live-bench',
  tool: { name: 'fleetbench', version: 'bench' },
  clock: 'real',
  seed: null,
  scenario: { name: 'live-bench', hash: null },
  epochMs: clock.epochMs,
  startedAt: new Date(clock.epochMs).toISOString(),
});
// Loaded only when asked for: its codecs are most of what this process would load at start.
const exporter = otlpUrl
  ? new (await import('../src/live/otlp-export.ts')).OtlpExporter({
      url: otlpUrl,
      clock,
      runId: 'live-bench',
      scenario: 'live-bench',
    })
  : undefined;
if (exporter) trace.tap((record) => exporter.add(record));
const clients =
  connections > 0
    ? Array.from({ length: connections }, () => new HttpTransport(url!, { token, maxSockets: 1 }))
    : [new HttpTransport(url!, { token, maxSockets: 64, pipelining })];
const request = { method: 'GET', path: path!, headers: {} };
const lag = new LatencyHistogram();
const latency = new LatencyHistogram();
let issued = 0;
let settled = 0;
let errors = 0;
const signal = new AbortController().signal;

/** Answers after the wait for the last ones (below) are not counted: the trace is closed by then. */
let closed = false;

/** One operation: its span is written when the answer (or the failure) is in. */
function operation(intended: number, started: number): void {
  const lagMs = started > intended ? started - intended : 0;
  lag.record(lagMs);
  const client = clients[issued++ % clients.length]!;
  client.request(request).then(
    (res: EmulatorResponse) => {
      if (closed) return;
      settled++;
      if (res.status !== 200) errors++;
      const dur = clock.now() - started;
      latency.record(dur);
      trace.write({
        kind: 'span',
        name: 'bench.op',
        t: intended,
        dur,
        labels: { executor: 'arrival-rate', status: res.status },
        data: { lagMs },
      });
    },
    () => {
      if (closed) return;
      settled++;
      errors++;
      trace.write({
        kind: 'span',
        name: 'bench.op',
        t: intended,
        dur: clock.now() - started,
        outcome: 'error',
        labels: { executor: 'arrival-rate' },
        data: { lagMs },
      });
    },
  );
}

const cpu0 = process.cpuUsage();
const t0 = performance.now();
let steady: { cpu: NodeJS.CpuUsage; settled: number; errors: number } | undefined;
let first: { completed: number; cpuS: number } | undefined;
if (warmupMs < durationMs)
  setTimeout(() => {
    steady = { cpu: process.cpuUsage(), settled, errors };
    const spent = process.cpuUsage(cpu0);
    first = { completed: settled - errors, cpuS: (spent.user + spent.system) / 1e6 };
  }, warmupMs);
await paceOpen(
  arrivalTimes(rate * 60, [{ durationMs, rate: rate * 60 }]),
  { clock, signal, ...(timerSlack !== undefined ? { timerSlackMs: Number(timerSlack) } : {}) },
  operation,
);
const deadline = performance.now() + 10_000;
while (settled < issued && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
const cpu = process.cpuUsage(cpu0);
const wallS = (performance.now() - t0) / 1000;
const steadyCpu = steady ? process.cpuUsage(steady.cpu) : undefined;
closed = true;
await exporter?.close();
trace.close('completed');
for (const client of clients) client.close();
process.stdout.write(
  `${JSON.stringify({
    operations: issued,
    completed: settled - errors,
    errors,
    spans: trace.counts.span,
    wallS,
    cpuS: (cpu.user + cpu.system) / 1e6,
    userS: cpu.user / 1e6,
    systemS: cpu.system / 1e6,
    lag: lag.percentiles(),
    latency: latency.percentiles(),
    exported: exporter?.stats,
    first: first ? { untilS: warmupMs / 1000, ...first } : undefined,
    steady:
      steady && steadyCpu
        ? {
            afterS: warmupMs / 1000,
            completed: settled - steady.settled - (errors - steady.errors),
            cpuS: (steadyCpu.user + steadyCpu.system) / 1e6,
          }
        : undefined,
  })}\n`,
);
