/**
 * Drives native runs on sessions for the `native-runs` and `chaos-wave` executors: a run opens
 * with an input, each finished turn is followed (after a seeded think time) by the next input,
 * and a finished run by the next run on the same session, which then starts warm. The driver
 * only talks to the target's run methods, so a remote target drives the same way.
 */

import { type Distribution, sample } from '../base/distribution.ts';
import { FleetbenchError } from '../base/errors.ts';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import { hasCapability, type RunNotice, type Target } from '../contract/types.ts';
import type { CountRange } from './scenario.ts';

export function requireRuns(target: Target, executor: string): void {
  if (!hasCapability(target, 'startRun')) {
    throw new FleetbenchError(
      'E_TARGET',
      `executor '${executor}' needs a target that runs native agent runs; '${target.name}' does not`,
    );
  }
}

export interface SessionPlan {
  adapter: string;
  /** Runs one after another (Infinity: until the run is stopped). */
  runs: number;
  turns: CountRange;
  think: Distribution;
}

export class RunDriver {
  private readonly waiters = new Map<string, (how: 'done' | 'skipped') => void>();
  private runsStarted = 0;
  private readonly drives: Array<Promise<void>> = [];
  private failedWith: { error: unknown } | undefined;
  private fail!: (error: unknown) => void;
  /**
   * Rejects as soon as one session's runs cannot go on (the target refused an input: say its
   * runs were lost): the executor fails, and so the run (exit 3, partial summary).
   */
  readonly failure = new Promise<never>((_, reject) => {
    this.fail = reject;
  });

  constructor(
    private readonly clock: Clock,
    private readonly target: Target,
    private readonly signal: AbortSignal,
  ) {
    this.failure.catch(() => undefined);
    target.onRunNotice!((notice: RunNotice) => {
      if (notice.type !== 'turn.completed' && notice.type !== 'run.skipped') return;
      const resolve = this.waiters.get(notice.session);
      this.waiters.delete(notice.session);
      resolve?.(notice.type === 'run.skipped' ? 'skipped' : 'done');
    });
  }

  get started(): number {
    return this.runsStarted;
  }

  /** The first failure of a session's runs, once there is one. */
  get failed(): boolean {
    return this.failedWith !== undefined;
  }

  /** Drives a session in the background: its failure rejects `failure`, never left unhandled. */
  start(session: string, plan: SessionPlan, rng: Rng): void {
    this.drives.push(
      this.drive(session, plan, rng).catch((error: unknown) => {
        this.failedWith ??= { error };
        this.fail(error);
      }),
    );
  }

  /** Every session started so far done, or the first failure. */
  settled(): Promise<void> {
    return Promise.race([Promise.all(this.drives).then(() => undefined), this.failure]);
  }

  /** Runs, turns and think times on one session until the plan is done or the run stops. */
  private async drive(session: string, plan: SessionPlan, rng: Rng): Promise<void> {
    try {
      await this.driveRuns(session, plan, rng);
    } catch (error) {
      // Stopping the target fails the calls in flight: expected once the run is over.
      if (!this.signal.aborted) throw error;
    }
  }

  private async driveRuns(session: string, plan: SessionPlan, rng: Rng): Promise<void> {
    const target = this.target;
    for (let r = 0; r < plan.runs; r++) {
      if (r > 0 && !(await this.think(plan.think, rng))) return;
      const turns = rng.int(plan.turns.min, plan.turns.max);
      let done = this.nextTurn(session);
      this.runsStarted++;
      await target.startRun!({ session, adapter: plan.adapter, input: `run ${r + 1}, turn 1` });
      let how = await done;
      if (how === false) return;
      // An input answered without a run (the control plane skipped it): the run is over.
      for (let turn = 2; turn <= turns && how === 'done'; turn++) {
        if (!(await this.think(plan.think, rng))) return;
        done = this.nextTurn(session);
        await target.sendInput!(session, `run ${r + 1}, turn ${turn}`);
        how = await done;
        if (how === false) return;
      }
      await target.endRun!(session);
    }
  }

  /**
   * Resolves `done` on the session's next completed turn, `skipped` when its input made no run,
   * false if the run is stopped first.
   */
  private nextTurn(session: string): Promise<'done' | 'skipped' | false> {
    return new Promise((resolve) => {
      if (this.signal.aborted) {
        resolve(false);
        return;
      }
      const onAbort = () => resolve(false);
      this.signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.set(session, (how) => {
        this.signal.removeEventListener('abort', onAbort);
        resolve(how);
      });
    });
  }

  private async think(think: Distribution, rng: Rng): Promise<boolean> {
    try {
      await this.clock.sleep(sample(think, rng), this.signal);
      return true;
    } catch {
      return false;
    }
  }
}
