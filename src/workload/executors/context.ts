/**
 * What every executor gets from the run (the engine builds it, executors/index.ts dispatches):
 * kept apart from the dispatcher so that an executor never imports the table that imports it.
 */

import type { Rng } from '../../base/rng.ts';
import type { Clock } from '../../clock/clock.ts';
import type { Target } from '../../contract/types.ts';
import type { TraceSink } from '../../trace/writer.ts';
import type { MarkerBus } from '../markers.ts';
import type { SessionSpawner } from '../spawner.ts';

export interface ExecutorContext {
  clock: Clock;
  trace: TraceSink;
  target: Target;
  spawner: SessionSpawner;
  markers: MarkerBus;
  signal: AbortSignal;
  /** Name used in labels and markers: `fixed`, `batch-spawn#2`, ... */
  name: string;
  /** Ends the run now (completed), for executors that know when they are done. */
  endRun: () => void;
  /** This executor's own seeded stream, forked from the run's seed by its name (`executor:<name>`). */
  rng: Rng;
  /** The scenario's run time, for executors that must leave time to settle at the end. */
  durationMs: number;
  /**
   * A live-run segment (docs/distributed.md): the executor deals its starts by their global
   * index k (k mod count = index are this segment's), numbers sessions from `offset` (the
   * starts of the executors before it), and counts its schedule from `startAt`, the run time it
   * was due to start, so every segment keeps the global timing.
   */
  segment?: ExecutorSegment;
}

export interface ExecutorSegment {
  index: number;
  count: number;
  offset: number;
  startAt: number;
}

/** Whether start k of the executor's schedule is this process's (always, without segments). */
export const ownsStart = (ctx: Pick<ExecutorContext, 'segment'>, k: number): boolean =>
  ctx.segment === undefined || k % ctx.segment.count === ctx.segment.index;
