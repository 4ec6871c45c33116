/**
 * Check runs, check suites and commit statuses: what CI says about a commit, kept on the commit
 * itself, and what REST and GraphQL derive from them (the combined status, the status-check
 * rollup, a suite's status). CI writes them through REST as a CI bot does (`POST statuses/{sha}`,
 * `POST`/`PATCH check-runs`), or the admin API and fixtures set them. A change moves only the
 * commit's own version: check runs do not touch a pull request's `updated_at` on GitHub.
 *
 * GitHub's rules kept here: a check run belongs to the check suite of its commit and its app (one
 * suite per commit and app); a run given a conclusion is completed, and a completed run needs
 * one; lists and the rollup count the newest run of each name (`filter=latest`); a commit holds
 * at most 1,000 statuses per context (GitHub's limit) and, here, 1,000 check runs.
 */
import type {
  CheckApp,
  CheckConclusion,
  CheckRun,
  CheckStatus,
  CheckSuite,
  Commit,
  CommitStatus,
  StatusState,
  User,
} from './objects.ts';
import { GitHubStateError, nodeId } from './objects.ts';
import type { WorldTime } from './time.ts';

/** GitHub's limit on statuses of one commit and context. */
export const MAX_STATUSES_PER_CONTEXT = 1_000;
/** The emulator's bound on a commit's check runs (each is kept for the run's length). */
export const MAX_CHECK_RUNS_PER_COMMIT = 1_000;
/** GitHub's bound on a status's `description` ("description is too long (maximum is 140 characters)"). */
export const MAX_STATUS_DESCRIPTION_CHARS = 140;
/** GitHub's bound on a check run's `output.summary` and `output.text` (its docs: "Maximum length: 65535 characters"). */
export const MAX_CHECK_OUTPUT_CHARS = 65_535;

/** What a check run write may set (REST `POST`/`PATCH check-runs`, the admin API, fixtures). */
export interface CheckRunInput {
  name?: string;
  status?: CheckStatus;
  conclusion?: CheckConclusion | null;
  detailsUrl?: string | null;
  externalId?: string;
  output?: { title?: string | null; summary?: string | null; text?: string | null };
  startedAt?: number;
  completedAt?: number;
}

export class Checks {
  /** Every check run and suite by id, with its commit (ids are unique across repositories). */
  private readonly runs = new Map<number, { run: CheckRun; commit: Commit }>();
  private readonly suites = new Map<number, { suite: CheckSuite; commit: Commit }>();

  /** Told of a check run created or completed, and of a status (the world's notices, notices.ts); unset costs nothing. */
  onRun: ((run: CheckRun, commit: Commit, action: 'created' | 'completed') => void) | undefined = undefined;
  /** Told after every change of a run (made, moved on, completed, reopened): its suite may have changed state. */
  onRunChanged: ((run: CheckRun, commit: Commit) => void) | undefined = undefined;
  onStatus: ((status: CommitStatus, commit: Commit) => void) | undefined = undefined;

  constructor(
    private readonly time: WorldTime,
    /** Who a status is created by when the request names no one. */
    private readonly defaultCreator: () => User,
  ) {}

  /** Creates the named check run on a commit, or updates the latest one with that name (the admin API's). */
  setCheckRun(
    commit: Commit,
    input: { name: string; status?: CheckStatus; conclusion?: CheckConclusion | null },
    at = this.time.now(),
  ): CheckRun {
    const existing = this.latestRuns(commit).find((r) => r.name === input.name);
    return existing === undefined
      ? this.createCheckRun(commit, { ...input, name: input.name }, 'github-actions', at)
      : this.updateCheckRun(existing, commit, input, at);
  }

  /** A new check run (REST `POST check-runs`: each call makes one, even of a name the commit has). */
  createCheckRun(
    commit: Commit,
    input: CheckRunInput & { name: string },
    app: CheckApp,
    at = this.time.now(),
  ): CheckRun {
    if (commit.checkRuns.length >= MAX_CHECK_RUNS_PER_COMMIT)
      throw new GitHubStateError(422, `a commit holds at most ${MAX_CHECK_RUNS_PER_COMMIT} check runs here`);
    const suite = this.suiteOf(commit, app, at);
    const id = this.time.id();
    const run: CheckRun = {
      id,
      nodeId: nodeId('CR', id),
      name: input.name,
      headSha: commit.sha,
      status: 'queued',
      conclusion: null,
      startedAt: input.startedAt ?? at,
      completedAt: null,
      suiteId: suite.id,
      app,
      detailsUrl: null,
      externalId: '',
      output: { title: null, summary: null, text: null },
    };
    this.apply(run, input, at);
    commit.checkRuns.push(run);
    this.runs.set(id, { run, commit });
    suite.updatedAt = at;
    commit.version = this.time.bump();
    this.onRun?.(run, commit, 'created');
    this.onRunChanged?.(run, commit);
    return run;
  }

  /** A check run changed (REST `PATCH check-runs/{id}`): a conclusion completes it. */
  updateCheckRun(run: CheckRun, commit: Commit, input: CheckRunInput, at = this.time.now()): CheckRun {
    const wasCompleted = run.status === 'completed';
    this.apply(run, input, at);
    if (!wasCompleted && run.status === 'completed') this.onRun?.(run, commit, 'completed');
    const suite = this.suites.get(run.suiteId)?.suite;
    if (suite !== undefined) suite.updatedAt = at;
    commit.version = this.time.bump();
    this.onRunChanged?.(run, commit);
    return run;
  }

  private apply(run: CheckRun, input: CheckRunInput, at: number): void {
    const status: CheckStatus = input.conclusion ? 'completed' : (input.status ?? run.status);
    if (status === 'completed' && !(input.conclusion ?? run.conclusion))
      throw new GitHubStateError(
        422,
        `check run '${input.name ?? run.name}': a completed check needs a conclusion`,
      );
    if (input.name !== undefined) run.name = input.name;
    if (input.detailsUrl !== undefined) run.detailsUrl = input.detailsUrl;
    if (input.externalId !== undefined) run.externalId = input.externalId;
    if (input.output !== undefined)
      run.output = {
        title: input.output.title ?? run.output.title,
        summary: input.output.summary ?? run.output.summary,
        text: input.output.text ?? run.output.text,
      };
    if (input.startedAt !== undefined) run.startedAt = input.startedAt;
    run.status = status;
    if (input.conclusion !== undefined) run.conclusion = input.conclusion;
    if (status !== 'completed') run.conclusion = null;
    run.completedAt = status === 'completed' ? (input.completedAt ?? run.completedAt ?? at) : null;
  }

  /** The check suite of a commit and an app, made with the first run. */
  private suiteOf(commit: Commit, app: CheckApp, at: number): CheckSuite {
    const found = commit.checkSuites.find((s) => s.app === app);
    if (found !== undefined) return found;
    const id = this.time.id();
    const suite: CheckSuite = {
      id,
      nodeId: nodeId('CS', id),
      headSha: commit.sha,
      app,
      createdAt: at,
      updatedAt: at,
    };
    commit.checkSuites.push(suite);
    this.suites.set(id, { suite, commit });
    return suite;
  }

  /** A check run by id, with its commit. */
  run(id: number): { run: CheckRun; commit: Commit } | undefined {
    return this.runs.get(id);
  }

  /** A check suite by id, with its commit. */
  suite(id: number): { suite: CheckSuite; commit: Commit } | undefined {
    return this.suites.get(id);
  }

  /** The newest check run of each name (GitHub's `filter=latest`, the rollup's runs), in creation order. */
  latestRuns(commit: Commit, suiteId?: number): CheckRun[] {
    const newest = new Map<string, CheckRun>();
    for (const run of commit.checkRuns)
      if (suiteId === undefined || run.suiteId === suiteId) newest.set(run.name, run);
    return commit.checkRuns.filter((run) => newest.get(run.name) === run);
  }

  /** A suite's status and conclusion, from its newest runs: the least finished status, the worst conclusion. */
  suiteState(commit: Commit, suite: CheckSuite): { status: CheckStatus; conclusion: CheckConclusion | null } {
    const runs = this.latestRuns(commit, suite.id);
    if (runs.some((r) => r.status === 'in_progress')) return { status: 'in_progress', conclusion: null };
    if (runs.some((r) => r.status !== 'completed')) return { status: 'queued', conclusion: null };
    let worst: CheckConclusion | null = null;
    for (const run of runs)
      if (worst === null || CONCLUSION_SEVERITY.indexOf(run.conclusion!) < CONCLUSION_SEVERITY.indexOf(worst))
        worst = run.conclusion;
    return { status: 'completed', conclusion: worst };
  }

  /** A new status of a context (statuses are append-only on GitHub; the newest per context counts). */
  setStatus(
    commit: Commit,
    input: { context: string; state: StatusState; description?: string | null; targetUrl?: string | null },
    at = this.time.now(),
  ): CommitStatus {
    let ofContext = 0;
    for (const s of commit.statuses) if (s.context === input.context) ofContext++;
    if (ofContext >= MAX_STATUSES_PER_CONTEXT)
      throw new GitHubStateError(422, 'This SHA and context has reached the maximum number of statuses.');
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
    this.onStatus?.(status, commit);
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

  /** GraphQL statusCheckRollup.state over the newest check runs and statuses; null when there are none. */
  rollupState(commit: Commit): 'SUCCESS' | 'FAILURE' | 'PENDING' | 'ERROR' | null {
    const statuses = this.latestStatuses(commit);
    if (commit.checkRuns.length === 0 && statuses.length === 0) return null;
    let pending = false;
    let error = false;
    for (const run of this.latestRuns(commit)) {
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

/** Worst first: a suite's conclusion is its runs' worst. */
const CONCLUSION_SEVERITY: readonly CheckConclusion[] = [
  'action_required',
  'cancelled',
  'timed_out',
  'failure',
  'stale',
  'neutral',
  'success',
  'skipped',
];
