/** Commits and what hangs off them: refs, check runs, status contexts and the status check rollup. */
import type { CheckRun, Commit, CommitStatus, GitHubState, Repo } from '../state.ts';
import { isProtected } from '../world/access.ts';
import { type GitIdent, gitDate } from '../world/git-objects.ts';
import { type ConnArgs, connection } from './connection.ts';
import { upper } from './context.ts';
import { UserNode } from './users.ts';

export class RefNode {
  readonly __typename = 'Ref';
  readonly id: string;
  readonly prefix = 'refs/heads/';
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    readonly name: string,
  ) {
    this.id = Buffer.from(`ref:${repo.id}:${name}`).toString('base64');
  }
  target(): CommitNode | null {
    const commit = this.s.refs.commit(this.repo, this.name);
    return commit ? new CommitNode(this.s, this.repo, commit) : null;
  }
  /**
   * The default branch is protected by the repository's review rule (`required_reviews`
   * approvals, what makes a pull request BLOCKED); other branches are not protected.
   */
  branchProtectionRule() {
    if (!isProtected(this.repo, this.name)) return null;
    const required = this.repo.requiredReviews;
    return {
      id: Buffer.from(`bpr:${this.repo.id}`).toString('base64'),
      pattern: this.name,
      requiresApprovingReviews: true,
      requiredApprovingReviewCount: required,
      requiresStatusChecks: false,
      requiresStrictStatusChecks: false,
      requiresCodeOwnerReviews: false,
      isAdminEnforced: false,
    };
  }
}

class CheckRunNode {
  readonly __typename = 'CheckRun';
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    private readonly run: CheckRun,
  ) {}
  get id() {
    return this.run.nodeId;
  }
  get databaseId() {
    return this.run.id;
  }
  get name() {
    return this.run.name;
  }
  get status() {
    return upper(this.run.status);
  }
  get conclusion() {
    return this.run.conclusion ? upper(this.run.conclusion) : null;
  }
  get startedAt() {
    return this.s.time.iso(this.run.startedAt);
  }
  get completedAt() {
    return this.run.completedAt === null ? null : this.s.time.iso(this.run.completedAt);
  }
  get detailsUrl() {
    // A re-run's check run is a job of its first run's workflow run (actions.ts).
    return `${this.s.webUrl}/${this.repo.fullName}/actions/runs/${this.run.attemptOf ?? this.run.id}`;
  }
  get url() {
    return `${this.s.webUrl}/${this.repo.fullName}/runs/${this.run.id}`;
  }
  get permalink() {
    return this.url;
  }
  readonly title = null;
  readonly summary = null;
  readonly text = null;
  isRequired(): boolean {
    return false;
  }
  checkSuite() {
    const run = this.run;
    return {
      id: Buffer.from(`suite:${run.id}`).toString('base64'),
      databaseId: run.id,
      status: upper(run.status),
      conclusion: run.conclusion ? upper(run.conclusion) : null,
      app: { id: 'A_github_actions', name: 'GitHub Actions', slug: 'github-actions', logoUrl: () => '' },
      workflowRun: {
        id: Buffer.from(`run:${run.id}`).toString('base64'),
        databaseId: run.attemptOf ?? run.id,
        runNumber: run.attemptOf ?? run.id,
        event: 'pull_request',
        url: this.detailsUrl,
        workflow: { id: 'W_ci', name: 'CI' },
      },
    };
  }
}

class StatusContextNode {
  readonly __typename = 'StatusContext';
  constructor(
    private readonly s: GitHubState,
    private readonly status: CommitStatus,
  ) {}
  get id() {
    return this.status.nodeId;
  }
  get context() {
    return this.status.context;
  }
  get state() {
    return upper(this.status.state);
  }
  get description() {
    return this.status.description;
  }
  get targetUrl() {
    return this.status.targetUrl;
  }
  avatarUrl(): string {
    return `https://avatars.githubusercontent.com/u/${this.status.creator.id}?v=4`;
  }
  get createdAt() {
    return this.s.time.iso(this.status.createdAt);
  }
  isRequired(): boolean {
    return false;
  }
  get creator() {
    return new UserNode(this.s, this.status.creator);
  }
}

/** The CheckRunState and StatusState enums, in the schema's order. */
const CHECK_RUN_STATE_NAMES = [
  'ACTION_REQUIRED',
  'CANCELLED',
  'COMPLETED',
  'FAILURE',
  'IN_PROGRESS',
  'NEUTRAL',
  'PENDING',
  'QUEUED',
  'SKIPPED',
  'STALE',
  'STARTUP_FAILURE',
  'SUCCESS',
  'TIMED_OUT',
  'WAITING',
] as const;
const STATUS_STATE_NAMES = ['ERROR', 'EXPECTED', 'FAILURE', 'PENDING', 'SUCCESS'] as const;

const CHECK_RUN_STATES = (run: CheckRun) =>
  run.status === 'completed' ? upper(run.conclusion ?? 'neutral') : upper(run.status);

class RollupNode {
  readonly __typename = 'StatusCheckRollup';
  readonly id: string;
  readonly state: string;
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    private readonly commit: Commit,
    state: string,
  ) {
    this.id = Buffer.from(`rollup:${commit.sha}`).toString('base64');
    this.state = state;
  }
  contexts(args: ConnArgs) {
    const statuses = this.s.checks.latestStatuses(this.commit);
    // The newest run of each name, as the rollup's state counts them: a re-run supersedes its run.
    const runs = this.s.checks.latestRuns(this.commit);
    const items: (CheckRun | CommitStatus)[] = [...runs, ...statuses];
    // Every state of the enum, zeros included: gh (2.46's pr status) counts checks from these
    // lists only when both are non-empty, so a commit with check runs and no statuses still
    // answers a statusContextCountsByState list.
    const count = <T>(states: readonly string[], values: T[], key: (v: T) => string) => {
      const m = new Map<string, number>(states.map((state) => [state, 0]));
      for (const v of values) m.set(key(v), (m.get(key(v)) ?? 0) + 1);
      return [...m].map(([state, n]) => ({ state, count: n }));
    };
    return connection(
      items,
      args,
      (item) =>
        'context' in item
          ? new StatusContextNode(this.s, item)
          : new CheckRunNode(this.s, this.repo, item as CheckRun),
      {
        checkRunCount: runs.length,
        statusContextCount: statuses.length,
        checkRunCountsByState: count(CHECK_RUN_STATE_NAMES, runs, CHECK_RUN_STATES),
        statusContextCountsByState: count(STATUS_STATE_NAMES, statuses, (st) => upper(st.state)),
      },
    );
  }
}

export class CommitNode {
  readonly __typename = 'Commit';
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    private readonly commit: Commit,
  ) {}
  get id() {
    return this.commit.nodeId;
  }
  get oid() {
    return this.commit.sha;
  }
  get abbreviatedOid() {
    return this.commit.sha.slice(0, 7);
  }
  get message() {
    return this.commit.message;
  }
  get messageHeadline() {
    return this.commit.message.split('\n')[0];
  }
  get messageBody() {
    const blank = this.commit.message.indexOf('\n\n');
    return blank < 0 ? '' : this.commit.message.slice(blank + 2);
  }
  get committedDate() {
    return gitDate(this.commit.committer);
  }
  get authoredDate() {
    return gitDate(this.commit.author);
  }
  get url() {
    return `${this.s.webUrl}/${this.repo.fullName}/commit/${this.commit.sha}`;
  }
  private actor(ident: GitIdent) {
    const user = this.s.userOfIdent(ident);
    return {
      name: ident.name,
      email: ident.email,
      date: gitDate(ident),
      user: user === undefined ? null : new UserNode(this.s, user),
    };
  }
  author() {
    return this.actor(this.commit.author);
  }
  committer() {
    return this.actor(this.commit.committer);
  }
  authors(args: ConnArgs) {
    return connection([this.author()], args, (a) => a);
  }
  statusCheckRollup(): RollupNode | null {
    const state = this.s.checks.rollupState(this.commit);
    return state === null ? null : new RollupNode(this.s, this.repo, this.commit, state);
  }
  status() {
    const statuses = this.s.checks.latestStatuses(this.commit);
    if (statuses.length === 0) return null;
    return {
      id: Buffer.from(`status:${this.commit.sha}`).toString('base64'),
      state: upper(this.s.checks.combinedStatus(this.commit)),
      contexts: statuses.map((s) => new StatusContextNode(this.s, s)),
    };
  }
  checkSuites(args: ConnArgs) {
    return connection(this.commit.checkRuns, args, (run) =>
      new CheckRunNode(this.s, this.repo, run).checkSuite(),
    );
  }
}
