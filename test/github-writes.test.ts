/**
 * Writes GitHub refuses and writes that create, in-process through handle(): merge refusals on
 * REST and GraphQL (stale head 409, review required, draft, conflicts: 405), a pull request
 * from a branch GitHub never saw (422), GraphQL createPullRequest / createIssue, REST issue
 * update and close, and branch deletion. A refused write is answered, recorded and charged as
 * GitHub charges it (1 primary point; 5 secondary points for a write).
 */
import { describe, expect, it } from 'vitest';
import { inProcess } from './helpers/github.ts';

const REPO = '/repos/fleetbench/repo-1';
const MERGE_DOCS = 'https://docs.github.com/rest/pulls/pulls#merge-a-pull-request';

describe('merge refusals (REST and GraphQL)', () => {
  it('REST: 405 while a review is required, 409 for a stale sha, 405 for a draft or conflicts; merges once approved', async () => {
    const { transport, emulator, apiRecords } = inProcess();
    const merge = (number: number, body: unknown = {}) =>
      transport.request({
        method: 'PUT',
        path: `${REPO}/pulls/${number}/merge`,
        headers: {},
        body: JSON.stringify(body),
      });
    const pull = emulator.admin.findPullRequest({ repo: 'fleetbench/repo-1', number: 6 })!;
    const blocked = await merge(6, { sha: pull.headSha });
    expect(blocked.status).toBe(405);
    expect(JSON.parse(blocked.body)).toEqual({
      message: 'At least 1 approving review is required by reviewers with write access.',
      documentation_url: MERGE_DOCS,
      status: '405',
    });
    emulator.admin.submitReview({
      repo: 'fleetbench/repo-1',
      number: 6,
      state: 'APPROVED',
      user: 'reviewer-1',
    });
    const stale = await merge(6, { sha: '0'.repeat(40) });
    expect(stale.status).toBe(409);
    expect(JSON.parse(stale.body).message).toBe('Head branch was modified. Review and try the merge again.');
    emulator.admin.setMergeable({ repo: 'fleetbench/repo-1', number: 6, mergeable: false });
    expect(JSON.parse((await merge(6)).body).message).toBe('Pull Request has merge conflicts');
    emulator.admin.setMergeable({ repo: 'fleetbench/repo-1', number: 6, mergeable: true });
    emulator.state.pull(emulator.state.repo('fleetbench/repo-1'), 6).draft = true;
    expect(JSON.parse((await merge(6)).body).message).toBe('Pull Request is still a draft');
    emulator.state.pull(emulator.state.repo('fleetbench/repo-1'), 6).draft = false;
    const merged = await merge(6, { sha: pull.headSha, merge_method: 'squash' });
    expect(merged.status).toBe(200);
    expect(JSON.parse(merged.body)).toMatchObject({
      merged: true,
      message: 'Pull Request successfully merged',
    });
    expect((await merge(6)).status).toBe(405);
    // Every refusal is in the trace, charged as any REST write: 1 primary + 5 secondary points.
    expect(apiRecords().map((r) => [r.status, r.cost, r.secondaryCost])).toEqual([
      [405, 1, 5],
      [409, 1, 5],
      [405, 1, 5],
      [405, 1, 5],
      [200, 1, 5],
      [405, 1, 5],
    ]);
    expect(apiRecords()[1]!.error).toBe('Head branch was modified. Review and try the merge again.');
  });

  it('GraphQL: the same refusals as UNPROCESSABLE errors; changes requested blocks too', async () => {
    const { graphql, emulator } = inProcess();
    const pull = emulator.state.pull(emulator.state.repo('fleetbench/repo-1'), 7);
    const merge = async (extra = '') =>
      JSON.parse(
        (
          await graphql(
            `mutation { mergePullRequest(input: {pullRequestId: "${pull.nodeId}"${extra}}) { pullRequest { merged } } }`,
          )
        ).body,
      );
    emulator.admin.submitReview({
      repo: 'fleetbench/repo-1',
      number: 7,
      state: 'CHANGES_REQUESTED',
      user: 'reviewer-1',
    });
    expect((await merge()).errors[0]).toMatchObject({
      type: 'UNPROCESSABLE',
      message: 'Changes requested by a reviewer with write access.',
      path: ['mergePullRequest'],
    });
    emulator.admin.submitReview({
      repo: 'fleetbench/repo-1',
      number: 7,
      state: 'APPROVED',
      user: 'reviewer-1',
    });
    expect((await merge(`, expectedHeadOid: "${'1'.repeat(40)}"`)).errors[0].message).toBe(
      'Head branch was modified. Review and try the merge again.',
    );
    expect((await merge(`, expectedHeadOid: "${pull.headSha}"`)).data.mergePullRequest).toEqual({
      pullRequest: { merged: true },
    });
  });

  it('the admin API merges regardless: the world acts as an administrator', () => {
    const { emulator } = inProcess();
    expect(emulator.admin.mergePullRequest({ repo: 'fleetbench/repo-1', number: 6 }).state).toBe('merged');
  });
});

describe('creating pull requests and issues', () => {
  it('POST /pulls from a branch GitHub never saw is a 422; after a push it is created', async () => {
    const { post, emulator, apiRecords } = inProcess();
    const before = emulator.state.repo('fleetbench/repo-1').pushedAt;
    const missing = await post(`${REPO}/pulls`, { head: 'agent/new-work', base: 'main', title: 'New work' });
    expect(missing.status).toBe(422);
    expect(JSON.parse(missing.body)).toEqual({
      message: 'Validation Failed',
      errors: [{ resource: 'PullRequest', code: 'invalid', field: 'head' }],
      documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
      status: '422',
    });
    const { sha } = emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'agent/new-work' });
    expect(emulator.state.repo('fleetbench/repo-1').pushedAt).toBeGreaterThan(before);
    const created = await post(`${REPO}/pulls`, {
      head: 'fleetbench:agent/new-work',
      base: 'main',
      title: 'New work',
    });
    expect(created.status).toBe(201);
    expect(JSON.parse(created.body)).toMatchObject({
      number: 8,
      head: { ref: 'agent/new-work', sha },
      state: 'open',
    });
    const again = await post(`${REPO}/pulls`, { head: 'agent/new-work', base: 'main', title: 'Again' });
    expect(JSON.parse(again.body).errors[0].message).toBe(
      'A pull request already exists for fleetbench:agent/new-work.',
    );
    expect(apiRecords().map((r) => [r.status, r.secondaryCost])).toEqual([
      [422, 5],
      [201, 5],
      [422, 5],
    ]);
  });

  it('GraphQL createPullRequest and createIssue: content-creating mutations REST then sees', async () => {
    const { graphql, get, emulator, apiRecords } = inProcess({
      limits: { secondary: { contentPerMinute: 3 } },
    });
    const repoId = emulator.state.repo('fleetbench/repo-1').nodeId;
    const refused = JSON.parse(
      (
        await graphql(
          `mutation { createPullRequest(input: {repositoryId: "${repoId}", baseRefName: "main", headRefName: "never-pushed", title: "T"}) { pullRequest { number } } }`,
        )
      ).body,
    );
    expect(refused.errors[0]).toMatchObject({
      type: 'UNPROCESSABLE',
      message:
        "Head sha can't be blank, Base sha can't be blank, No commits between main and never-pushed, Head ref must be a branch",
    });
    emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'feature/x' });
    const pr = JSON.parse(
      (
        await graphql(
          `mutation Create { createPullRequest(input: {repositoryId: "${repoId}", baseRefName: "main", headRefName: "feature/x", title: "Feature X", body: "Does X", draft: true}) { pullRequest { number isDraft headRefName author { login } } } }`,
        )
      ).body,
    );
    expect(pr.data.createPullRequest.pullRequest).toEqual({
      number: 8,
      isDraft: true,
      headRefName: 'feature/x',
      author: { login: 'fleet-agent' },
    });
    const label = [...emulator.state.repoLabels(emulator.state.repo('fleetbench/repo-1')).values()][0]!;
    const createIssue = async () =>
      JSON.parse(
        (
          await graphql(
            `mutation { createIssue(input: {repositoryId: "${repoId}", title: "Crash on start", body: "Steps", labelIds: ["${label.nodeId}"]}) { issue { number title labels(first: 5) { nodes { name } } } } }`,
          )
        ).body,
      );
    expect((await createIssue()).data.createIssue.issue).toEqual({
      number: 9,
      title: 'Crash on start',
      labels: { nodes: [{ name: label.name }] },
    });
    // The fourth creation in the minute (the refused one counted: it was attempted) meets the
    // content-creation limit, set to 3 here.
    expect((await createIssue()).message).toMatch(/more than 3 content-creating requests per minute/);
    const rest = JSON.parse((await get(`${REPO}/pulls/8`)).body);
    expect(rest).toMatchObject({ title: 'Feature X', body: 'Does X', draft: true });
    expect(JSON.parse((await get(`${REPO}/issues/9`)).body)).toMatchObject({
      title: 'Crash on start',
      body: 'Steps',
    });
    expect(apiRecords().map((r) => [r.op, r.status, r.cost, r.secondaryCost])).toEqual([
      ['mutation createPullRequest', 200, 1, 5],
      ['Create', 200, 1, 5],
      ['mutation createIssue', 200, 1, 5],
      ['mutation createIssue', 403, 0, 0],
      [undefined, 200, 1, 1],
      [undefined, 200, 1, 1],
    ]);
  });
});

describe('REST issue update and close', () => {
  it('closes with a state_reason, sets assignees, reopens', async () => {
    const { transport, get } = inProcess();
    const patch = (body: unknown) =>
      transport.request({
        method: 'PATCH',
        path: `${REPO}/issues/2`,
        headers: {},
        body: JSON.stringify(body),
      });
    const closed = JSON.parse(
      (await patch({ state: 'closed', state_reason: 'not_planned', assignees: ['reviewer-2'] })).body,
    );
    expect(closed).toMatchObject({
      state: 'closed',
      state_reason: 'not_planned',
      assignees: [{ login: 'reviewer-2' }],
    });
    expect(
      JSON.parse((await get(`${REPO}/issues?state=closed`)).body).map((i: { number: number }) => i.number),
    ).toEqual([2]);
    const reopened = JSON.parse((await patch({ state: 'open' })).body);
    expect(reopened).toMatchObject({ state: 'open', state_reason: 'reopened', closed_at: null });
    const bad = await patch({ state_reason: 'bored' });
    expect(bad.status).toBe(422);
  });
});

describe('REST assignees', () => {
  it("are users of the world: an unknown login is GitHub's 422 and nothing is made; repeats count once", async () => {
    const { transport, emulator, post } = inProcess();
    const users = emulator.state.users.size;
    const issues = emulator.state.repo('fleetbench/repo-1').issues.size;
    const strangers = Array.from({ length: 50_000 }, (_, i) => `stranger-${i}`);
    const created = await post(`${REPO}/issues`, { title: 'Flaky', assignees: ['reviewer-2', ...strangers] });
    expect(created.status).toBe(422);
    const refusal = JSON.parse(created.body);
    expect(refusal).toMatchObject({
      message: 'Validation Failed',
      documentation_url: 'https://docs.github.com/rest/issues/issues#create-an-issue',
      status: '422',
    });
    expect(refusal.errors[0]).toMatchObject({ resource: 'Issue', field: 'assignees', code: 'invalid' });
    expect(refusal.errors[0].value.slice(0, 2)).toEqual(['stranger-0', 'stranger-1']);
    expect(emulator.state.repo('fleetbench/repo-1').issues.size).toBe(issues);
    const patch = (body: unknown) =>
      transport.request({
        method: 'PATCH',
        path: `${REPO}/issues/2`,
        headers: {},
        body: JSON.stringify(body),
      });
    expect((await patch({ assignees: strangers })).status).toBe(422);
    // A bot cannot be assigned either.
    expect((await patch({ assignees: ['github-actions[bot]'] })).status).toBe(422);
    expect(emulator.state.users.size).toBe(users);
    // The same login many times is one assignee.
    const repeated = await patch({ assignees: Array.from({ length: 50_000 }, () => 'reviewer-2') });
    expect(repeated.status).toBe(200);
    expect(JSON.parse(repeated.body).assignees.map((u: { login: string }) => u.login)).toEqual([
      'reviewer-2',
    ]);
    const made = await post(`${REPO}/issues`, { title: 'Flaky', assignees: ['reviewer-2', 'REVIEWER-2'] });
    expect(made.status).toBe(201);
    expect(JSON.parse(made.body).assignees).toHaveLength(1);
  });
});

describe('DELETE /repos/{owner}/{repo}/git/refs/{ref}', () => {
  it('deletes a branch (its open pull request closes), 422 when it does not exist; 1 + 5 points', async () => {
    const { transport, emulator, apiRecords } = inProcess();
    const del = (ref: string) =>
      transport.request({ method: 'DELETE', path: `${REPO}/git/refs/${ref}`, headers: {} });
    const done = await del('heads/agent/issue-2');
    expect(done.status).toBe(204);
    expect(done.body).toBe('');
    expect(emulator.state.repo('fleetbench/repo-1').branches.has('agent/issue-2')).toBe(false);
    expect(emulator.admin.findPullRequest({ repo: 'fleetbench/repo-1', number: 7 })!.state).toBe('closed');
    const gone = await del('heads/agent/issue-2');
    expect(gone.status).toBe(422);
    expect(JSON.parse(gone.body)).toEqual({
      message: 'Reference does not exist',
      documentation_url: 'https://docs.github.com/rest/git/refs#delete-a-reference',
      status: '422',
    });
    expect((await del('heads/main')).status).toBe(422);
    expect(apiRecords().map((r) => [r.route, r.status, r.cost, r.secondaryCost])).toEqual([
      ['/repos/{owner}/{repo}/git/refs/{ref}', 204, 1, 5],
      ['/repos/{owner}/{repo}/git/refs/{ref}', 422, 1, 5],
      ['/repos/{owner}/{repo}/git/refs/{ref}', 422, 1, 5],
    ]);
  });
});
