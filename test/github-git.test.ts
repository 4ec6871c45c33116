/**
 * Git refs, branches, a pull request's commits and compare (issue 38's missing routes), through
 * @octokit/core over loopback as an orchestrator calls them: GitHub's shapes, costs and errors;
 * the history the answers come from (each commit's parents); the pull request GitHub refuses
 * when its head holds no commit the base lacks (REST and GraphQL); and `Location` on 201s.
 */
import { Octokit } from '@octokit/core';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { serve } from './helpers/github.ts';

const repo = { owner: 'fleetbench', repo: 'repo-1' };

async function world() {
  const sink = new MemorySink();
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(7),
    trace: sink,
    fixtures: { repos: 1, issuesPerRepo: 4, pullsPerRepo: 2 },
    latency: false,
  });
  const server = await serve(emulator);
  const octokit = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
  const main = emulator.state.repo('fleetbench/repo-1').branches.get('main')!;
  const refused = async (call: Promise<unknown>) => {
    try {
      await call;
    } catch (error) {
      // Octokit's RequestError: the status and GitHub's body.
      const { status, response } = error as { status?: number; response?: { data: Record<string, unknown> } };
      if (status === undefined || response === undefined) throw error;
      return { status, data: response.data };
    }
    throw new Error('expected a refusal');
  };
  return { emulator, server, octokit, main, sink, refused };
}

describe('Git refs', () => {
  it('create, get, update (fast-forward or forced) and delete a branch, with GitHub’s refusals', async () => {
    const { emulator, server, octokit, main, refused, sink } = await world();
    const created = await octokit.request('POST /repos/{owner}/{repo}/git/refs', {
      ...repo,
      ref: 'refs/heads/fleet/one',
      sha: main,
    });
    expect(created.status).toBe(201);
    expect(created.headers.location).toBe(`${server.url}/repos/fleetbench/repo-1/git/refs/heads/fleet/one`);
    expect(created.data).toEqual({
      ref: 'refs/heads/fleet/one',
      node_id: expect.stringMatching(/^REF_/),
      url: `${server.url}/repos/fleetbench/repo-1/git/refs/heads/fleet/one`,
      object: { sha: main, type: 'commit', url: `${server.url}/repos/fleetbench/repo-1/git/commits/${main}` },
    });
    const got = await octokit.request('GET /repos/{owner}/{repo}/git/ref/{ref}', {
      ...repo,
      ref: 'heads/fleet/one',
    });
    expect(got.data).toEqual(created.data);
    expect(
      (
        await refused(
          octokit.request('GET /repos/{owner}/{repo}/git/ref/{ref}', { ...repo, ref: 'heads/nope' }),
        )
      ).status,
    ).toBe(404);
    const create = (ref: string, sha: string) =>
      refused(octokit.request('POST /repos/{owner}/{repo}/git/refs', { ...repo, ref, sha }));
    expect((await create('refs/heads/fleet/one', main)).data.message).toBe('Reference already exists');
    expect((await create('refs/heads/fleet/two', 'f'.repeat(40))).data.message).toBe('Object does not exist');
    expect((await create('heads/fleet/two', main)).data.message).toBe(
      'Reference name must contain at least three slash-separated components.',
    );
    expect((await create('refs/heads/bad..name', main)).data.message).toBe(
      'refs/heads/bad..name is not a valid ref name.',
    );
    expect(emulator.state.repo('fleetbench/repo-1').branches.has('fleet/two')).toBe(false);

    // Forward: a commit made on top of the branch's.
    const { sha: ahead } = emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'fleet/one' });
    const { sha: elsewhere } = emulator.admin.pushBranch({
      repo: 'fleetbench/repo-1',
      branch: 'fleet/other',
    });
    const update = (sha: string, force?: boolean) =>
      octokit.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
        ...repo,
        ref: 'heads/fleet/one',
        sha,
        force,
      });
    // Back to main's commit is not forward; to a sibling neither; forced, both go.
    expect((await refused(update(main))).data.message).toBe('Update is not a fast forward');
    expect((await refused(update(elsewhere))).data.message).toBe('Update is not a fast forward');
    expect((await update(elsewhere, true)).data.object.sha).toBe(elsewhere);
    expect((await update(ahead, true)).data.object.sha).toBe(ahead);
    expect((await refused(update('0'.repeat(40)))).data.message).toBe('Object does not exist');
    const deleted = await octokit.request('DELETE /repos/{owner}/{repo}/git/refs/{ref}', {
      ...repo,
      ref: 'heads/fleet/one',
    });
    expect(deleted.status).toBe(204);
    // Writes cost 1 + 5, reads 1 + 1.
    const costs = sink.records.flatMap((r) =>
      r.kind === 'api' && r.route.includes('/git/ref') ? [[r.method, r.status, r.cost, r.secondaryCost]] : [],
    );
    expect(costs[0]).toEqual(['POST', 201, 1, 5]);
    expect(costs[1]).toEqual(['GET', 200, 1, 1]);
  });
});

describe('branches, compare and a pull request’s commits', () => {
  it('answer from the commits’ history, as GitHub does', async () => {
    const { emulator, server, octokit, main } = await world();
    const first = emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'fleet/work' }).sha;
    const second = emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'fleet/work' }).sha;
    const branches = await octokit.request('GET /repos/{owner}/{repo}/branches', { ...repo, per_page: 100 });
    const names = branches.data.map((b: { name: string }) => b.name);
    expect(names).toEqual([...names].sort());
    expect(branches.data.find((b: { name: string }) => b.name === 'fleet/work')).toEqual({
      name: 'fleet/work',
      commit: { sha: second, url: `${server.url}/repos/fleetbench/repo-1/commits/${second}` },
      protected: false,
    });

    const compare = await octokit.request('GET /repos/{owner}/{repo}/compare/{basehead}', {
      ...repo,
      basehead: 'main...fleet/work',
    });
    expect(compare.data).toMatchObject({
      status: 'ahead',
      ahead_by: 2,
      behind_by: 0,
      total_commits: 2,
      base_commit: { sha: main },
      merge_base_commit: { sha: main },
      html_url: expect.stringMatching(/\/fleetbench\/repo-1\/compare\/main\.\.\.fleet\/work$/),
    });
    expect(compare.data.commits.map((c: { sha: string }) => c.sha)).toEqual([first, second]);
    expect(compare.data.commits[1]).toMatchObject({
      commit: { message: 'Update fleet/work', tree: { sha: expect.stringMatching(/^[0-9a-f]{40}$/) } },
      parents: [{ sha: first }],
    });
    expect(compare.data.files).toHaveLength(2);
    const behind = await octokit.request('GET /repos/{owner}/{repo}/compare/{basehead}', {
      ...repo,
      basehead: 'fleet/work...main',
    });
    expect(behind.data).toMatchObject({ status: 'behind', ahead_by: 0, behind_by: 2, commits: [] });
    const identical = await octokit.request('GET /repos/{owner}/{repo}/compare/{basehead}', {
      ...repo,
      basehead: `main...${main}`,
    });
    expect(identical.data).toMatchObject({ status: 'identical', ahead_by: 0, behind_by: 0 });

    const pull = await octokit.request('POST /repos/{owner}/{repo}/pulls', {
      ...repo,
      head: 'fleet/work',
      base: 'main',
      title: 'Work',
    });
    expect(pull.status).toBe(201);
    expect(pull.headers.location).toBe(`${server.url}/repos/fleetbench/repo-1/pulls/${pull.data.number}`);
    expect(pull.data).toMatchObject({ commits: 2, changed_files: 2 });
    const commits = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/commits', {
      ...repo,
      pull_number: pull.data.number,
    });
    expect(commits.data.map((c: { sha: string }) => c.sha)).toEqual([first, second]);
    expect(commits.data[0]).toMatchObject({
      url: `${server.url}/repos/fleetbench/repo-1/commits/${first}`,
      author: { login: emulator.state.defaultUser.login },
      parents: [{ sha: main }],
    });
    // After the merge the head is in main: main...head is behind, and no new pull request is taken.
    emulator.admin.mergePullRequest({ repo: 'fleetbench/repo-1', number: pull.data.number });
    const merged = await octokit.request('GET /repos/{owner}/{repo}/compare/{basehead}', {
      ...repo,
      basehead: 'main...fleet/work',
    });
    expect(merged.data).toMatchObject({ status: 'behind', ahead_by: 0, behind_by: 1 });
  });

  it('a pull request whose head holds no commit the base lacks is 422 "No commits between", REST and GraphQL', async () => {
    const { emulator, octokit, main, refused } = await world();
    await octokit.request('POST /repos/{owner}/{repo}/git/refs', {
      ...repo,
      ref: 'refs/heads/fleet/empty',
      sha: main,
    });
    const before = emulator.state.repo('fleetbench/repo-1').pulls.size;
    const rest = await refused(
      octokit.request('POST /repos/{owner}/{repo}/pulls', {
        ...repo,
        head: 'fleet/empty',
        base: 'main',
        title: 'x',
      }),
    );
    expect(rest).toEqual({
      status: 422,
      data: {
        message: 'Validation Failed',
        errors: [
          { resource: 'PullRequest', code: 'custom', message: 'No commits between main and fleet/empty' },
        ],
        documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
        status: '422',
      },
    });
    const repoId = emulator.state.repo('fleetbench/repo-1').nodeId;
    const graphql = (await octokit
      .graphql(
        `mutation($r: ID!) { createPullRequest(input: {repositoryId: $r, baseRefName: "main", headRefName: "fleet/empty", title: "x"}) { pullRequest { number } } }`,
        { r: repoId },
      )
      .catch((error: { errors: unknown[] }) => error.errors)) as Array<{ type: string; message: string }>;
    expect(graphql[0]).toMatchObject({
      type: 'UNPROCESSABLE',
      message: 'No commits between main and fleet/empty',
    });
    expect(emulator.state.repo('fleetbench/repo-1').pulls.size).toBe(before);
  });

  it('201 creates carry Location: an issue, a comment, a review comment', async () => {
    const { emulator, server, octokit } = await world();
    const issue = await octokit.request('POST /repos/{owner}/{repo}/issues', { ...repo, title: 'Located' });
    expect(issue.headers.location).toBe(`${server.url}/repos/fleetbench/repo-1/issues/${issue.data.number}`);
    const comment = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      ...repo,
      issue_number: issue.data.number,
      body: 'here',
    });
    expect(comment.headers.location).toBe(
      `${server.url}/repos/fleetbench/repo-1/issues/comments/${comment.data.id}`,
    );
    expect(comment.data.url).toBe(comment.headers.location);
    const review = await octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/comments', {
      ...repo,
      pull_number: 5,
      commit_id: emulator.state.pull(emulator.state.repo('fleetbench/repo-1'), 5).headSha,
      body: 'nit',
      path: 'src/a.ts',
      line: 1,
    });
    expect(review.headers.location).toBe(
      `${server.url}/repos/fleetbench/repo-1/pulls/comments/${review.data.id}`,
    );
    expect(review.data.url).toBe(review.headers.location);
  });
});
