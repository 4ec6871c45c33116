/**
 * What a restart of the control plane does to the runners of active runs (docs/reference-control-plane.md#restarts):
 * `hard` kills them with the process; `graceful` lets each finish the item it is in (up to the
 * drain timeout), then kills it, its saved session clean; `hot` leaves them running, detached,
 * holding their output until the new process reattaches them. Recovery at `controlplane.ready`
 * (native-runs.ts) relaunches killed runners with a session reload and reattaches hot ones.
 */
import type { Clock } from '../../clock/clock.ts';
import type { RestartKind } from '../../contract/types.ts';
import type { NativeRun } from './durable-state.ts';
import type { Runner } from './runner.ts';

export async function stopRunners(
  runs: readonly NativeRun[],
  kind: RestartKind,
  clock: Clock,
  drainTimeoutMs: number,
): Promise<void> {
  if (kind === 'hot') {
    for (const run of runs) run.runner?.detach();
    return;
  }
  if (kind === 'graceful') {
    const runners = runs.map((r) => r.runner).filter((r): r is Runner => r?.alive === true);
    for (const runner of runners) runner.draining = true;
    const timeout = new AbortController();
    await Promise.race([
      Promise.all(runners.map((r) => r.settled())),
      clock.sleep(drainTimeoutMs, timeout.signal).catch(() => undefined),
    ]);
    timeout.abort();
  }
  for (const run of runs) {
    const runner = run.runner;
    if (!runner) continue;
    // A drained runner saved its session cleanly; a killed busy one did not.
    run.cleanSave = kind === 'graceful' && (runner.paused || runner.idle);
    runner.kill();
    run.runner = undefined;
    run.runnerPhase = 'none';
  }
}
