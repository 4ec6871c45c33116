/**
 * Check runs and commit statuses: what CI says about a commit, kept on the commit itself, and
 * what REST and GraphQL derive from them (the combined status, the status-check rollup). A
 * change moves only the commit's own version: check runs do not touch a pull request's
 * `updated_at` on GitHub.
 */
import type {
  CheckConclusion,
  CheckRun,
  CheckStatus,
  Commit,
  CommitStatus,
  StatusState,
  User,
} from './objects.ts';
import { GitHubStateError, nodeId } from './objects.ts';
import type { WorldTime } from './time.ts';

export class Checks {
  constructor(
    private readonly time: WorldTime,
    /** Who a status is created by when the request names no one. */
    private readonly defaultCreator: () => User,
  ) {}

  /** Creates the named check run on a commit, or updates the latest one with that name. */
  setCheckRun(
    commit: Commit,
    input: { name: string; status?: CheckStatus; conclusion?: CheckConclusion | null },
    at = this.time.now(),
  ): CheckRun {
    const { name, status, conclusion } = input;
    const resolvedStatus: CheckStatus = conclusion ? 'completed' : (status ?? 'queued');
    if (resolvedStatus === 'completed' && !conclusion) {
      throw new GitHubStateError(422, `check run '${name}': a completed check needs a conclusion`);
    }
    let run = commit.checkRuns.find((r) => r.name === name);
    if (!run) {
      const id = this.time.id();
      run = {
        id,
        nodeId: nodeId('CR', id),
        name,
        headSha: commit.sha,
        status: resolvedStatus,
        conclusion: null,
        startedAt: at,
        completedAt: null,
      };
      commit.checkRuns.push(run);
    }
    run.status = resolvedStatus;
    run.conclusion = conclusion ?? null;
    run.completedAt = resolvedStatus === 'completed' ? at : null;
    commit.version = this.time.bump();
    return run;
  }

  /** A new status of a context (statuses are append-only on GitHub; the newest per context counts). */
  setStatus(
    commit: Commit,
    input: { context: string; state: StatusState; description?: string; targetUrl?: string },
    at = this.time.now(),
  ): CommitStatus {
    const id = this.time.id();
    const status: CommitStatus = {
      id,
      nodeId: nodeId('SC', id),
      context: input.context,
      state: input.state,
      description: input.description ?? null,
      targetUrl: input.targetUrl ?? null,
      creator: this.defaultCreator(),
      createdAt: at,
      updatedAt: at,
    };
    commit.statuses.unshift(status);
    commit.version = this.time.bump();
    return status;
  }

  /** The newest status per context, newest first. */
  latestStatuses(commit: Commit): CommitStatus[] {
    const seen = new Set<string>();
    const out: CommitStatus[] = [];
    for (const status of commit.statuses) {
      if (seen.has(status.context)) continue;
      seen.add(status.context);
      out.push(status);
    }
    return out;
  }

  /** Combined commit status: failure > pending > success; pending when there are none. */
  combinedStatus(commit: Commit): StatusState {
    const statuses = this.latestStatuses(commit);
    if (statuses.length === 0) return 'pending';
    let pending = false;
    for (const s of statuses) {
      if (s.state === 'error' || s.state === 'failure') return 'failure';
      if (s.state === 'pending') pending = true;
    }
    return pending ? 'pending' : 'success';
  }

  /** GraphQL statusCheckRollup.state over check runs and statuses; null when there are none. */
  rollupState(commit: Commit): 'SUCCESS' | 'FAILURE' | 'PENDING' | 'ERROR' | null {
    const statuses = this.latestStatuses(commit);
    if (commit.checkRuns.length === 0 && statuses.length === 0) return null;
    let pending = false;
    let error = false;
    for (const run of commit.checkRuns) {
      if (run.status !== 'completed') pending = true;
      else if (
        run.conclusion === 'failure' ||
        run.conclusion === 'timed_out' ||
        run.conclusion === 'cancelled' ||
        run.conclusion === 'action_required' ||
        run.conclusion === 'stale'
      ) {
        return 'FAILURE';
      }
    }
    for (const s of statuses) {
      if (s.state === 'failure') return 'FAILURE';
      if (s.state === 'error') error = true;
      if (s.state === 'pending') pending = true;
    }
    if (error) return 'ERROR';
    return pending ? 'PENDING' : 'SUCCESS';
  }
}
