/**
 * GitHub Actions workflow runs, derived from the check runs the world already has: each check run
 * is the one job of a workflow run named after it (the GraphQL `checkSuite.workflowRun` of a check
 * run has the same database id), on the branch of the pull request whose commit it ran on (event
 * `pull_request`), else on a branch pointing at the commit (event `push`). So `gh run list` and a
 * control plane polling `actions/runs` see the same CI as `gh pr checks` and check-runs, and it
 * moves with `setCheckRun`. A world without check runs has no workflow runs. A re-run
 * (world/workflows.ts) is a later attempt of the same workflow run: a new check run of the same
 * name, the run's one job from then on (`run_attempt`); a dispatched run is on the branch it was
 * dispatched on (event `workflow_dispatch`).
 */
import { pullsOfCommit, repoObject, userObject } from './shapes.ts';
import type { CheckConclusion, CheckRun, Commit, GitHubState, Repo } from './state.ts';
import { gitDate } from './world/git-objects.ts';

export type WorkflowEvent = 'pull_request' | 'push' | 'workflow_dispatch';

export interface WorkflowRunView {
  /** Its first check run: the run's id and name. */
  run: CheckRun;
  /** Every attempt's check run, the first one first: the last is the run's status and its job. */
  attempts: CheckRun[];
  commit: Commit;
  branch: string;
  event: WorkflowEvent;
  /** Per workflow (check name), in order of creation. */
  number: number;
  title: string;
}

/** A workflow run's newest attempt: its status, conclusion and job. */
export function latestAttempt(view: WorkflowRunView): CheckRun {
  return view.attempts[view.attempts.length - 1]!;
}

/** A workflow's id: stable for its name. */
export function workflowId(name: string): number {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return 100_000 + (h % 900_000);
}

export function workflowPath(name: string): string {
  return `.github/workflows/${name.replace(/[^A-Za-z0-9._-]+/g, '-').toLowerCase()}.yml`;
}

/** Every workflow run of a repository, newest first. */
export function workflowRuns(repo: Repo): WorkflowRunView[] {
  const where = new Map<string, { branch: string; event: WorkflowEvent; title: string }>();
  for (const [branch, sha] of repo.branches)
    where.set(sha, { branch, event: 'push', title: repo.commits.get(sha)?.message ?? branch });
  for (const pull of repo.pulls.values())
    for (const sha of pull.commits)
      where.set(sha, { branch: pull.head, event: 'pull_request', title: pull.issue.title });
  const runs: WorkflowRunView[] = [];
  for (const commit of repo.commits.values()) {
    const ofCommit = new Map<number, WorkflowRunView>();
    for (const run of commit.checkRuns) {
      const first = run.attemptOf === undefined ? undefined : ofCommit.get(run.attemptOf);
      if (first !== undefined) {
        first.attempts.push(run);
        continue;
      }
      const at =
        run.dispatchedOn !== undefined
          ? { branch: run.dispatchedOn, event: 'workflow_dispatch' as const, title: run.name }
          : (where.get(commit.sha) ?? {
              branch: repo.defaultBranch,
              event: 'push' as const,
              title: commit.message,
            });
      const view: WorkflowRunView = { run, attempts: [run], commit, ...at, number: 0 };
      ofCommit.set(run.id, view);
      runs.push(view);
    }
  }
  runs.sort((a, b) => a.run.id - b.run.id);
  const counts = new Map<string, number>();
  for (const view of runs) {
    const n = (counts.get(view.run.name) ?? 0) + 1;
    counts.set(view.run.name, n);
    view.number = n;
  }
  return runs.reverse();
}

/** The workflow run `id` names in a repository (a re-run's check run is not one). */
export function workflowRunById(repo: Repo, id: number): WorkflowRunView | undefined {
  return workflowRuns(repo).find((view) => view.run.id === id);
}

/** The workflow run a job (a check run of one of its attempts) belongs to. */
export function workflowRunOfJob(state: GitHubState, repo: Repo, jobId: number): WorkflowRunView | undefined {
  const found = state.checks.run(jobId);
  if (found === undefined || repo.commits.get(found.commit.sha) !== found.commit) return undefined;
  return workflowRunById(repo, found.run.attemptOf ?? found.run.id);
}

/** The `status` filter of the runs list: a status or a conclusion. */
export function runMatchesStatus(run: CheckRun, wanted: string): boolean {
  return run.status === wanted || run.conclusion === wanted;
}

export function workflowRunObject(
  state: GitHubState,
  repo: Repo,
  view: WorkflowRunView,
  excludePullRequests = false,
): Record<string, unknown> {
  const { run, commit } = view;
  const latest = latestAttempt(view);
  const attempt = view.attempts.length;
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const html = `${state.webUrl}/${repo.fullName}`;
  const id = workflowId(run.name);
  const actor = userObject(state, repo.owner);
  return {
    id: run.id,
    name: run.name,
    node_id: `WFR_${Buffer.from(`0:${run.id}`).toString('base64url')}`,
    head_branch: view.branch,
    head_sha: commit.sha,
    path: workflowPath(run.name),
    display_title: view.title,
    run_number: view.number,
    event: view.event,
    status: latest.status,
    conclusion: latest.conclusion,
    workflow_id: id,
    check_suite_id: run.suiteId,
    url: `${api}/actions/runs/${run.id}`,
    html_url: `${html}/actions/runs/${run.id}`,
    pull_requests: excludePullRequests ? [] : pullsOfCommit(state, repo, commit.sha),
    created_at: state.time.iso(run.startedAt),
    updated_at: state.time.iso(latest.completedAt ?? latest.startedAt),
    actor,
    triggering_actor: actor,
    run_attempt: attempt,
    ...(attempt > 1 ? { previous_attempt_url: `${api}/actions/runs/${run.id}/attempts/${attempt - 1}` } : {}),
    run_started_at: state.time.iso(latest.startedAt),
    jobs_url: `${api}/actions/runs/${run.id}/jobs`,
    logs_url: `${api}/actions/runs/${run.id}/logs`,
    check_suite_url: `${api}/check-suites/${run.suiteId}`,
    cancel_url: `${api}/actions/runs/${run.id}/cancel`,
    rerun_url: `${api}/actions/runs/${run.id}/rerun`,
    artifacts_url: `${api}/actions/runs/${run.id}/artifacts`,
    workflow_url: `${api}/actions/workflows/${id}`,
    head_commit: {
      id: commit.sha,
      tree_id: commit.tree,
      message: commit.message,
      timestamp: gitDate(commit.committer),
      author: { name: commit.author.name, email: commit.author.email },
      committer: { name: commit.committer.name, email: commit.committer.email },
    },
    repository: repoObject(state, repo),
    head_repository: repoObject(state, repo),
  };
}

/** The workflows behind a repository's runs (one per check name). */
export function workflowObjects(
  state: GitHubState,
  repo: Repo,
  runs: readonly WorkflowRunView[],
): Record<string, unknown>[] {
  const names = [...new Set(runs.map((v) => v.run.name))].sort();
  return names.map((name) => {
    const id = workflowId(name);
    const path = workflowPath(name);
    return {
      id,
      node_id: `W_${Buffer.from(`0:${id}`).toString('base64url')}`,
      name,
      path,
      state: 'active',
      url: `${state.apiUrl}/repos/${repo.fullName}/actions/workflows/${id}`,
      html_url: `${state.webUrl}/${repo.fullName}/blob/${repo.defaultBranch}/${path}`,
      badge_url: `${state.webUrl}/${repo.fullName}/workflows/${encodeURIComponent(name)}/badge.svg`,
      // Workflows are as old as the repository here.
      created_at: state.time.iso(repo.createdAt),
      updated_at: state.time.iso(repo.createdAt),
    };
  });
}

/** A job's conclusion as Actions words it (a check run's `stale` is not one of a job's). */
export function jobConclusion(run: CheckRun): CheckConclusion | null {
  return run.conclusion === 'stale' ? 'timed_out' : run.conclusion;
}

export interface JobStep {
  name: string;
  number: number;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: CheckConclusion | null;
  startedAt: number | null;
  completedAt: number | null;
}

/**
 * A job's steps: setting up, the check itself (`Run <name>`), completing. A queued job has none
 * yet (as on GitHub); one in progress is running its check; a completed one's check step has the
 * job's conclusion (a skipped job skipped every step).
 */
export function jobSteps(job: CheckRun): JobStep[] {
  if (job.status === 'queued') return [];
  const start = job.startedAt;
  const end = job.completedAt;
  const conclusion = jobConclusion(job);
  const done = (c: CheckConclusion | null) => ({ status: 'completed' as const, conclusion: c });
  const skipped = conclusion === 'skipped';
  return [
    {
      name: 'Set up job',
      number: 1,
      ...done(skipped ? 'skipped' : 'success'),
      startedAt: start,
      completedAt: start,
    },
    {
      name: `Run ${job.name}`,
      number: 2,
      ...(end === null ? { status: 'in_progress' as const, conclusion: null } : done(conclusion)),
      startedAt: start,
      completedAt: end,
    },
    {
      name: 'Complete job',
      number: 3,
      ...(end === null
        ? { status: 'queued' as const, conclusion: null }
        : done(skipped ? 'skipped' : 'success')),
      startedAt: end,
      completedAt: end,
    },
  ];
}

/** A job (REST `job`): the check run of one attempt of a workflow run. */
export function jobObject(
  state: GitHubState,
  repo: Repo,
  view: WorkflowRunView,
  job: CheckRun,
): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const iso = (t: number | null) => (t === null ? null : state.time.iso(t));
  const picked = job.status !== 'queued';
  return {
    id: job.id,
    run_id: view.run.id,
    run_url: `${api}/actions/runs/${view.run.id}`,
    run_attempt: job.attempt ?? 1,
    node_id: job.nodeId,
    head_sha: job.headSha,
    url: `${api}/actions/jobs/${job.id}`,
    html_url: `${state.webUrl}/${repo.fullName}/actions/runs/${view.run.id}/job/${job.id}`,
    status: job.status,
    conclusion: jobConclusion(job),
    created_at: state.time.iso(job.startedAt),
    started_at: state.time.iso(job.startedAt),
    completed_at: iso(job.completedAt),
    name: job.name,
    steps: jobSteps(job).map((step) => ({
      name: step.name,
      status: step.status,
      conclusion: step.conclusion,
      number: step.number,
      started_at: iso(step.startedAt),
      completed_at: iso(step.completedAt),
    })),
    check_run_url: `${api}/check-runs/${job.id}`,
    labels: ['ubuntu-latest'],
    // GitHub-hosted runners, once the job is picked up.
    runner_id: picked ? 1 : null,
    runner_name: picked ? 'GitHub Actions 1' : null,
    runner_group_id: picked ? 0 : null,
    runner_group_name: picked ? 'GitHub Actions' : null,
    workflow_name: view.run.name,
    head_branch: view.branch,
  };
}
