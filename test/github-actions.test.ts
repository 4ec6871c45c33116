/**
 * Actions runs one by one (docs/github-emulator.md, "Actions"): what a control plane does when CI
 * fails, through Octokit against a served emulator on 127.0.0.1: read the run and its job, read
 * the failed job's log, re-run it, cancel it, dispatch a workflow. Each call is charged and traced
 * as any REST call; the log download the 302 points to is not an API call. A fast-check property
 * holds that after any sequence of re-runs, cancels and CI completions the run's status, its check
 * runs and the pull request's statusCheckRollup (what `gh pr checks` reads) agree with each other
 * and with a model of the run.
 */
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_RUN_ATTEMPTS } from '../src/github/world/workflows.ts';
import { inProcess, serve } from './helpers/github.ts';

const Octokit = Core.plugin(restEndpointMethods);
const at = { owner: 'fleetbench', repo: 'repo-1' };
const RUN_MS = 1_000;

/** A world with one pull request whose `ci` check run (a workflow run) completed with success. */
function world(options: { runMs?: number } = {}) {
  const env = inProcess({
    fixtures: { repos: 1, issuesPerRepo: 3, pullsPerRepo: 1 },
    actions: { runMs: options.runMs ?? RUN_MS },
  });
  const repo = env.emulator.state.repo('fleetbench/repo-1');
  const pull = [...repo.pulls.values()][0]!;
  const commit = repo.commits.get(pull.headSha)!;
  const first = commit.checkRuns[0]!;
  /** Advances virtual time by `ms`, firing only the timers due by then. */
  const tick = (ms: number) => env.clock.run({ until: env.clock.now() + ms });
  return { ...env, repo, pull, commit, first, tick };
}

describe('Actions runs through Octokit on a served emulator', () => {
  it('a failed run: the run, its job and steps, the log saying why; a re-run goes queued, in progress, completed', async () => {
    const w = world();
    const server = await serve(w.emulator);
    const octokit = new Octokit({ baseUrl: server.url, auth: w.emulator.defaultToken });
    w.emulator.state.checks.updateCheckRun(w.first, w.commit, {
      conclusion: 'failure',
      output: { title: '2 tests failed', summary: 'poll.test.ts: expected 304, got 200' },
    });
    const run_id = w.first.id;

    const run = await octokit.rest.actions.getWorkflowRun({ ...at, run_id });
    expect(run.data).toMatchObject({
      id: run_id,
      status: 'completed',
      conclusion: 'failure',
      run_attempt: 1,
    });
    expect(run.data.pull_requests?.map((p) => p.number)).toEqual([w.pull.issue.number]);
    const excluded = await octokit.rest.actions.getWorkflowRun({
      ...at,
      run_id,
      exclude_pull_requests: true,
    });
    expect(excluded.data.pull_requests).toEqual([]);

    const jobs = await octokit.rest.actions.listJobsForWorkflowRun({ ...at, run_id });
    expect(jobs.data.total_count).toBe(1);
    const job = jobs.data.jobs[0]!;
    expect(job).toMatchObject({ id: run_id, run_id, name: 'ci', status: 'completed', conclusion: 'failure' });
    expect(job.steps?.map((s) => [s.number, s.name, s.conclusion])).toEqual([
      [1, 'Set up job', 'success'],
      [2, 'Run ci', 'failure'],
      [3, 'Complete job', 'success'],
    ]);
    expect((await octokit.rest.actions.getJobForWorkflowRun({ ...at, job_id: job.id })).data).toEqual(job);

    const log = await octokit.rest.actions.downloadJobLogsForWorkflowRun({ ...at, job_id: job.id });
    expect(log.status).toBe(200);
    const text = String(log.data);
    expect(text).toContain('##[error]ci: failure: 2 tests failed (poll.test.ts: expected 304, got 200)');
    expect(text).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z /);
    // Deterministic: the same log every time.
    expect(
      String((await octokit.rest.actions.downloadJobLogsForWorkflowRun({ ...at, job_id: job.id })).data),
    ).toBe(text);
    const zip = Buffer.from(
      (await octokit.rest.actions.downloadWorkflowRunLogs({ ...at, run_id })).data as ArrayBuffer,
    );
    expect(zip.subarray(0, 4).toString('latin1')).toBe('PK\x03\x04');
    expect(zip.toString('latin1')).toContain('ci/2_Run ci.txt');

    // Re-run: a second attempt, queued; the PR's checks go back to pending; it completes on schedule.
    expect((await octokit.rest.actions.reRunWorkflow({ ...at, run_id })).status).toBe(201);
    let again = (await octokit.rest.actions.getWorkflowRun({ ...at, run_id })).data;
    expect(again).toMatchObject({ status: 'queued', conclusion: null, run_attempt: 2 });
    expect(again.previous_attempt_url).toMatch(/\/actions\/runs\/\d+\/attempts\/1$/);
    const checks = await octokit.rest.checks.listForRef({ ...at, ref: w.commit.sha, check_name: 'ci' });
    expect(checks.data.check_runs.map((c) => c.status)).toEqual(['queued']);
    await w.tick(RUN_MS / 2);
    expect((await octokit.rest.actions.getWorkflowRun({ ...at, run_id })).data.status).toBe('in_progress');
    await w.tick(RUN_MS / 2);
    again = (await octokit.rest.actions.getWorkflowRun({ ...at, run_id })).data;
    expect(again).toMatchObject({ status: 'completed', conclusion: 'success', run_attempt: 2 });
    const latest = (await octokit.rest.actions.listJobsForWorkflowRun({ ...at, run_id })).data.jobs;
    expect(latest.map((j) => [j.run_attempt, j.conclusion])).toEqual([[2, 'success']]);
    const all = await octokit.rest.actions.listJobsForWorkflowRun({ ...at, run_id, filter: 'all' });
    expect(all.data.jobs.map((j) => j.conclusion)).toEqual(['failure', 'success']);
    const newLog = await octokit.rest.actions.downloadJobLogsForWorkflowRun({ ...at, job_id: latest[0]!.id });
    expect(String(newLog.data)).toContain('ci: success');
    expect(String(newLog.data)).not.toContain('##[error]');
    // Still one workflow run in the list, not one per attempt.
    const list = await octokit.rest.actions.listWorkflowRunsForRepo(at);
    expect(list.data.workflow_runs.filter((r) => r.id === run_id)).toHaveLength(1);

    // Re-running failed jobs of a run that succeeded is refused.
    await expect(octokit.rest.actions.reRunWorkflowFailedJobs({ ...at, run_id })).rejects.toMatchObject({
      status: 403,
    });
  });

  it('cancel: 202 while running (the run concludes cancelled), 409 once completed; a dispatch makes a run', async () => {
    const w = world();
    const server = await serve(w.emulator);
    const octokit = new Octokit({ baseUrl: server.url, auth: w.emulator.defaultToken });
    const run_id = w.first.id;
    await expect(octokit.rest.actions.cancelWorkflowRun({ ...at, run_id })).rejects.toMatchObject({
      status: 409,
      response: { data: { message: 'Cannot cancel a workflow run that is completed.' } },
    });
    await octokit.rest.actions.reRunWorkflow({ ...at, run_id });
    expect((await octokit.rest.actions.cancelWorkflowRun({ ...at, run_id })).status).toBe(202);
    const run = (await octokit.rest.actions.getWorkflowRun({ ...at, run_id })).data;
    expect(run).toMatchObject({ status: 'completed', conclusion: 'cancelled', run_attempt: 2 });
    // Its scheduled completion leaves the cancelled run alone.
    await w.tick(RUN_MS);
    expect((await octokit.rest.actions.getWorkflowRun({ ...at, run_id })).data.conclusion).toBe('cancelled');
    // A cancelled run's failed jobs can be re-run.
    expect((await octokit.rest.actions.reRunWorkflowFailedJobs({ ...at, run_id })).status).toBe(201);

    const workflows = (await octokit.rest.actions.listRepoWorkflows(at)).data.workflows;
    const ci = workflows.find((wf) => wf.name === 'ci')!;
    const dispatched = await octokit.rest.actions.createWorkflowDispatch({
      ...at,
      workflow_id: ci.id,
      ref: 'main',
    });
    expect(dispatched.status).toBe(204);
    const runs = await octokit.rest.actions.listWorkflowRunsForRepo({ ...at, event: 'workflow_dispatch' });
    expect(runs.data.workflow_runs.map((r) => [r.head_branch, r.status, r.name])).toEqual([
      ['main', 'queued', 'ci'],
    ]);
    expect(runs.data.workflow_runs[0]!.head_sha).toBe(w.repo.branches.get('main'));
    const byFile = await octokit.rest.actions.createWorkflowDispatch({
      ...at,
      workflow_id: 'ci.yml',
      ref: 'main',
      return_run_details: true,
    } as Parameters<typeof octokit.rest.actions.createWorkflowDispatch>[0]);
    expect(byFile.status).toBe(200);
    expect(byFile.data).toMatchObject({ workflow_run_id: expect.any(Number) });
    await expect(
      octokit.rest.actions.createWorkflowDispatch({ ...at, workflow_id: ci.id, ref: 'no-such-branch' }),
    ).rejects.toMatchObject({ status: 422 });
    await expect(
      octokit.request('POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches', {
        ...at,
        workflow_id: ci.id,
      } as never),
    ).rejects.toMatchObject({ status: 422 });
    await w.tick(RUN_MS);
    const done = await octokit.rest.actions.listWorkflowRunsForRepo({ ...at, event: 'workflow_dispatch' });
    expect(done.data.workflow_runs.map((r) => r.conclusion)).toEqual(['success', 'success']);
  });

  it('each call charged and traced as a REST call; the log download is neither; a changed URL is refused', async () => {
    const w = world();
    const server = await serve(w.emulator);
    const octokit = new Octokit({ baseUrl: server.url, auth: w.emulator.defaultToken });
    const run_id = w.first.id;
    const before = (await octokit.rest.rateLimit.get()).data.resources.core.used;
    await octokit.rest.actions.getWorkflowRun({ ...at, run_id });
    await octokit.rest.actions.listJobsForWorkflowRun({ ...at, run_id });
    await octokit.rest.actions.downloadJobLogsForWorkflowRun({ ...at, job_id: run_id });
    await octokit.rest.actions.reRunWorkflow({ ...at, run_id });
    await octokit.rest.actions.cancelWorkflowRun({ ...at, run_id });
    expect((await octokit.rest.rateLimit.get()).data.resources.core.used).toBe(before + 5);
    const routes = w.apiRecords().map((r) => (r.kind === 'api' ? `${r.method} ${r.route} ${r.status}` : ''));
    expect(routes).toEqual(
      expect.arrayContaining([
        'GET /repos/{owner}/{repo}/actions/runs/{run_id} 200',
        'GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs 200',
        'GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs 302',
        'POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun 201',
        'POST /repos/{owner}/{repo}/actions/runs/{run_id}/cancel 202',
      ]),
    );
    expect(routes.filter((r) => r.includes('actions-results'))).toEqual([]);

    const redirect = await fetch(`${server.url}/repos/${at.owner}/${at.repo}/actions/jobs/${run_id}/logs`, {
      headers: { authorization: `token ${w.emulator.defaultToken}` },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get('location')!;
    expect(location.startsWith(`${server.url}/actions-results/`)).toBe(true);
    // No token needed (the URL is signed), as GitHub's download URLs.
    expect((await fetch(location)).status).toBe(200);
    expect((await fetch(location.replace(`jobs/${run_id}`, `jobs/${run_id + 1}`))).status).toBe(403);
    expect((await fetch(location.replace(/sig=.*/, 'sig=00'))).status).toBe(403);
  });

  it(`a run takes at most ${MAX_RUN_ATTEMPTS} attempts; unknown runs and jobs are 404`, async () => {
    const w = world({ runMs: 0 });
    const server = await serve(w.emulator);
    const octokit = new Octokit({ baseUrl: server.url, auth: w.emulator.defaultToken });
    const run_id = w.first.id;
    for (let attempt = 2; attempt <= MAX_RUN_ATTEMPTS; attempt++)
      expect((await octokit.rest.actions.reRunWorkflow({ ...at, run_id })).status).toBe(201);
    expect((await octokit.rest.actions.getWorkflowRun({ ...at, run_id })).data.run_attempt).toBe(
      MAX_RUN_ATTEMPTS,
    );
    await expect(octokit.rest.actions.reRunWorkflow({ ...at, run_id })).rejects.toMatchObject({
      status: 403,
    });
    const job = (await octokit.rest.actions.listJobsForWorkflowRun({ ...at, run_id })).data.jobs[0]!;
    // A re-run's job id is a job, not a workflow run.
    await expect(
      octokit.rest.actions.getWorkflowRun({ ...at, run_id: Number(job.id) }),
    ).rejects.toMatchObject({
      status: 404,
    });
    await expect(octokit.rest.actions.getJobForWorkflowRun({ ...at, job_id: 999_999 })).rejects.toMatchObject(
      {
        status: 404,
      },
    );
  });
});

type Op =
  | { kind: 'rerun' | 'rerun-failed' | 'cancel' }
  | { kind: 'tick'; ms: number }
  | { kind: 'ci'; conclusion: 'success' | 'failure' };

const FAILED = new Set(['failure', 'cancelled']);

describe('Actions runs and the checks agree (property)', () => {
  it('after any sequence of re-runs, cancels and CI completions, the run, its check runs and the rollup agree', async () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.constantFrom<Op>({ kind: 'rerun' }, { kind: 'rerun-failed' }, { kind: 'cancel' }),
      fc.record({ kind: fc.constant('tick' as const), ms: fc.constantFrom(RUN_MS / 4, RUN_MS / 2, RUN_MS) }),
      fc.record({
        kind: fc.constant('ci' as const),
        conclusion: fc.constantFrom('success' as const, 'failure' as const),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 12 }), async (ops) => {
        const w = world();
        const base = `/repos/fleetbench/repo-1/actions/runs/${w.first.id}`;
        // The model: the newest attempt's status and conclusion, when it started, how many attempts.
        const model = {
          status: 'completed',
          conclusion: 'success' as string | null,
          startedAt: 0,
          attempts: 1,
        };
        const settle = () => {
          if (model.status === 'completed') return;
          const elapsed = w.clock.now() - model.startedAt;
          if (elapsed >= RUN_MS) Object.assign(model, { status: 'completed', conclusion: 'success' });
          else if (elapsed >= RUN_MS / 2) model.status = 'in_progress';
        };
        try {
          for (const o of ops) {
            if (o.kind === 'tick') {
              await w.tick(o.ms);
              settle();
            } else if (o.kind === 'ci') {
              w.emulator.admin.setCheckRun({
                repo: 'fleetbench/repo-1',
                sha: w.commit.sha,
                name: 'ci',
                conclusion: o.conclusion,
              });
              Object.assign(model, { status: 'completed', conclusion: o.conclusion });
            } else if (o.kind === 'cancel') {
              const res = await w.post(`${base}/cancel`, {});
              expect(res.status).toBe(model.status === 'completed' ? 409 : 202);
              if (res.status === 202) Object.assign(model, { status: 'completed', conclusion: 'cancelled' });
            } else {
              const res = await w.post(`${base}/${o.kind === 'rerun' ? 'rerun' : 'rerun-failed-jobs'}`, {});
              const allowed =
                model.status === 'completed' &&
                (o.kind === 'rerun' || FAILED.has(model.conclusion!)) &&
                model.attempts < MAX_RUN_ATTEMPTS;
              expect(res.status).toBe(allowed ? 201 : 403);
              if (allowed)
                Object.assign(model, {
                  status: 'queued',
                  conclusion: null,
                  startedAt: w.clock.now(),
                  attempts: model.attempts + 1,
                });
            }
            // The run, its job, the commit's newest `ci` check run and the PR's rollup: all the model's.
            const run = JSON.parse((await w.get(base)).body);
            expect([run.status, run.conclusion, run.run_attempt]).toEqual([
              model.status,
              model.conclusion,
              model.attempts,
            ]);
            const jobs = JSON.parse((await w.get(`${base}/jobs`)).body).jobs;
            expect(
              jobs.map((j: { status: string; conclusion: string | null }) => [j.status, j.conclusion]),
            ).toEqual([[model.status, model.conclusion]]);
            const checks = JSON.parse(
              (await w.get(`/repos/fleetbench/repo-1/commits/${w.commit.sha}/check-runs?check_name=ci`)).body,
            ).check_runs;
            expect(
              checks.map((c: { id: number; status: string; conclusion: string | null }) => [
                c.id,
                c.status,
                c.conclusion,
              ]),
            ).toEqual([[jobs[0].id, model.status, model.conclusion]]);
            const gql = JSON.parse(
              (
                await w.graphql(
                  `query { repository(owner: "fleetbench", name: "repo-1") { pullRequest(number: ${w.pull.issue.number}) {
                    commits(last: 1) { nodes { commit { statusCheckRollup { state contexts(first: 10) { nodes {
                      ... on CheckRun { name status conclusion } } } } } } } } } }`,
                )
              ).body,
            );
            const rollup = gql.data.repository.pullRequest.commits.nodes[0].commit.statusCheckRollup;
            expect(rollup.contexts.nodes).toEqual([
              {
                name: 'ci',
                status: model.status.toUpperCase(),
                conclusion: model.conclusion?.toUpperCase() ?? null,
              },
            ]);
            expect(rollup.state).toBe(
              model.status !== 'completed'
                ? 'PENDING'
                : model.conclusion === 'success'
                  ? 'SUCCESS'
                  : 'FAILURE',
            );
          }
        } finally {
          w.emulator.close();
        }
      }),
      { numRuns: 200 },
    );
  }, 120_000);
});
