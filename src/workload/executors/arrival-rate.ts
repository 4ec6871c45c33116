import type { SessionState } from '../../contract/types.ts';
import type { Executor } from '../scenario.ts';
import { arrivalTimes, paceOpen } from '../schedule.ts';
import { type ExecutorContext, ownsStart } from './context.ts';

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
  // A segment: its share of the arrivals (global index k), and of max-sessions (dealt the same way).
  const { segment } = ctx;
  const maxSessions = segment
    ? Math.floor(executor.maxSessions / segment.count) +
      (segment.index < executor.maxSessions % segment.count ? 1 : 0)
    : executor.maxSessions;
  // The global index of each owned start, in order: paceOpen may read offsets ahead of the start
  // it fires (timer slack), so the index is queued when read and taken when fired.
  const ownedIndexes: number[] = [];
  function* owned(all: Iterable<number>): Generator<number> {
    let k = 0;
    for (const offset of all) {
      if (ownsStart(ctx, k)) {
        ownedIndexes.push(k);
        yield offset;
      }
      k++;
    }
  }
  ctx.target.onSessionState((id: string, _from: SessionState | 'none', to: SessionState) => {
    if ((to === 'merged' || to === 'closed') && mine.delete(id)) alive--;
  });
  const schedule = arrivalTimes(executor.startRate, executor.stages);
  await paceOpen(
    segment ? owned(schedule) : schedule,
    { clock: ctx.clock, signal: ctx.signal, ...(segment ? { start: segment.startAt } : {}) },
    (intended) => {
      const current = segment ? ownedIndexes.shift()! : -1;
      if (alive >= maxSessions) {
        ctx.spawner.drop(ctx.name, 'max-sessions');
        return;
      }
      alive++;
      void (
        segment
          ? ctx.spawner.spawn(ctx.name, intended, undefined, segment.offset + current)
          : ctx.spawner.spawn(ctx.name, intended)
      ).then((id) => mine.add(id));
    },
  );
  if (ctx.signal.aborted) return;
  ctx.markers.emit(`${ctx.name}.done`);
}
