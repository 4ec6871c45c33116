import type { SessionState } from '../../targets/types.ts';
import type { Executor } from '../scenario.ts';
import type { ExecutorContext } from './index.ts';

/**
 * Open model (k6's ramping-arrival-rate): sessions start on a schedule set by the rate, whatever
 * the target is doing. The rate (sessions per minute) moves linearly across each stage. A start
 * that finds `max-sessions` sessions alive is dropped and counted, never silently delayed.
 */
export async function runArrivalRate(
  executor: Extract<Executor, { type: 'arrival-rate' }>,
  ctx: ExecutorContext,
): Promise<void> {
  const start = ctx.clock.now();
  // Starts are not awaited (a slow target must not slow the schedule), so count them at once.
  const mine = new Set<string>();
  let alive = 0;
  ctx.target.onSessionState((id: string, _from: SessionState | 'none', to: SessionState) => {
    if ((to === 'merged' || to === 'closed') && mine.delete(id)) alive--;
  });
  // Walk the stages, emitting a start each time the integral of the rate crosses a whole number.
  let t = 0;
  let rate = executor.startRate / 60_000;
  let owed = 0;
  const step = 100;
  for (const stage of executor.stages) {
    const from = rate;
    const to = stage.rate / 60_000;
    for (let elapsed = 0; elapsed < stage.durationMs; elapsed += step) {
      const slice = Math.min(step, stage.durationMs - elapsed);
      const r0 = from + ((to - from) * elapsed) / stage.durationMs;
      const r1 = from + ((to - from) * (elapsed + slice)) / stage.durationMs;
      owed += ((r0 + r1) / 2) * slice;
      t += slice;
      // The epsilon keeps float error in the sum from losing the start that ends a stage.
      while (owed >= 1 - 1e-9) {
        owed -= 1;
        const intended = start + t;
        const wait = intended - ctx.clock.now();
        if (wait > 0) await ctx.clock.sleep(wait, ctx.signal).catch(() => undefined);
        if (ctx.signal.aborted) return;
        if (alive >= executor.maxSessions) {
          ctx.spawner.drop(ctx.name, 'max-sessions');
          continue;
        }
        alive++;
        void ctx.spawner.spawn(ctx.name, intended).then((id) => mine.add(id));
      }
    }
    rate = to;
  }
  ctx.markers.emit(`${ctx.name}.done`);
}
