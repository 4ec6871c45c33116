/**
 * What a pull request changes and the CI around it, in-process: REST `…/pulls/{n}/files` and
 * GraphQL `files` agree with the PR's additions/deletions and move with a push; the diff and
 * patch media types of `GET …/pulls/{n}` (what `gh pr diff` asks for) with their own ETags; and
 * `actions/runs` derived from the check runs.
 */
import { describe, expect, it } from 'vitest';
import { inProcess } from './helpers/github.ts';

const REPO = '/repos/fleetbench/repo-1';

describe('pull request files, diff and patch', () => {
  it('lists one file per commit in REST and GraphQL, as the totals say, and moves with a push', async () => {
    const h = inProcess();
    h.emulator.admin.pushCommit({ repo: 'fleetbench/repo-1', number: 6 });
    const files = JSON.parse((await h.get(`${REPO}/pulls/6/files`)).body);
    expect(files).toHaveLength(2);
    expect(files[0]).toMatchObject({
      filename: 'src/agent-issue-1/change-1.ts',
      status: 'modified',
      additions: 10,
      deletions: 2,
      changes: 12,
      patch: expect.stringMatching(/^@@ -1,2 \+1,10 @@\n-/),
    });
    const pull = JSON.parse((await h.get(`${REPO}/pulls/6`)).body);
    expect(pull).toMatchObject({ additions: 20, deletions: 4, changed_files: 2 });
    const gql = JSON.parse(
      (
        await h.graphql(
          '{ repository(owner: "fleetbench", name: "repo-1") { pullRequest(number: 6) { additions files(first: 100) { totalCount nodes { path additions deletions changeType } } } } }',
        )
      ).body,
    );
    expect(gql.data.repository.pullRequest.files.nodes.map((f: { path: string }) => f.path)).toEqual(
      files.map((f: { filename: string }) => f.filename),
    );
    expect(gql.data.repository.pullRequest.files.nodes[1]).toEqual({
      path: 'src/agent-issue-1/change-2.ts',
      additions: 10,
      deletions: 2,
      changeType: 'MODIFIED',
    });
    expect(h.apiRecords()[0]).toMatchObject({
      route: '/repos/{owner}/{repo}/pulls/{pull_number}/files',
      cost: 1,
    });
  });

  it('answers the diff and patch media types as text, each with its own ETag and 304', async () => {
    const h = inProcess();
    const json = await h.get(`${REPO}/pulls/7`);
    const diff = await h.get(`${REPO}/pulls/7`, { accept: 'application/vnd.github.v3.diff' });
    expect(diff.status).toBe(200);
    expect(diff.headers['content-type']).toBe('application/vnd.github.diff; charset=utf-8');
    expect(diff.headers['x-github-media-type']).toBe('github.v3; param=diff; format=diff');
    expect(diff.body).toMatch(
      /^diff --git a\/src\/agent-issue-2\/change-1\.ts b\/src\/agent-issue-2\/change-1\.ts\n/,
    );
    expect(diff.body.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'))).toHaveLength(10);
    expect(diff.headers.etag).not.toBe(json.headers.etag);
    const patch = await h.get(`${REPO}/pulls/7`, { accept: 'application/vnd.github.patch' });
    expect(patch.body).toMatch(/^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\nFrom: fleet-agent </);
    expect(patch.body).toContain('Subject: [PATCH 1/1] ');
    // Each representation answers 304 to its own ETag only.
    expect(
      (
        await h.get(`${REPO}/pulls/7`, {
          accept: 'application/vnd.github.diff',
          'if-none-match': diff.headers.etag!,
        })
      ).status,
    ).toBe(304);
    expect((await h.get(`${REPO}/pulls/7`, { 'if-none-match': diff.headers.etag! })).status).toBe(200);
    expect((await h.get(`${REPO}/pulls/7`, { 'if-none-match': json.headers.etag! })).status).toBe(304);
    expect(h.apiRecords().map((r) => r.cost)).toEqual([1, 1, 1, 0, 1, 0]);
  });
});

describe('actions/runs', () => {
  it('lists a workflow run per check run, newest first, filtered by branch, status and event', async () => {
    const h = inProcess({ fixtures: { repos: 2, issuesPerRepo: 3, pullsPerRepo: 2 } });
    h.emulator.admin.setCheckRun({
      repo: 'fleetbench/repo-1',
      number: 5,
      name: 'lint',
      status: 'in_progress',
    });
    const body = JSON.parse((await h.get(`${REPO}/actions/runs`)).body);
    expect(body.total_count).toBe(3);
    expect(
      body.workflow_runs.map((r: { name: string; head_branch: string; status: string }) => [
        r.name,
        r.head_branch,
        r.status,
      ]),
    ).toEqual([
      ['lint', 'agent/issue-2', 'in_progress'],
      ['ci', 'agent/issue-2', 'completed'],
      ['ci', 'agent/issue-1', 'completed'],
    ]);
    expect(body.workflow_runs[1]).toMatchObject({
      event: 'pull_request',
      conclusion: 'success',
      run_number: 2,
      path: '.github/workflows/ci.yml',
      display_title: expect.stringMatching(/^Fix #2: /),
    });
    const filtered = (qs: string) =>
      h
        .get(`${REPO}/actions/runs?${qs}`)
        .then((r) => JSON.parse(r.body).workflow_runs.map((w: { id: number }) => w.id));
    expect(await filtered('branch=agent/issue-1')).toEqual([body.workflow_runs[2].id]);
    expect(await filtered('status=in_progress')).toEqual([body.workflow_runs[0].id]);
    expect(await filtered('status=success')).toHaveLength(2);
    expect(await filtered('event=push')).toEqual([]);
    // The GraphQL check run's workflow run is the same run.
    const gql = JSON.parse(
      (
        await h.graphql(
          '{ repository(owner: "fleetbench", name: "repo-1") { pullRequest(number: 5) { commits(last: 1) { nodes { commit { statusCheckRollup { contexts(first: 5) { nodes { ... on CheckRun { name checkSuite { workflowRun { databaseId } } } } } } } } } } } }',
        )
      ).body,
    );
    const contexts = gql.data.repository.pullRequest.commits.nodes[0].commit.statusCheckRollup.contexts.nodes;
    expect(contexts.find((c: { name: string }) => c.name === 'lint').checkSuite.workflowRun.databaseId).toBe(
      body.workflow_runs[0].id,
    );
    const workflows = JSON.parse((await h.get(`${REPO}/actions/workflows`)).body);
    expect(workflows.workflows.map((w: { name: string }) => w.name)).toEqual(['ci', 'lint']);
    // A world without check runs has no workflow runs.
    const empty = inProcess({ fixtures: { repos: 1, issuesPerRepo: 2 } });
    expect(JSON.parse((await empty.get(`${REPO}/actions/runs`)).body)).toEqual({
      total_count: 0,
      workflow_runs: [],
    });
  });
});
