import type { SessionState } from '../../targets/types.ts';
import type { Executor } from '../scenario.ts';
import { arrivalTimes, paceOpen } from '../schedule.ts';
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
  // Starts are not awaited (a slow target must not slow the schedule), so count them at once.
  const mine = new Set<string>();
  let alive = 0;
  ctx.target.onSessionState((id: string, _from: SessionState | 'none', to: SessionState) => {
    if ((to === 'merged' || to === 'closed') && mine.delete(id)) alive--;
  });
  await paceOpen(
    arrivalTimes(executor.startRate, executor.stages),
    { clock: ctx.clock, signal: ctx.signal },
    (intended) => {
      if (alive >= executor.maxSessions) {
        ctx.spawner.drop(ctx.name, 'max-sessions');
        return;
      }
      alive++;
      void ctx.spawner.spawn(ctx.name, intended).then((id) => mine.add(id));
    },
  );
  if (ctx.signal.aborted) return;
  ctx.markers.emit(`${ctx.name}.done`);
}
