/**
 * Actions workflow runs that GitHub runs itself: a re-run (`POST …/rerun`, `…/rerun-failed-jobs`),
 * a cancel (`POST …/cancel`) and a dispatch (`POST …/workflows/{id}/dispatches`). A workflow run
 * is a check run (actions.ts); a re-run is a new check run of the same name on the same commit
 * (GitHub's next attempt: the rollup, `gh pr checks` and check-run lists count the newest run of
 * each name, so they go back to pending), and it runs as the world's CI runs a new head: queued,
 * in progress after half of `runMs`, completed with `conclusion` after `runMs` (at once when
 * `runMs` is 0). Whoever completes the check run first (a CI bot's `PATCH check-runs`, the admin
 * API, a cancel) wins: the scheduled steps leave a completed run alone.
 */
import type { TimerId } from '../../clock/index.ts';
import type { Checks } from './checks.ts';
import {
  type CheckApp,
  type CheckConclusion,
  type CheckRun,
  type Commit,
  GitHubStateError,
} from './objects.ts';
import type { WorldTime } from './time.ts';

/** The emulator's bound on a workflow run's attempts (its first run and its re-runs). */
export const MAX_RUN_ATTEMPTS = 50;
/** How long a re-run or dispatched run takes by default, in run time: as long as a short CI. */
export const DEFAULT_RUN_MS = 30_000;

/** Conclusions GitHub's "Re-run failed jobs" re-runs. */
const FAILED = new Set<CheckConclusion>(['failure', 'cancelled', 'timed_out', 'action_required']);

export interface WorkflowsOptions {
  /** Run time a re-run or a dispatched run takes to complete (0: at once). */
  runMs?: number;
  /** What it completes with. */
  conclusion?: CheckConclusion;
  /** The key log download URLs are signed with (actions-logs.ts). */
  logKey?: string;
}

export class Workflows {
  runMs = DEFAULT_RUN_MS;
  conclusion: CheckConclusion = 'success';
  logKey = '';
  private readonly timers = new Set<TimerId>();

  constructor(
    private readonly time: WorldTime,
    private readonly checks: Checks,
  ) {}

  configure(options: WorkflowsOptions): void {
    if (options.runMs !== undefined) this.runMs = Math.max(0, options.runMs);
    if (options.conclusion !== undefined) this.conclusion = options.conclusion;
    if (options.logKey !== undefined) this.logKey = options.logKey;
  }

  /** A workflow run's check runs, its first and then its re-runs, in order. */
  attempts(commit: Commit, first: CheckRun): CheckRun[] {
    return commit.checkRuns.filter((run) => run === first || run.attemptOf === first.id);
  }

  /**
   * The next attempt of a completed workflow run (`failedOnly`: only when it failed, as
   * `rerun-failed-jobs`); GitHub refuses one still running.
   */
  rerun(commit: Commit, first: CheckRun, failedOnly: boolean): CheckRun {
    const attempts = this.attempts(commit, first);
    const latest = attempts[attempts.length - 1]!;
    if (latest.status !== 'completed') throw new GitHubStateError(403, 'This workflow is already running');
    if (failedOnly && !FAILED.has(latest.conclusion!))
      throw new GitHubStateError(403, 'This workflow run has no failed jobs to re-run');
    if (attempts.length >= MAX_RUN_ATTEMPTS)
      throw new GitHubStateError(
        403,
        `This workflow run has been re-run the most times allowed (${MAX_RUN_ATTEMPTS} attempts)`,
      );
    return this.start(commit, first.name, first.app, {
      attemptOf: first.id,
      attempt: attempts.length + 1,
      dispatchedOn: first.dispatchedOn,
    });
  }

  /** Cancels the newest attempt; GitHub answers 409 for a run already completed. */
  cancel(commit: Commit, first: CheckRun): CheckRun {
    const attempts = this.attempts(commit, first);
    const latest = attempts[attempts.length - 1]!;
    if (latest.status === 'completed')
      throw new GitHubStateError(409, 'Cannot cancel a workflow run that is completed.');
    return this.checks.updateCheckRun(latest, commit, { conclusion: 'cancelled' });
  }

  /** A new run of the named workflow on a branch's head (`workflow_dispatch`). */
  dispatch(commit: Commit, name: string, branch: string): CheckRun {
    return this.start(commit, name, 'github-actions', { dispatchedOn: branch });
  }

  /** Stops the scheduled steps (the emulator closing). */
  close(): void {
    for (const id of this.timers) this.time.clock.clearTimeout(id);
    this.timers.clear();
  }

  private start(
    commit: Commit,
    name: string,
    app: CheckApp,
    link: Pick<CheckRun, 'attemptOf' | 'attempt' | 'dispatchedOn'>,
  ): CheckRun {
    const run = this.checks.createCheckRun(commit, { name, status: 'queued' }, app);
    if (link.attemptOf !== undefined) run.attemptOf = link.attemptOf;
    if (link.attempt !== undefined) run.attempt = link.attempt;
    if (link.dispatchedOn !== undefined) run.dispatchedOn = link.dispatchedOn;
    const conclusion = this.conclusion;
    const complete = () => {
      if (run.status !== 'completed') this.checks.updateCheckRun(run, commit, { conclusion });
    };
    if (this.runMs <= 0) {
      complete();
      return run;
    }
    this.after(this.runMs / 2, () => {
      if (run.status === 'queued') this.checks.updateCheckRun(run, commit, { status: 'in_progress' });
    });
    this.after(this.runMs, complete);
    return run;
  }

  private after(ms: number, fn: () => void): void {
    const id = this.time.clock.setTimeout(() => {
      this.timers.delete(id);
      fn();
    }, ms);
    this.timers.add(id);
  }
}
