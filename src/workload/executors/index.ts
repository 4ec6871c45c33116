/**
 * Executors decide when sessions start (SPEC §5). Each is one function that schedules its work
 * on the run's clock and resolves when it has nothing more to start.
 */
import type { Clock } from '../../clock/clock.ts';
import type { Rng } from '../../rng.ts';
import type { Target } from '../../targets/types.ts';
import type { TraceSink } from '../../trace/writer.ts';
import type { MarkerBus } from '../markers.ts';
import type { Executor } from '../scenario.ts';
import type { SessionSpawner } from '../spawner.ts';
import { runArrivalRate } from './arrival-rate.ts';
import { runBatchSpawn } from './batch-spawn.ts';
import { runChaosWave } from './chaos-wave.ts';
import { runFixed } from './fixed.ts';
import { runNativeRuns } from './native-runs.ts';

export interface ExecutorContext {
  clock: Clock;
  trace: TraceSink;
  target: Target;
  spawner: SessionSpawner;
  markers: MarkerBus;
  signal: AbortSignal;
  /** Name used in labels and markers: `fixed`, `batch-spawn#2`, ... */
  name: string;
  /** This executor's own seeded stream (`executor:<name>`). */
  rng: Rng;
  /** The scenario's run time, for executors that must leave time to settle at the end. */
  durationMs: number;
}

export type ExecutorRunner<E extends Executor> = (executor: E, ctx: ExecutorContext) => Promise<void>;

const runners: { [K in Executor['type']]: ExecutorRunner<Extract<Executor, { type: K }>> } = {
  fixed: runFixed,
  'batch-spawn': runBatchSpawn,
  'arrival-rate': runArrivalRate,
  'native-runs': runNativeRuns,
  'chaos-wave': runChaosWave,
};

export function runExecutor(executor: Executor, ctx: ExecutorContext): Promise<void> {
  const runner = runners[executor.type] as ExecutorRunner<Executor>;
  return runner(executor, ctx);
}
