import { sample } from '../../base/distribution.ts';
import { RunDriver, requireRuns } from '../run-driver.ts';
import type { Executor } from '../scenario.ts';
import { type ExecutorContext, ownsStart } from './context.ts';

/**
 * Plain native runs: `count` sessions, each starting (after a seeded stagger) `runs-per-session`
 * runs one after another: the first starts cold, the next ones resume the saved provider
 * session (warm). Measures first activity and boot without faults; emits `<name>.done`.
 */
export async function runNativeRuns(
  executor: Extract<Executor, { type: 'native-runs' }>,
  ctx: ExecutorContext,
): Promise<void> {
  requireRuns(ctx.target, executor.type);
  const driver = new RunDriver(ctx.clock, ctx.target, ctx.signal);
  const start = ctx.segment?.startAt ?? ctx.clock.now();
  for (let i = 0; i < executor.count; i++) {
    // A segment runs its share (global index i); each session's stream is forked by i, so its
    // stagger and runs are those it has in one process.
    if (!ownsStart(ctx, i)) continue;
    const rng = ctx.rng.fork(`session:${i}`);
    const intended = start + sample(executor.stagger, rng);
    const wait = intended - ctx.clock.now();
    if (wait > 0) await ctx.clock.sleep(wait, ctx.signal).catch(() => undefined);
    if (ctx.signal.aborted || driver.failed) break;
    const session = ctx.segment
      ? await ctx.spawner.spawn(ctx.name, intended, undefined, ctx.segment.offset + i)
      : await ctx.spawner.spawn(ctx.name, intended);
    driver.start(
      session,
      {
        adapter: executor.adapter,
        runs: executor.runsPerSession,
        turns: executor.turns,
        think: executor.think,
      },
      rng,
    );
  }
  await driver.settled();
  if (!ctx.signal.aborted) ctx.markers.emit(`${ctx.name}.done`, { runs: driver.started });
}
