/**
 * A target for bench/provider.bench.ts, in its own process so the load generator does not share
 * its event loop: `emulator TRACE` (the provider emulator with token counting, limits off and a
 * trace writer, answering every request with a planned stream) or `bare PLANFILE` (node:http that
 * reads the body and plays back a captured answer: the same status, headers and chunk bytes at
 * the same offsets, in the same writes, with no logic). Prints one READY JSON line; SIGUSR2 marks
 * the start of the measured part; on SIGTERM prints one DONE JSON line with the CPU it spent since.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Session } from 'node:inspector';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { GCProfiler, getHeapStatistics } from 'node:v8';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { ProviderEmulator, startProviderServer } from '../src/provider/index.ts';
import { TraceWriter } from '../src/trace/writer.ts';
import { BENCH_PROFILE } from './provider.bench.ts';

const [kind, file] = process.argv.slice(2);
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
let cpuStart = process.cpuUsage();
/**
 * The main thread's CPU so far (Linux, from /proc in clock ticks of 10 ms; NaN elsewhere): the
 * rest of the process's is V8's helper threads (compiling, collecting) and libuv's.
 */
const mainThreadMicros = (): number => {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    // Fields after the command name (in parentheses) start at the third: utime and stime are the 14th and 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
};
let mainThreadStart = mainThreadMicros();
/** The CPU spent since the mark (every thread), of it the kernel's (the socket writes' system calls) and the main thread's. */
const cpuMicros = () => {
  const used = process.cpuUsage(cpuStart);
  return {
    cpuMicros: used.user + used.system,
    systemMicros: used.system,
    mainThreadMicros: mainThreadMicros() - mainThreadStart,
  };
};
let answered = 0;
let answeredAtMark = 0;
// Where a late first token comes from: the event loop held (by the target's own work or a
// collection), measured over the same part as the CPU.
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
let gcPauseMs = 0;
let gcMaxMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcPauseMs += entry.duration;
    gcMaxMs = Math.max(gcMaxMs, entry.duration);
  }
}).observe({ entryTypes: ['gc'] });
/**
 * What the heap was given since the mark: each collection's heap before it less the heap after
 * the one before (a steadier figure than the CPU on a busy machine, and what the collector's
 * work grows with).
 */
let gcProfiler: GCProfiler | undefined;
let heapAtMark = 0;
const allocatedBytes = (): number => {
  const collections = gcProfiler?.stop()?.statistics ?? [];
  let allocated = 0;
  let after = heapAtMark;
  for (const gc of collections) {
    allocated += gc.beforeGC.heapStatistics.usedHeapSize - after;
    after = gc.afterGC.heapStatistics.usedHeapSize;
  }
  return allocated + getHeapStatistics().used_heap_size - after;
};
/**
 * `BENCH_HEAP_PROF=DIR`: a sampling profile of every allocation over the measured part, the ones
 * collected since included, written to DIR/KIND.heapprofile when stopped.
 */
const HEAP_PROF_DIR = process.env.BENCH_HEAP_PROF;
const heapSession = HEAP_PROF_DIR ? new Session() : undefined;
heapSession?.connect();
const heapProfileWritten = (): Promise<void> =>
  new Promise((resolve) => {
    if (!heapSession) return resolve();
    heapSession.post('HeapProfiler.stopSampling', (error, result) => {
      if (!error) writeFileSync(join(HEAP_PROF_DIR!, `${kind}.heapprofile`), JSON.stringify(result.profile));
      resolve();
    });
  });
process.on('SIGUSR2', () => {
  heapSession?.post('HeapProfiler.enable', () =>
    heapSession.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as never),
  );
  cpuStart = process.cpuUsage();
  mainThreadStart = mainThreadMicros();
  heapAtMark = getHeapStatistics().used_heap_size;
  gcProfiler = new GCProfiler();
  gcProfiler.start();
  answeredAtMark = answered;
  loopDelay.reset();
  loopDelay.enable();
  gcPauseMs = 0;
  gcMaxMs = 0;
});
/** The loop's delay (p99, max) and the collections' pauses (sum, longest) since the mark, ms. */
const held = () => ({
  allocatedBytes: allocatedBytes(),
  loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
  loopDelayMaxMs: loopDelay.max / 1e6,
  gcPauseMs,
  gcMaxMs,
});

if (kind === 'emulator') {
  const clock = new RealClock();
  const trace = new TraceWriter(file!, {
    runId: 'bench',
    tool: { name: 'fleetbench', version: 'bench' },
    clock: 'real',
    seed: 1,
    scenario: { name: 'provider-bench', hash: null },
    epochMs: clock.epochMs,
    startedAt: new Date(clock.epochMs).toISOString(),
  });
  const emulator = new ProviderEmulator({
    clock,
    rng: new Rng(1),
    trace: {
      write: (record) => {
        answered += 1;
        trace.write(record);
      },
    },
    latency: BENCH_PROFILE,
  });
  const server = await startProviderServer({ emulator });
  print({ port: server.port });
  process.on('SIGTERM', async () => {
    const cpu = cpuMicros();
    const loop = held();
    await heapProfileWritten();
    await server.close();
    trace.close('completed', clock.now());
    print({ answered, measured: answered - answeredAtMark, ...cpu, ...loop });
    process.exit(0);
  });
} else {
  const plan = JSON.parse(readFileSync(file!, 'utf8')) as {
    status: number;
    headers: Record<string, string>;
    chunks: Array<{ atMs: number; data: string }>;
  };
  // Chunks due at the same time go out in one write, as the emulator sends them.
  const packets: Array<{ atMs: number; data: Buffer }> = [];
  for (const chunk of plan.chunks) {
    const last = packets[packets.length - 1];
    if (last && last.atMs === chunk.atMs) last.data = Buffer.concat([last.data, Buffer.from(chunk.data)]);
    else packets.push({ atMs: chunk.atMs, data: Buffer.from(chunk.data) });
  }
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const arrival = performance.now();
      // As the emulator sends it: the head with the first packet when that is due at once.
      res.writeHead(plan.status, plan.headers);
      let i = 0;
      const next = () => {
        const packet = packets[i++];
        if (!packet) {
          res.end();
          answered += 1;
          return;
        }
        const wait = arrival + packet.atMs - performance.now();
        if (wait <= 0) {
          res.write(packet.data);
          next();
        } else
          setTimeout(() => {
            res.write(packet.data);
            next();
          }, wait);
      };
      if ((packets[0]?.atMs ?? 0) > 0) res.flushHeaders();
      next();
    });
  });
  server.keepAliveTimeout = 65_000;
  server.on('connection', (socket) => socket.setNoDelay(true));
  server.listen(0, '127.0.0.1', () => print({ port: (server.address() as AddressInfo).port }));
  process.on('SIGTERM', () => {
    const cpu = cpuMicros();
    const loop = held();
    void heapProfileWritten().then(() => {
      print({ answered, measured: answered - answeredAtMark, ...cpu, ...loop });
      process.exit(0);
    });
  });
}
