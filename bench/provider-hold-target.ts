/**
 * A target for bench/provider-hold.bench.ts, in a process of its own (a cold one: the hold of a
 * first large prompt is measured as a fresh `provider serve` would have it, and the client's own
 * work is not in the figure): `now` (the served emulator as it is), `whole` (as now, but a large
 * body handed back from its worker whole, not only the fields the emulator reads) or `before`
 * (bodies parsed on the main thread and each request planned whole in one turn: the server before
 * issue 49's work on the hold). Prints one READY JSON line with its URL; SIGUSR2 starts measuring
 * the event loop's delay; on SIGTERM prints one DONE JSON line (the longest delay, the longest
 * collection).
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/real.ts';
import { ProviderEmulator, startProviderServer } from '../src/provider/index.ts';
import { MemorySink } from '../src/trace/writer.ts';

const kind = process.argv[2];
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
const emulator = new ProviderEmulator({ clock: new RealClock(), rng: new Rng(5), trace: new MemorySink() });
const server = await startProviderServer(
  kind === 'before'
    ? { emulator, offThreadFromBytes: Infinity, planInSteps: false }
    : { emulator, wholeLargeBodies: kind === 'whole' },
);
const delay = monitorEventLoopDelay({ resolution: 1 });
let gcMaxMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMaxMs = Math.max(gcMaxMs, entry.duration);
}).observe({ entryTypes: ['gc'] });
process.on('SIGUSR2', () => {
  delay.reset();
  delay.enable();
  gcMaxMs = 0;
});
process.on('SIGTERM', async () => {
  delay.disable();
  print({ done: true, holdMs: delay.max / 1e6, gcMaxMs });
  await server.close();
  process.exit(0);
});
print({ ready: true, url: server.url });
