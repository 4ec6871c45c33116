import type { Executor } from '../scenario.ts';
import { paceOpen } from '../schedule.ts';
import type { ExecutorContext } from './index.ts';

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
  const offsets = Array.from({ length: executor.count }, (_, i) => i * gap);
  await paceOpen(offsets, { clock: ctx.clock, signal: ctx.signal }, (intended) => {
    starts.push(ctx.spawner.spawn(ctx.name, intended));
  });
  await Promise.all(starts);
  if (ctx.signal.aborted) return;
  ctx.markers.emit(`${ctx.name}.spawned`, { count: executor.count });
}
