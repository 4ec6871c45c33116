/**
 * The load generator of bench/live.bench.ts, in its own process so its CPU time is its own:
 * `tsx bench/live-child.ts RATE SECONDS URL TOKEN PATH TRACE` drives GET PATH on the emulator
 * at RATE operations per second for SECONDS, open model, with the engine's own pacing
 * (arrivalTimes + paceOpen on a RealClock, what the arrival-rate executor runs), writes one
 * span per operation to a trace (as a run does) and prints one JSON line: start lag and
 * response-time percentiles, operations, errors, and the CPU seconds of the load window.
 * An 7th argument OTLP_URL also sends every trace record there, as `--otlp-export` does
 * (src/live/otlp-export.ts), to measure what exporting costs the schedule.
 */
import { LatencyHistogram } from '../src/analyze/histogram.ts';
import { RealClock } from '../src/clock/real.ts';
import { HttpTransport } from '../src/github/transport.ts';
import { OtlpExporter } from '../src/live/otlp-export.ts';
import { TraceWriter } from '../src/trace/writer.ts';
import { arrivalTimes, paceOpen } from '../src/workload/schedule.ts';

const [rateText, secondsText, url, token, path, tracePath, otlpUrl] = process.argv.slice(2);
const rate = Number(rateText);
const durationMs = Number(secondsText) * 1000;
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
const exporter = otlpUrl
  ? new OtlpExporter({ url: otlpUrl, clock, runId: 'live-bench', scenario: 'live-bench' })
  : undefined;
if (exporter) trace.tap((record) => exporter.add(record));
const transport = new HttpTransport(url!, { token, maxSockets: 64 });
const lag = new LatencyHistogram();
const latency = new LatencyHistogram();
let issued = 0;
let settled = 0;
let errors = 0;
const signal = new AbortController().signal;

const cpu0 = process.cpuUsage();
const t0 = performance.now();
await paceOpen(arrivalTimes(rate * 60, [{ durationMs, rate: rate * 60 }]), { clock, signal }, (intended) => {
  const started = clock.now();
  lag.record(Math.max(0, started - intended));
  issued++;
  transport.request({ method: 'GET', path: path!, headers: {} }).then(
    (res) => {
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
        data: { lagMs: Math.max(0, started - intended) },
      });
    },
    () => {
      settled++;
      errors++;
    },
  );
});
const deadline = performance.now() + 10_000;
while (settled < issued && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
const cpu = process.cpuUsage(cpu0);
const wallS = (performance.now() - t0) / 1000;
await exporter?.close();
trace.close('completed');
transport.close();
process.stdout.write(
  `${JSON.stringify({
    operations: issued,
    completed: settled - errors,
    errors,
    wallS,
    cpuS: (cpu.user + cpu.system) / 1e6,
    userS: cpu.user / 1e6,
    systemS: cpu.system / 1e6,
    lag: lag.percentiles(),
    latency: latency.percentiles(),
    exported: exporter?.stats,
  })}\n`,
);
