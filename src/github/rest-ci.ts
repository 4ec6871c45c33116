/**
 * CI through REST, as a CI bot writes it and a control plane reads it: commit statuses
 * (`POST statuses/{sha}`, the combined status, the list), check runs (`POST`/`PATCH
 * check-runs`, one, a commit's), check suites (a commit's, one, its runs), and a commit itself
 * (`GET commits/{ref}`). Writes go through world/checks.ts, so `gh pr checks`, GraphQL
 * `statusCheckRollup` and the Actions runs follow them.
 *
 * GitHub's rules: a status needs a `state` GitHub knows, on a commit the repository has (422
 * `No commit found for SHA: …`); check runs are written by GitHub Apps only ("OAuth apps and
 * personal access tokens (classic) cannot use this endpoint"): an Actions token (`kind: actions`)
 * writes as GitHub Actions, a `kind: enterprise` token as the fleetbench CI app, a user token is
 * refused 403.
 */
import { filesOfCommits } from './changes.ts';
import {
  bodyField,
  cachedBody,
  fail,
  intParam,
  mutate,
  numberParam,
  pagedList,
  paginate,
  type RenderedPage,
  type RestContext,
  type RestResult,
  type RestRouter,
  str,
  unchanged,
  validation,
  withCommit,
  withRepo,
} from './rest-kit.ts';
import {
  changedFileObject,
  checkRunObject,
  checkSuiteObject,
  commitObject,
  repoObject,
  statusObject,
} from './shapes.ts';
import type { CheckApp, CheckConclusion, CheckRun, CheckStatus, Commit, Repo, StatusState } from './state.ts';
import { type CheckRunInput, MAX_CHECK_OUTPUT_CHARS, MAX_STATUS_DESCRIPTION_CHARS } from './world/checks.ts';

const STATUS_STATES = new Set(['error', 'failure', 'pending', 'success']);
const CHECK_STATUSES = new Set(['queued', 'in_progress', 'completed']);
const CHECK_CONCLUSIONS = new Set([
  'action_required',
  'cancelled',
  'failure',
  'neutral',
  'success',
  'skipped',
  'stale',
  'timed_out',
]);

export function addCiRoutes(r: RestRouter): void {
  r.add('POST', '/repos/{owner}/{repo}/statuses/{sha}', 'commits/statuses#create-a-commit-status', (ctx) =>
    withCommit(ctx, (repo, commit) => createStatus(ctx, repo, commit)),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/commits/{ref}/statuses',
    'commits/statuses#list-commit-statuses-for-a-reference',
    (ctx) =>
      withCommit(ctx, (repo, commit) => {
        const hit = unchanged(ctx, commit.version);
        if (hit) return hit;
        const page = paginate(ctx, commit.statuses);
        return {
          status: 200,
          body: JSON.stringify(page.items.map((s) => statusObject(ctx.state, repo, commit, s))),
          version: commit.version,
          page: page.page,
        };
      }),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/commits/{ref}/status',
    'commits/statuses#get-the-combined-status-for-a-specific-reference',
    (ctx) => withCommit(ctx, (repo, commit) => combinedStatus(ctx, repo, commit)),
  );

  r.add('POST', '/repos/{owner}/{repo}/check-runs', 'checks/runs#create-a-check-run', (ctx) =>
    withRepo(ctx, (repo) => createCheckRun(ctx, repo)),
  );
  r.add('GET', '/repos/{owner}/{repo}/check-runs/{check_run_id}', 'checks/runs#get-a-check-run', (ctx) =>
    withCheckRun(ctx, (repo, run, commit) => {
      const hit = unchanged(ctx, commit.version);
      if (hit) return hit;
      return {
        status: 200,
        body: JSON.stringify(checkRunObject(ctx.state, repo, run)),
        version: commit.version,
      };
    }),
  );
  // Annotations: check runs here carry none (`output.annotations_count` is 0).
  r.add(
    'GET',
    '/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations',
    'checks/runs#list-check-run-annotations',
    (ctx) =>
      withCheckRun(ctx, (_repo, _run, commit) =>
        pagedList(
          ctx,
          commit.version,
          () => [],
          () => ({}),
        ),
      ),
  );
  r.add('PATCH', '/repos/{owner}/{repo}/check-runs/{check_run_id}', 'checks/runs#update-a-check-run', (ctx) =>
    withCheckRun(ctx, (repo, run, commit) => {
      const refused = appOnly(ctx);
      if (refused) return refused;
      const input = checkRunInput(ctx);
      if ('error' in input) return input.error;
      return mutate(() => {
        ctx.state.checks.updateCheckRun(run, commit, input.value);
        return { status: 200, body: JSON.stringify(checkRunObject(ctx.state, repo, run)) };
      }, 'CheckRun');
    }),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/commits/{ref}/check-runs',
    'checks/runs#list-check-runs-for-a-git-reference',
    (ctx) =>
      withCommit(ctx, (repo, commit) =>
        cachedBody(ctx, repo, `check-runs/${commit.sha}?${ctx.qs}`, commit.version, () =>
          renderCheckRuns(ctx, repo, commit, undefined),
        ),
      ),
  );

  r.add(
    'GET',
    '/repos/{owner}/{repo}/commits/{ref}/check-suites',
    'checks/suites#list-check-suites-for-a-git-reference',
    (ctx) =>
      withCommit(ctx, (repo, commit) => {
        const hit = unchanged(ctx, commit.version);
        if (hit) return hit;
        const name = ctx.query.get('check_name');
        const appId = ctx.query.get('app_id');
        const suites = commit.checkSuites.filter(
          (suite) =>
            (name === undefined ||
              commit.checkRuns.some((run) => run.suiteId === suite.id && run.name === name)) &&
            (appId === undefined || String(APP_IDS[suite.app]) === appId),
        );
        const page = paginate(ctx, suites);
        return {
          status: 200,
          body: JSON.stringify({
            total_count: suites.length,
            check_suites: page.items.map((suite) => checkSuiteObject(ctx.state, repo, commit, suite)),
          }),
          version: commit.version,
          page: page.page,
        };
      }),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/check-suites/{check_suite_id}',
    'checks/suites#get-a-check-suite',
    (ctx) =>
      withCheckSuite(ctx, (repo, commit, suiteId) => {
        const hit = unchanged(ctx, commit.version);
        if (hit) return hit;
        const suite = commit.checkSuites.find((s) => s.id === suiteId)!;
        return {
          status: 200,
          body: JSON.stringify(checkSuiteObject(ctx.state, repo, commit, suite)),
          version: commit.version,
        };
      }),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs',
    'checks/runs#list-check-runs-in-a-check-suite',
    (ctx) =>
      withCheckSuite(ctx, (repo, commit, suiteId) =>
        cachedBody(ctx, repo, `suite-runs/${suiteId}?${ctx.qs}`, commit.version, () =>
          renderCheckRuns(ctx, repo, commit, suiteId),
        ),
      ),
  );

  r.add('GET', '/repos/{owner}/{repo}/commits/{ref}', 'commits/commits#get-a-commit', (ctx) =>
    withCommit(ctx, (repo, commit) => getCommit(ctx, repo, commit)),
  );
}

/** The app ids REST shows (`appObject`), for `app_id` filters. */
const APP_IDS: Record<CheckApp, number> = { 'github-actions': 15368, 'fleetbench-ci': 900001 };

/** POST …/statuses/{sha}: 201, the status (its creator the token's user), `Location` the commit's statuses. */
function createStatus(ctx: RestContext, repo: Repo, commit: Commit): RestResult {
  const state = str(ctx, 'state');
  if (state === undefined) return fail(422, 'Invalid request.\n\n"state" wasn\'t supplied.');
  if (!STATUS_STATES.has(state)) return validation('Status', 'state', 'invalid');
  const targetUrl = bodyField(ctx, 'target_url');
  const description = bodyField(ctx, 'description');
  if (typeof description === 'string' && description.length > MAX_STATUS_DESCRIPTION_CHARS)
    return tooLong('Status', 'description', MAX_STATUS_DESCRIPTION_CHARS);
  return mutate(() => {
    const status = ctx.state.setStatus(commit, {
      context: str(ctx, 'context') ?? 'default',
      state: state as StatusState,
      targetUrl: typeof targetUrl === 'string' ? targetUrl : undefined,
      description: typeof description === 'string' ? description : undefined,
      user: ctx.user?.login,
    });
    return {
      status: 201,
      body: JSON.stringify(statusObject(ctx.state, repo, commit, status)),
      location: `${ctx.state.apiUrl}/repos/${repo.fullName}/statuses/${commit.sha}`,
    };
  }, 'Status');
}

function combinedStatus(ctx: RestContext, repo: Repo, commit: Commit): RestResult {
  // The body embeds the repository, which a push anywhere in it changes.
  const version = Math.max(commit.version, repo.pushVersion);
  const hit = unchanged(ctx, version);
  if (hit) return hit;
  const statuses = ctx.state.checks.latestStatuses(commit);
  const page = paginate(ctx, statuses);
  return {
    status: 200,
    body: JSON.stringify({
      state: ctx.state.checks.combinedStatus(commit),
      statuses: page.items.map((s) => statusObject(ctx.state, repo, commit, s)),
      sha: commit.sha,
      total_count: statuses.length,
      repository: repoObject(ctx.state, repo),
      commit_url: `${ctx.state.apiUrl}/repos/${repo.fullName}/commits/${commit.sha}`,
      url: `${ctx.state.apiUrl}/repos/${repo.fullName}/commits/${commit.sha}/status`,
    }),
    version,
    page: page.page,
  };
}

/** GitHub's answer to a string over its length: `422 Validation Failed`, the field and its maximum. */
function tooLong(resource: string, field: string, max: number): RestResult {
  return fail(422, 'Validation Failed', {
    errors: [
      { resource, field, code: 'custom', message: `${field} is too long (maximum is ${max} characters)` },
    ],
  });
}

/** Check runs are a GitHub App's to write: GitHub refuses a user's token. */
function appOnly(ctx: RestContext): RestResult | undefined {
  const kind = ctx.identity.kind;
  return kind === 'actions' || kind === 'enterprise' || kind === 'installation'
    ? undefined
    : fail(403, 'You must authenticate via a GitHub App.');
}

/** The app a token writes check runs as. */
function appOf(ctx: RestContext): CheckApp {
  // An App installation's runs (apps.ts) are shown as fleetbench-ci's, a CI App other than Actions.
  return ctx.identity.kind === 'enterprise' || ctx.identity.kind === 'installation'
    ? 'fleetbench-ci'
    : 'github-actions';
}

/** The fields of a check-run write, checked as GitHub checks them. */
function checkRunInput(ctx: RestContext): { value: CheckRunInput } | { error: RestResult } {
  const status = str(ctx, 'status');
  if (status !== undefined && !CHECK_STATUSES.has(status))
    return { error: validation('CheckRun', 'status', 'invalid') };
  const conclusion = bodyField(ctx, 'conclusion');
  if (conclusion !== undefined && conclusion !== null && !CHECK_CONCLUSIONS.has(String(conclusion)))
    return { error: validation('CheckRun', 'conclusion', 'invalid') };
  const time = (field: string): number | undefined | 'bad' => {
    const text = str(ctx, field);
    if (text === undefined) return undefined;
    const wall = Date.parse(text);
    return Number.isNaN(wall) ? 'bad' : ctx.state.time.fromWall(wall);
  };
  const startedAt = time('started_at');
  const completedAt = time('completed_at');
  if (startedAt === 'bad') return { error: validation('CheckRun', 'started_at', 'invalid') };
  if (completedAt === 'bad') return { error: validation('CheckRun', 'completed_at', 'invalid') };
  const output = bodyField(ctx, 'output') as Record<string, unknown> | undefined;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  for (const field of ['summary', 'text'] as const)
    if ((text(output?.[field])?.length ?? 0) > MAX_CHECK_OUTPUT_CHARS)
      return { error: tooLong('CheckRun', `output.${field}`, MAX_CHECK_OUTPUT_CHARS) };
  const detailsUrl = bodyField(ctx, 'details_url');
  return {
    value: {
      name: str(ctx, 'name'),
      status: status as CheckStatus | undefined,
      conclusion: conclusion as CheckConclusion | null | undefined,
      detailsUrl: typeof detailsUrl === 'string' ? detailsUrl : undefined,
      externalId: str(ctx, 'external_id'),
      output:
        output !== null && typeof output === 'object'
          ? { title: text(output.title), summary: text(output.summary), text: text(output.text) }
          : undefined,
      startedAt,
      completedAt,
    },
  };
}

/** POST …/check-runs `{name, head_sha, status, conclusion, …}`: 201, a new run in the commit's suite of the token's app. */
function createCheckRun(ctx: RestContext, repo: Repo): RestResult {
  const refused = appOnly(ctx);
  if (refused) return refused;
  const name = str(ctx, 'name');
  const headSha = str(ctx, 'head_sha');
  if (name === undefined || name === '') return fail(422, 'Invalid request.\n\n"name" wasn\'t supplied.');
  if (headSha === undefined) return fail(422, 'Invalid request.\n\n"head_sha" wasn\'t supplied.');
  const commit = ctx.state.refs.commit(repo, headSha);
  if (commit === undefined) return fail(422, `No commit found for SHA: ${headSha}`);
  const input = checkRunInput(ctx);
  if ('error' in input) return input.error;
  return mutate(() => {
    const run = ctx.state.checks.createCheckRun(commit, { ...input.value, name }, appOf(ctx));
    return {
      status: 201,
      body: JSON.stringify(checkRunObject(ctx.state, repo, run)),
      location: `${ctx.state.apiUrl}/repos/${repo.fullName}/check-runs/${run.id}`,
    };
  }, 'CheckRun');
}

function withCheckRun(
  ctx: RestContext,
  fn: (repo: Repo, run: CheckRun, commit: Commit) => RestResult,
): RestResult {
  return withRepo(ctx, (repo) => {
    const found = ctx.state.checks.run(numberParam(ctx.params[2]));
    if (found === undefined || repo.commits.get(found.commit.sha) !== found.commit)
      return fail(404, 'Not Found');
    return fn(repo, found.run, found.commit);
  });
}

function withCheckSuite(
  ctx: RestContext,
  fn: (repo: Repo, commit: Commit, suiteId: number) => RestResult,
): RestResult {
  return withRepo(ctx, (repo) => {
    const found = ctx.state.checks.suite(numberParam(ctx.params[2]));
    if (found === undefined || repo.commits.get(found.commit.sha) !== found.commit)
      return fail(404, 'Not Found');
    return fn(repo, found.commit, found.suite.id);
  });
}

/**
 * A commit's check runs (`check_name`, `status`, `filter=latest` (the default: the newest run of
 * each name) or `all`), of one suite when `suiteId` is given.
 */
function renderCheckRuns(
  ctx: RestContext,
  repo: Repo,
  commit: Commit,
  suiteId: number | undefined,
): RenderedPage {
  const name = ctx.query.get('check_name');
  const status = ctx.query.get('status');
  const all = ctx.query.get('filter') === 'all';
  const base = all
    ? commit.checkRuns.filter((run) => suiteId === undefined || run.suiteId === suiteId)
    : ctx.state.checks.latestRuns(commit, suiteId);
  const runs =
    name || status
      ? base.filter((run) => (!name || run.name === name) && (!status || run.status === status))
      : base;
  const page = paginate(ctx, runs);
  return {
    body: JSON.stringify({
      total_count: runs.length,
      check_runs: page.items.map((run) => checkRunObject(ctx.state, repo, run)),
    }),
    page: page.page,
  };
}

/**
 * GET …/commits/{ref} (a SHA, a branch): the commit with its changes, as GitHub answers it
 * (`stats`, `files`: the emulator's synthetic change of each commit, changes.ts).
 */
function getCommit(ctx: RestContext, repo: Repo, commit: Commit): RestResult {
  const version = commit.version;
  const hit = unchanged(ctx, version);
  if (hit) return hit;
  const files =
    commit.parents.length === 1
      ? filesOfCommits([commit.sha], branchOf(repo, commit), `commit ${commit.sha.slice(0, 7)}`)
      : [];
  const additions = files.reduce((sum, f) => sum + f.additions, 0);
  const deletions = files.reduce((sum, f) => sum + f.deletions, 0);
  const perPage = Math.min(intParam(ctx.query, 'per_page', 300), 300);
  return {
    status: 200,
    body: JSON.stringify({
      ...commitObject(ctx.state, repo, commit, ctx.state.defaultUser),
      stats: { total: additions + deletions, additions, deletions },
      files: files.slice(0, perPage).map((f) => changedFileObject(ctx.state, repo, f)),
    }),
    version,
  };
}

/** The branch a commit is the tip of, or the default branch: where its synthetic file lives. */
function branchOf(repo: Repo, commit: Commit): string {
  for (const pull of repo.pulls.values()) if (pull.commits.includes(commit.sha)) return pull.head;
  for (const [branch, sha] of repo.branches) if (sha === commit.sha) return branch;
  return repo.defaultBranch;
}
