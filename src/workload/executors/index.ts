/**
 * Executors decide when sessions start (docs/scenarios.md#executors). Each is one function that schedules its work
 * on the run's clock and resolves when it has nothing more to start.
 */

import { FleetbenchError } from '../../base/errors.ts';
import { hasCapability, type Target, type TargetCapability } from '../../contract/types.ts';
import type { Executor } from '../scenario.ts';
import { arrivalTimes } from '../schedule.ts';
import { runArrivalRate } from './arrival-rate.ts';
import { runBatchSpawn } from './batch-spawn.ts';
import { runChaosWave } from './chaos-wave.ts';
import type { ExecutorContext } from './context.ts';
import { runFixed } from './fixed.ts';
import { runNativeRuns } from './native-runs.ts';
import { runTurnover } from './turnover.ts';

/**
 * How many starts an executor's schedule has (sessions it would create with nothing dropped):
 * a segment numbers an executor's sessions after those of the executors before it.
 */
export function startsOf(executor: Executor): number {
  switch (executor.type) {
    case 'arrival-rate': {
      let n = 0;
      for (const _ of arrivalTimes(executor.startRate, executor.stages)) n++;
      return n;
    }
    case 'chaos-wave':
      return executor.concurrency;
    case 'turnover':
      return 0;
    default:
      return executor.count;
  }
}

/** Executors whose starts are dealt to segments; the others are refused there (run-segment.ts). */
export const SEGMENTED_EXECUTORS: ReadonlySet<Executor['type']> = new Set([
  'fixed',
  'batch-spawn',
  'arrival-rate',
  'native-runs',
]);

export type ExecutorRunner<E extends Executor> = (executor: E, ctx: ExecutorContext) => Promise<void>;

const runners: { [K in Executor['type']]: ExecutorRunner<Extract<Executor, { type: K }>> } = {
  fixed: runFixed,
  'batch-spawn': runBatchSpawn,
  'arrival-rate': runArrivalRate,
  turnover: runTurnover,
  'native-runs': runNativeRuns,
  'chaos-wave': runChaosWave,
};

const RUNS: TargetCapability[] = ['startRun', 'sendInput', 'endRun', 'onRunNotice'];

/** What a target must support for an executor (a chaos wave: also what its faults need). */
function needs(executor: Executor): TargetCapability[] {
  switch (executor.type) {
    case 'turnover':
      return ['createActor', 'parkActor', 'wakeActor', 'actorStep', 'actorCounts'];
    case 'native-runs':
      return RUNS;
    case 'chaos-wave':
      return [
        ...RUNS,
        ...(executor.restarts > 0 ? (['restart'] as const) : []),
        ...(executor.providerFaults > 0 ? (['providerFault'] as const) : []),
      ];
    default:
      return [];
  }
}

/** Fails up front when the target cannot do what an executor needs. */
export function checkExecutors(executors: readonly Executor[], target: Target): void {
  for (const executor of executors) {
    const missing = needs(executor).filter((c) => !hasCapability(target, c));
    if (missing.length > 0) {
      throw new FleetbenchError(
        'E_TARGET',
        `executor '${executor.type}' needs a target that supports ${missing.join(', ')}; '${target.name}' does not`,
      );
    }
  }
}

export function runExecutor(executor: Executor, ctx: ExecutorContext): Promise<void> {
  const runner = runners[executor.type] as ExecutorRunner<Executor>;
  return runner(executor, ctx);
}
