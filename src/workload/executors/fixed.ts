import type { Executor } from '../scenario.ts';
import { paceOpen } from '../schedule.ts';
import { type ExecutorContext, ownsStart } from './context.ts';

/**
 * Spawn N sessions, all at once or at `spawn-rate` per second, then hold them. Starts follow the
 * schedule (open model): none waits for the target to answer the previous one.
 */
export async function runFixed(
  executor: Extract<Executor, { type: 'fixed' }>,
  ctx: ExecutorContext,
): Promise<void> {
  const gap = executor.spawnRate ? 1_000 / executor.spawnRate : 0;
  const starts: Promise<string>[] = [];
  // A segment: its share of the starts, each at its global time (segments only: index k).
  const indexes = Array.from({ length: executor.count }, (_, i) => i).filter((k) => ownsStart(ctx, k));
  const offsets = indexes.map((k) => k * gap);
  let next = 0;
  await paceOpen(
    offsets,
    { clock: ctx.clock, signal: ctx.signal, ...(ctx.segment ? { start: ctx.segment.startAt } : {}) },
    (intended) => {
      const k = indexes[next++]!;
      starts.push(
        ctx.segment
          ? ctx.spawner.spawn(ctx.name, intended, undefined, ctx.segment.offset + k)
          : ctx.spawner.spawn(ctx.name, intended),
      );
    },
  );
  await Promise.all(starts);
  if (ctx.signal.aborted) return;
  ctx.markers.emit(`${ctx.name}.spawned`, { count: executor.count });
}
