import { sample } from '../../base/distribution.ts';
import type { Rng } from '../../base/rng.ts';
import type { RestartKind } from '../../contract/types.ts';
import type { Labels } from '../../trace/schema.ts';
import { RunDriver, requireRuns } from '../run-driver.ts';
import type { Executor } from '../scenario.ts';
import type { ExecutorContext } from './context.ts';

type Wave = Extract<Executor, { type: 'chaos-wave' }>;
type WaveFault =
  | { type: 'restart'; kind: RestartKind }
  | { type: 'provider-crash' }
  | { type: 'provider-slowdown'; factor: number; durationMs: number };

/** Faults kept away from the end of the run, so the last recovery is measured whole. */
export const CHAOS_SETTLE_MS = 90_000;

/**
 * The seeded fault sequence: `restarts` restarts (every listed kind at least once when there
 * are enough, the rest picked at random), with `provider-faults` provider crashes and slowdowns
 * inserted at random places.
 */
export function chaosSequence(wave: Wave, rng: Rng): WaveFault[] {
  const kinds: RestartKind[] = [];
  for (let i = 0; i < wave.restarts; i++)
    kinds.push(i < wave.kinds.length ? wave.kinds[i]! : rng.pick(wave.kinds));
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  const sequence: WaveFault[] = kinds.map((kind) => ({ type: 'restart', kind }));
  for (let i = 0; i < wave.providerFaults; i++) {
    const fault: WaveFault = rng.chance(0.5)
      ? { type: 'provider-crash' }
      : { type: 'provider-slowdown', factor: rng.uniform(1.3, 1.6), durationMs: rng.uniform(15_000, 30_000) };
    sequence.splice(1 + Math.floor(rng.next() * sequence.length), 0, fault);
  }
  return sequence;
}

/**
 * A chaos wave (docs/scenarios.md#native-runs-and-chaos-waves): C concurrent long runs of turns (a finished run is followed by a warm
 * one on the same session), and from `first-fault` on a seeded sequence of restarts of mixed
 * kinds and provider faults, `gap` apart (a restart's gap counts from its ready). Each fault
 * writes `fault.start` / `fault.end` (labels `type`, `source`, `index`, `kind`). Faults that
 * would land in the last 90 s of the run are skipped and counted (`chaos.skipped`), so every
 * recovery is measured whole. Markers: `<name>.started`, `<name>.faults.done`.
 */
export async function runChaosWave(wave: Wave, ctx: ExecutorContext): Promise<void> {
  requireRuns(ctx.target, wave.type);
  const { clock, target } = ctx;
  if (wave.restarts > 0 && !target.restart) throw new Error(`chaos-wave: '${target.name}' cannot restart`);
  const driver = new RunDriver(clock, target, ctx.signal);
  const start = clock.now();
  const sequence = chaosSequence(wave, ctx.rng.fork('sequence'));
  const plan = {
    adapter: wave.adapter,
    runs: Number.POSITIVE_INFINITY,
    turns: wave.turns,
    think: wave.think,
  };
  for (let i = 0; i < wave.concurrency; i++) {
    const session = await ctx.spawner.spawn(ctx.name, start);
    driver.start(session, plan, ctx.rng.fork(`session:${i}`));
  }
  ctx.markers.emit(`${ctx.name}.started`, { concurrency: wave.concurrency, adapter: wave.adapter });
  // A session whose runs cannot go on fails the wave, while faults are still coming or after.
  await Promise.race([runFaults(wave, ctx, sequence), driver.failure]);
  await driver.settled();
}

/** The wave's faults, `gap` apart, until the sequence is done or the run stops. */
async function runFaults(wave: Wave, ctx: ExecutorContext, sequence: WaveFault[]): Promise<void> {
  const { clock, trace, target } = ctx;
  const gaps = ctx.rng.fork('gaps');

  const sleep = (ms: number) =>
    clock.sleep(ms, ctx.signal).then(
      () => true,
      () => false,
    );
  if (!(await sleep(wave.firstFaultMs))) return;
  let done = 0;
  for (const [index, fault] of sequence.entries()) {
    if (ctx.durationMs - clock.now() < CHAOS_SETTLE_MS) {
      trace.write({
        kind: 'event',
        name: 'chaos.skipped',
        t: clock.now(),
        labels: { source: ctx.name },
        data: { faults: sequence.length - index, reason: 'too close to the end of the run' },
      });
      break;
    }
    const labels: Labels = { type: fault.type, source: ctx.name, index };
    const event = (name: string, extra: Labels = {}) =>
      trace.write({ kind: 'event', name, t: clock.now(), labels: { ...labels, ...extra } });
    if (fault.type === 'restart') {
      event('fault.start', { kind: fault.kind });
      const { outageMs } = await target.restart!(fault.kind);
      event('fault.end', { kind: fault.kind, outageMs: Math.round(outageMs) });
    } else if (fault.type === 'provider-crash') {
      event('fault.start', { adapter: wave.adapter });
      await target.providerFault!({ type: 'crash', adapter: wave.adapter, count: 1 });
    } else {
      event('fault.start', { adapter: wave.adapter, factor: Math.round(fault.factor * 100) / 100 });
      await target.providerFault!({
        type: 'slowdown',
        adapter: wave.adapter,
        factor: fault.factor,
        durationMs: fault.durationMs,
      });
      clock.setTimeout(() => event('fault.end', { adapter: wave.adapter }), fault.durationMs);
    }
    done++;
    if (!(await sleep(sample(wave.gap, gaps)))) return;
  }
  ctx.markers.emit(`${ctx.name}.faults.done`, { faults: done });
}
