/**
 * Actions through REST beyond the runs list (rest.ts): a workflow run, its attempts, its jobs and
 * a job, their logs (302 to a download URL, actions-logs.ts), a re-run, a re-run of failed jobs,
 * a cancel (world/workflows.ts), a workflow and its dispatch. A workflow run is a check run and
 * its job is the check run of its newest attempt (actions.ts), so what these answer agrees with
 * check-runs, `gh pr checks` and `statusCheckRollup`.
 */
import {
  jobObject,
  latestAttempt,
  runMatchesStatus,
  type WorkflowRunView,
  workflowObjects,
  workflowRunById,
  workflowRunObject,
  workflowRunOfJob,
  workflowRuns,
} from './actions.ts';
import { logDownloadUrl } from './actions-logs.ts';
import {
  bodyField,
  countedPage,
  fail,
  notFound,
  numberParam,
  plainly,
  type RestContext,
  type RestResult,
  type RestRouter,
  str,
  unchanged,
  withRepo,
} from './rest-kit.ts';
import type { Repo } from './state.ts';

/** GitHub's bound on a dispatch's `inputs` (its description: "The maximum number of properties is 25"). */
export const MAX_DISPATCH_INPUTS = 25;

export function addActionsRunRoutes(r: RestRouter): void {
  const run = '/repos/{owner}/{repo}/actions/runs/{run_id}';
  const attempt = `${run}/attempts/{attempt_number}`;
  r.add('GET', run, 'actions/workflow-runs#get-a-workflow-run', (ctx) =>
    withRun(ctx, (repo, view) => runAnswer(ctx, repo, view)),
  );
  r.add('GET', attempt, 'actions/workflow-runs#get-a-workflow-run-attempt', (ctx) =>
    withAttempt(ctx, (repo, view) => runAnswer(ctx, repo, view)),
  );
  r.add('GET', `${run}/jobs`, 'actions/workflow-jobs#list-jobs-for-a-workflow-run', (ctx) =>
    withRun(ctx, (repo, view) =>
      jobsAnswer(ctx, repo, view, ctx.query.get('filter') === 'all' ? view.attempts : [latestAttempt(view)]),
    ),
  );
  r.add('GET', `${attempt}/jobs`, 'actions/workflow-jobs#list-jobs-for-a-workflow-run-attempt', (ctx) =>
    withAttempt(ctx, (repo, view) => jobsAnswer(ctx, repo, view, [latestAttempt(view)])),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/actions/jobs/{job_id}',
    'actions/workflow-jobs#get-a-job-for-a-workflow-run',
    (ctx) =>
      withJob(ctx, (repo, view, job) => ({
        status: 200,
        body: JSON.stringify(jobObject(ctx.state, repo, view, job)),
        version: ctx.state.time.version,
      })),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/actions/jobs/{job_id}/logs',
    'actions/workflow-jobs#download-job-logs-for-a-workflow-run',
    (ctx) =>
      withJob(ctx, (repo, _view, job) => ({
        status: 302,
        body: '',
        location: logDownloadUrl(ctx.state, repo, `jobs/${job.id}.txt`),
      })),
  );
  // Artifacts: runs here upload none.
  r.add('GET', `${run}/artifacts`, 'actions/artifacts#list-workflow-run-artifacts', (ctx) =>
    withRun(ctx, () => ({
      status: 200,
      body: '{"total_count":0,"artifacts":[]}',
      version: ctx.state.time.version,
    })),
  );
  r.add('GET', `${run}/logs`, 'actions/workflow-runs#download-workflow-run-logs', (ctx) =>
    withRun(ctx, (repo, view) => logsAnswer(ctx, repo, view)),
  );
  r.add('GET', `${attempt}/logs`, 'actions/workflow-runs#download-workflow-run-attempt-logs', (ctx) =>
    withAttempt(ctx, (repo, view) => logsAnswer(ctx, repo, view)),
  );

  r.add('POST', `${run}/rerun`, 'actions/workflow-runs#re-run-a-workflow', (ctx) =>
    withRun(ctx, (_repo, view) =>
      plainly(() => {
        ctx.state.workflows.rerun(view.commit, view.run, false);
        return { status: 201, body: '{}' };
      }),
    ),
  );
  r.add(
    'POST',
    `${run}/rerun-failed-jobs`,
    'actions/workflow-runs#re-run-failed-jobs-from-a-workflow-run',
    (ctx) =>
      withRun(ctx, (_repo, view) =>
        plainly(() => {
          ctx.state.workflows.rerun(view.commit, view.run, true);
          return { status: 201, body: '{}' };
        }),
      ),
  );
  r.add('POST', `${run}/cancel`, 'actions/workflow-runs#cancel-a-workflow-run', (ctx) =>
    withRun(ctx, (_repo, view) =>
      plainly(() => {
        ctx.state.workflows.cancel(view.commit, view.run);
        return { status: 202, body: '{}' };
      }),
    ),
  );

  const workflow = '/repos/{owner}/{repo}/actions/workflows/{workflow_id}';
  r.add('GET', workflow, 'actions/workflows#get-a-workflow', (ctx) =>
    withWorkflow(ctx, (_repo, object) => ({
      status: 200,
      body: JSON.stringify(object),
      version: ctx.state.time.version,
    })),
  );
  r.add('GET', `${workflow}/runs`, 'actions/workflow-runs#list-workflow-runs-for-a-workflow', (ctx) =>
    withWorkflow(ctx, (repo, object) => actionsRuns(ctx, repo, String(object.name))),
  );
  r.add('POST', `${workflow}/dispatches`, 'actions/workflows#create-a-workflow-dispatch-event', (ctx) =>
    withWorkflow(ctx, (repo, object) => dispatch(ctx, repo, object)),
  );
}

/** The workflow run `{run_id}` names; 404 for a re-run's check run id or another repository's. */
function withRun(ctx: RestContext, fn: (repo: Repo, view: WorkflowRunView) => RestResult): RestResult {
  return withRepo(ctx, (repo) => {
    const view = workflowRunById(repo, numberParam(ctx.params[2]));
    return view === undefined ? notFound() : fn(repo, view);
  });
}

/** A workflow run as it was at attempt `{attempt_number}` (its attempts up to that one). */
function withAttempt(ctx: RestContext, fn: (repo: Repo, view: WorkflowRunView) => RestResult): RestResult {
  return withRun(ctx, (repo, view) => {
    const n = numberParam(ctx.params[3]);
    if (n < 1 || n > view.attempts.length) return notFound();
    return fn(repo, { ...view, attempts: view.attempts.slice(0, n) });
  });
}

function withJob(
  ctx: RestContext,
  fn: (repo: Repo, view: WorkflowRunView, job: WorkflowRunView['run']) => RestResult,
): RestResult {
  return withRepo(ctx, (repo) => {
    const id = numberParam(ctx.params[2]);
    const view = workflowRunOfJob(ctx.state, repo, id);
    const job = view?.attempts.find((attempt) => attempt.id === id);
    return view === undefined || job === undefined ? notFound() : fn(repo, view, job);
  });
}

/** `{workflow_id}`: a workflow's id or its file name (`ci.yml`), as GitHub takes either. */
function withWorkflow(
  ctx: RestContext,
  fn: (repo: Repo, workflow: Record<string, unknown>) => RestResult,
): RestResult {
  return withRepo(ctx, (repo) => {
    const wanted = ctx.params[2]!;
    const found = workflowObjects(ctx.state, repo, workflowRuns(repo)).find(
      (w) => String(w.id) === wanted || String(w.path).split('/').pop() === wanted,
    );
    return found === undefined ? notFound() : fn(repo, found);
  });
}

function runAnswer(ctx: RestContext, repo: Repo, view: WorkflowRunView): RestResult {
  const exclude = ctx.query.get('exclude_pull_requests') === 'true';
  return {
    status: 200,
    body: JSON.stringify(workflowRunObject(ctx.state, repo, view, exclude)),
    version: ctx.state.time.version,
  };
}

function jobsAnswer(
  ctx: RestContext,
  repo: Repo,
  view: WorkflowRunView,
  jobs: readonly WorkflowRunView['run'][],
): RestResult {
  const toJson = (job: WorkflowRunView['run']) => jobObject(ctx.state, repo, view, job);
  return countedPage(ctx, 'jobs', jobs, toJson, ctx.state.time.version);
}

function logsAnswer(ctx: RestContext, repo: Repo, view: WorkflowRunView): RestResult {
  return {
    status: 302,
    body: '',
    location: logDownloadUrl(ctx.state, repo, `runs/${view.run.id}/${view.attempts.length}.zip`),
  };
}

/**
 * POST …/dispatches `{ref, inputs?, return_run_details?}`: a new run of the workflow on the
 * head of `ref` (a branch or a tag), 204; 200 with the run's id and URLs when asked for them.
 */
function dispatch(ctx: RestContext, repo: Repo, workflow: Record<string, unknown>): RestResult {
  const ref = str(ctx, 'ref');
  if (ref === undefined) return fail(422, 'Invalid request.\n\n"ref" wasn\'t supplied.');
  const inputs = bodyField(ctx, 'inputs');
  if (inputs !== undefined && (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)))
    return fail(422, "Invalid request.\n\nFor 'properties/inputs', it is not an object.");
  if (inputs !== undefined && Object.keys(inputs).length > MAX_DISPATCH_INPUTS)
    return fail(
      422,
      `Invalid request.\n\nNo more than ${MAX_DISPATCH_INPUTS} properties are allowed; ${Object.keys(inputs).length} were supplied.`,
    );
  const name = ref.replace(/^refs\/(heads|tags)\//, '');
  const commit =
    repo.branches.has(name) || repo.tags.has(name) ? ctx.state.refs.commit(repo, name) : undefined;
  if (commit === undefined) return fail(422, `No ref found for: ${ref}`);
  return plainly(() => {
    const run = ctx.state.workflows.dispatch(commit, String(workflow.name), name);
    if (bodyField(ctx, 'return_run_details') !== true) return { status: 204, body: '' };
    const api = `${ctx.state.apiUrl}/repos/${repo.fullName}`;
    return {
      status: 200,
      body: JSON.stringify({
        workflow_run_id: run.id,
        run_url: `${api}/actions/runs/${run.id}`,
        html_url: `${ctx.state.webUrl}/${repo.fullName}/actions/runs/${run.id}`,
      }),
    };
  });
}

/** GET …/actions/runs (and a workflow's, …/workflows/{id}/runs): workflow runs newest first, filtered as GitHub's parameters say. */
export function actionsRuns(ctx: RestContext, repo: Repo, workflow?: string): RestResult {
  const version = ctx.state.time.version;
  const hit = unchanged(ctx, version);
  if (hit) return hit;
  const q = ctx.query;
  const branch = q.get('branch');
  const event = q.get('event');
  const status = q.get('status');
  const headSha = q.get('head_sha');
  const runs = workflowRuns(repo).filter(
    (v) =>
      (workflow === undefined || v.run.name === workflow) &&
      (!branch || v.branch === branch) &&
      (!event || v.event === event) &&
      (!status || runMatchesStatus(latestAttempt(v), status)) &&
      (!headSha || v.commit.sha === headSha),
  );
  const exclude = q.get('exclude_pull_requests') === 'true';
  const toJson = (v: WorkflowRunView) => workflowRunObject(ctx.state, repo, v, exclude);
  return countedPage(ctx, 'workflow_runs', runs, toJson, version);
}
