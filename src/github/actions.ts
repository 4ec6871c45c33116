/**
 * GitHub Actions workflow runs, derived from the check runs the world already has: each check run
 * is the one job of a workflow run named after it (the GraphQL `checkSuite.workflowRun` of a check
 * run has the same database id), on the branch of the pull request whose commit it ran on (event
 * `pull_request`), else on a branch pointing at the commit (event `push`). So `gh run list` and a
 * control plane polling `actions/runs` see the same CI as `gh pr checks` and check-runs, and it
 * moves with `setCheckRun`. A world without check runs has no workflow runs.
 */
import { repoObject, userObject } from './shapes.ts';
import type { CheckRun, Commit, GitHubState, Repo } from './state.ts';
import { gitDate } from './world/git-objects.ts';

export interface WorkflowRunView {
  run: CheckRun;
  commit: Commit;
  branch: string;
  event: 'pull_request' | 'push';
  /** Per workflow (check name), in order of creation. */
  number: number;
  title: string;
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
  const where = new Map<string, { branch: string; event: 'pull_request' | 'push'; title: string }>();
  for (const [branch, sha] of repo.branches)
    where.set(sha, { branch, event: 'push', title: repo.commits.get(sha)?.message ?? branch });
  for (const pull of repo.pulls.values())
    for (const sha of pull.commits)
      where.set(sha, { branch: pull.head, event: 'pull_request', title: pull.issue.title });
  const runs: WorkflowRunView[] = [];
  for (const commit of repo.commits.values()) {
    for (const run of commit.checkRuns) {
      const at = where.get(commit.sha) ?? {
        branch: repo.defaultBranch,
        event: 'push' as const,
        title: commit.message,
      };
      runs.push({ run, commit, ...at, number: 0 });
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

/** The `status` filter of the runs list: a status or a conclusion. */
export function runMatchesStatus(run: CheckRun, wanted: string): boolean {
  return run.status === wanted || run.conclusion === wanted;
}

export function workflowRunObject(
  state: GitHubState,
  repo: Repo,
  view: WorkflowRunView,
): Record<string, unknown> {
  const { run, commit } = view;
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
    status: run.status,
    conclusion: run.conclusion,
    workflow_id: id,
    check_suite_id: run.suiteId,
    url: `${api}/actions/runs/${run.id}`,
    html_url: `${html}/actions/runs/${run.id}`,
    pull_requests: [],
    created_at: state.time.iso(run.startedAt),
    updated_at: state.time.iso(run.completedAt ?? run.startedAt),
    actor,
    triggering_actor: actor,
    run_attempt: 1,
    run_started_at: state.time.iso(run.startedAt),
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
