import type { Executor } from '../scenario.ts';
import type { ExecutorContext } from './index.ts';

/** Spawn N sessions, all at once or at `spawn-rate` per second, then hold them. */
export async function runFixed(
  executor: Extract<Executor, { type: 'fixed' }>,
  ctx: ExecutorContext,
): Promise<void> {
  const start = ctx.clock.now();
  const gap = executor.spawnRate ? 1_000 / executor.spawnRate : 0;
  for (let i = 0; i < executor.count; i++) {
    if (ctx.signal.aborted) return;
    const intended = start + i * gap;
    const wait = intended - ctx.clock.now();
    if (wait > 0) await ctx.clock.sleep(wait, ctx.signal).catch(() => undefined);
    if (ctx.signal.aborted) return;
    await ctx.spawner.spawn(ctx.name, intended);
  }
  ctx.markers.emit(`${ctx.name}.spawned`, { count: executor.count });
}
