/**
 * The REST routes a control plane and a CI bot use beside issues and pulls (issue 51): an
 * issue's labels and the events they leave (REST events and GraphQL `timelineItems`), commit
 * statuses and check runs with GitHub's bounds, pending reviews, "has it been merged", and a
 * repository's merge settings. Each through Octokit against the emulator served on 127.0.0.1.
 */
import { Octokit } from '@octokit/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import {
  MAX_CHECK_OUTPUT_CHARS,
  MAX_CHECK_RUNS_PER_COMMIT,
  MAX_STATUS_DESCRIPTION_CHARS,
  MAX_STATUSES_PER_CONTEXT,
} from '../src/github/world/checks.ts';
import { inProcess, serve } from './helpers/github.ts';

const repo = { owner: 'fleetbench', repo: 'repo-1' };

async function world() {
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(5),
    fixtures: { repos: 1, issuesPerRepo: 6, pullsPerRepo: 3 },
    latency: false,
  });
  const server = await serve(emulator);
  const as = (token: string) => new Octokit({ baseUrl: server.url, auth: token });
  return {
    emulator,
    url: server.url,
    octokit: as(emulator.defaultToken),
    ci: as(emulator.mintToken({ kind: 'actions', repo: 'fleetbench/repo-1' }).token),
    as,
  };
}

/** A refused request's status and body (Octokit throws on 4xx). */
async function refusal(call: Promise<unknown>): Promise<{ status: number; data: unknown }> {
  try {
    await call;
  } catch (error) {
    const e = error as { status: number; response?: { data: unknown } };
    return { status: e.status, data: e.response?.data };
  }
  throw new Error('the request was not refused');
}

describe('issue labels over REST', () => {
  it('adds, replaces and removes labels, each change an event in REST and GraphQL', async () => {
    const { octokit } = await world();
    const issue = { ...repo, issue_number: 1 };
    const names = (data: { name: string }[]) => data.map((l) => l.name).sort();
    await octokit.request('PUT /repos/{owner}/{repo}/issues/{issue_number}/labels', {
      ...issue,
      labels: ['agent:working'],
    });
    const swapped = await octokit.request('PUT /repos/{owner}/{repo}/issues/{issue_number}/labels', {
      ...issue,
      labels: ['agent:done'],
    });
    expect(names(swapped.data)).toEqual(['agent:done']);
    const added = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', {
      ...issue,
      labels: ['bug'],
    });
    expect(names(added.data)).toEqual(['agent:done', 'bug']);
    const removed = await octokit.request(
      'DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}',
      {
        ...issue,
        name: 'bug',
      },
    );
    expect(names(removed.data)).toEqual(['agent:done']);
    expect(
      (
        await refusal(
          octokit.request('DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}', {
            ...issue,
            name: 'bug',
          }),
        )
      ).status,
    ).toBe(404);
    // A label first named on an issue is the repository's.
    const label = await octokit.request('GET /repos/{owner}/{repo}/labels/{name}', {
      ...repo,
      name: 'agent:done',
    });
    expect(label.data.name).toBe('agent:done');
    const listed = await octokit.request('GET /repos/{owner}/{repo}/labels', { ...repo, per_page: 100 });
    expect(listed.data.map((l: { name: string }) => l.name)).toContain('agent:done');

    const events = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/events', issue);
    // The fixture's own labels (removed by the first PUT) left aside.
    const ours = (name?: string) => name === 'bug' || name?.startsWith('agent:') === true;
    const labelEvents = events.data
      .filter(
        (e: { event: string; label?: { name: string } }) =>
          (e.event === 'labeled' || e.event === 'unlabeled') && ours(e.label?.name),
      )
      .map((e: { event: string; label?: { name: string } }) => `${e.event} ${e.label?.name}`);
    expect(labelEvents).toEqual([
      'labeled agent:working',
      'unlabeled agent:working',
      'labeled agent:done',
      'labeled bug',
      'unlabeled bug',
    ]);
    const { repository } = await octokit.graphql<{
      repository: { issue: { timelineItems: { nodes: { __typename: string; label: { name: string } }[] } } };
    }>(
      `query { repository(owner: "fleetbench", name: "repo-1") { issue(number: 1) {
        timelineItems(first: 20, itemTypes: [LABELED_EVENT, UNLABELED_EVENT]) {
          nodes { __typename ... on LabeledEvent { label { name } } ... on UnlabeledEvent { label { name } } } } } } }`,
    );
    expect(
      repository.issue.timelineItems.nodes
        .filter((n) => ours(n.label.name))
        .map((n) => `${n.__typename} ${n.label.name}`),
    ).toEqual([
      'LabeledEvent agent:working',
      'UnlabeledEvent agent:working',
      'LabeledEvent agent:done',
      'LabeledEvent bug',
      'UnlabeledEvent bug',
    ]);
  });
});

describe('repository labels over REST', () => {
  it("creates, reads, renames and deletes a label; a taken name is GitHub's already_exists", async () => {
    const { octokit } = await world();
    const made = await octokit.request('POST /repos/{owner}/{repo}/labels', {
      ...repo,
      name: 'agent:queued',
      color: '#FBCA04',
      description: 'Waiting for an agent',
    });
    expect(made.status).toBe(201);
    expect(made.headers.location).toBe(made.data.url);
    expect(made.data).toMatchObject({
      name: 'agent:queued',
      color: 'FBCA04',
      description: 'Waiting for an agent',
    });
    // Names are case-insensitive: a second in another case is refused as GitHub words it.
    const taken = await refusal(
      octokit.request('POST /repos/{owner}/{repo}/labels', { ...repo, name: 'Agent:Queued' }),
    );
    expect(taken).toMatchObject({
      status: 422,
      data: {
        message: 'Validation Failed',
        errors: [{ resource: 'Label', code: 'already_exists', field: 'name' }],
      },
    });
    const read = await octokit.request('GET /repos/{owner}/{repo}/labels/{name}', {
      ...repo,
      name: 'AGENT:QUEUED',
    });
    expect(read.data.id).toBe(made.data.id);

    // A label on an issue follows its rename; deleting it takes it off the issue.
    const issue = { ...repo, issue_number: 2 };
    await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', {
      ...issue,
      labels: ['agent:queued'],
    });
    const before = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', issue);
    const renamed = await octokit.request('PATCH /repos/{owner}/{repo}/labels/{name}', {
      ...repo,
      name: 'agent:queued',
      new_name: 'agent:waiting',
      color: '00ff00',
    });
    expect(renamed.data).toMatchObject({ id: made.data.id, name: 'agent:waiting', color: '00ff00' });
    const after = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', {
      ...issue,
      headers: { 'if-none-match': String(before.headers.etag) },
    });
    expect(after.status).toBe(200);
    expect(after.data.labels.map((l) => (typeof l === 'string' ? l : l.name))).toContain('agent:waiting');
    expect(after.data.updated_at).toBe(before.data.updated_at);
    expect(
      (
        await refusal(
          octokit.request('GET /repos/{owner}/{repo}/labels/{name}', { ...repo, name: 'agent:queued' }),
        )
      ).status,
    ).toBe(404);
    const gone = await octokit.request('DELETE /repos/{owner}/{repo}/labels/{name}', {
      ...repo,
      name: 'agent:waiting',
    });
    expect(gone.status).toBe(204);
    const stripped = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/labels', issue);
    expect(stripped.data.map((l: { name: string }) => l.name)).not.toContain('agent:waiting');
    // A label no issue carries any more is still the repository's, as on GitHub.
    await octokit.request('POST /repos/{owner}/{repo}/labels', { ...repo, name: 'unused' });
    const listed = await octokit.request('GET /repos/{owner}/{repo}/labels', { ...repo, per_page: 100 });
    expect(listed.data.map((l: { name: string }) => l.name)).toContain('unused');
  });

  it('refuses what GitHub refuses: no name, a bad color, a long name or description, bad JSON', async () => {
    const { octokit, emulator, url } = await world();
    // Bodies Octokit's types would not let through, sent as a careless client sends them.
    const create = (body: Record<string, unknown>) =>
      refusal(octokit.request('POST /repos/{owner}/{repo}/labels', { ...repo, ...body } as never));
    expect(await create({ color: 'ffffff' })).toMatchObject({
      status: 422,
      data: { errors: [{ resource: 'Label', code: 'missing_field', field: 'name' }] },
    });
    expect(await create({ name: 'x', color: 'blue' })).toMatchObject({
      status: 422,
      data: { errors: [{ code: 'invalid', field: 'color' }] },
    });
    expect(await create({ name: 42 })).toMatchObject({ status: 422, data: { errors: [{ field: 'name' }] } });
    expect(await create({ name: 'n'.repeat(1_000_000) })).toMatchObject({
      status: 422,
      data: { errors: [{ message: 'name is too long (maximum is 50 characters)' }] },
    });
    expect(await create({ name: 'ok', description: 'd'.repeat(101) })).toMatchObject({
      status: 422,
      data: { errors: [{ code: 'invalid', field: 'description' }] },
    });
    for (const [method, path] of [
      ['POST', 'labels'],
      ['PATCH', 'labels/bug'],
    ])
      expect(
        (
          await fetch(`${url}/repos/fleetbench/repo-1/${path}`, {
            method,
            headers: { authorization: `token ${emulator.defaultToken}` },
            body: '{"name": ',
          })
        ).status,
      ).toBe(400);
    // A path naming a label of absurd length is a plain 404 (past 16 KB of head, node:http's 4xx).
    expect(
      (
        await refusal(
          octokit.request('GET /repos/{owner}/{repo}/labels/{name}', { ...repo, name: 'L'.repeat(10_000) }),
        )
      ).status,
    ).toBe(404);
    for (const method of ['PATCH', 'DELETE'] as const)
      expect(
        (
          await refusal(
            octokit.request(`${method} /repos/{owner}/{repo}/labels/{name}`, {
              ...repo,
              name: 'L'.repeat(10_000),
            }),
          )
        ).status,
      ).toBe(404);
    const listed = await octokit.request('GET /repos/{owner}/{repo}/labels', { ...repo, per_page: 100 });
    expect(listed.data.map((l: { name: string }) => l.name)).not.toContain('ok');
  });
});

describe("a repository's label table: invariants under any sequence of writes", () => {
  // Names differing only in case, to search for two labels GitHub would call one.
  const name = fc.constantFrom('bug', 'Bug', 'BUG', 'agent:x', 'Agent:X', 'todo');
  const issueNumber = fc.constantFrom(1, 2, 7);
  const op = fc.oneof(
    fc.record({ kind: fc.constant('create' as const), name }),
    fc.record({ kind: fc.constant('rename' as const), name, to: name }),
    fc.record({ kind: fc.constant('delete' as const), name }),
    fc.record({
      kind: fc.constant('add' as const),
      issue: issueNumber,
      names: fc.array(name, { maxLength: 3 }),
    }),
    fc.record({
      kind: fc.constant('set' as const),
      issue: issueNumber,
      names: fc.array(name, { maxLength: 3 }),
    }),
    fc.record({ kind: fc.constant('remove' as const), issue: issueNumber, name }),
  );

  it('one label per name in any case; every issue holds table labels, each once; never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 15 }), async (ops) => {
        const { emulator, transport } = inProcess({
          fixtures: { repos: 1, issuesPerRepo: 4, pullsPerRepo: 2 },
        });
        const base = '/repos/fleetbench/repo-1';
        const send = (method: string, path: string, body?: unknown) =>
          transport.request({
            method,
            path: `${base}${path}`,
            headers: {},
            body: body === undefined ? undefined : JSON.stringify(body),
          });
        const repo = emulator.state.repo('fleetbench/repo-1');
        for (const o of ops) {
          const res =
            o.kind === 'create'
              ? await send('POST', '/labels', { name: o.name })
              : o.kind === 'rename'
                ? await send('PATCH', `/labels/${encodeURIComponent(o.name)}`, { new_name: o.to })
                : o.kind === 'delete'
                  ? await send('DELETE', `/labels/${encodeURIComponent(o.name)}`)
                  : o.kind === 'add'
                    ? await send('POST', `/issues/${o.issue}/labels`, { labels: o.names })
                    : o.kind === 'set'
                      ? await send('PUT', `/issues/${o.issue}/labels`, { labels: o.names })
                      : await send('DELETE', `/issues/${o.issue}/labels/${encodeURIComponent(o.name)}`);
          expect([200, 201, 204, 404, 422]).toContain(res.status);
          const table = [...repo.labels.entries()];
          for (const [key, label] of table) expect(key).toBe(label.name.toLowerCase());
          const held = new Set(repo.labels.values());
          for (const issue of repo.issues.values()) {
            for (const label of issue.labels) expect(held.has(label)).toBe(true);
            const lower = issue.labels.map((l) => l.name.toLowerCase());
            expect(new Set(lower).size).toBe(lower.length);
          }
          const listed = JSON.parse((await send('GET', '/labels?per_page=100')).body) as { name: string }[];
          expect(listed.map((l) => l.name).sort()).toEqual(
            [...repo.labels.values()].map((l) => l.name).sort(),
          );
        }
        emulator.close();
      }),
      { seed: 51, numRuns: 60 },
    );
  });
});

describe('closing keywords', () => {
  it('links a pull request to the issue its body closes: GraphQL closedByPullRequestsReferences, the merge closing it', async () => {
    const { octokit, emulator } = await world();
    emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'fix/five' });
    const opened = await octokit.request('POST /repos/{owner}/{repo}/pulls', {
      ...repo,
      head: 'fix/five',
      base: 'main',
      title: 'Fix five',
      body: 'Some context.\n\nfixes: #5, and mentions #6',
    });
    const closers = async (number: number, extra = '') => {
      const { repository } = await octokit.graphql<{
        repository: {
          issue: { closedByPullRequestsReferences: { nodes: { number: number; state: string }[] } };
        };
      }>(
        `{ repository(owner: "fleetbench", name: "repo-1") { issue(number: ${number}) { closedByPullRequestsReferences(first: 10${extra}) { nodes { number state } } } } }`,
      );
      return repository.issue.closedByPullRequestsReferences.nodes;
    };
    expect(await closers(5)).toEqual([{ number: opened.data.number, state: 'OPEN' }]);
    expect(await closers(6)).toEqual([]);
    // An edit of the body moves the link, as GitHub re-reads the keywords.
    await octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
      ...repo,
      pull_number: opened.data.number,
      body: 'Resolves fleetbench/repo-1#6',
    });
    expect(await closers(5)).toEqual([]);
    expect(await closers(6)).toEqual([{ number: opened.data.number, state: 'OPEN' }]);
    const pull = emulator.state.repo('fleetbench/repo-1').pulls.get(opened.data.number)!;
    emulator.admin.submitReview({
      repo: 'fleetbench/repo-1',
      number: pull.issue.number,
      state: 'APPROVED',
      user: 'reviewer-1',
    });
    await emulator.admin.setCheckRun({
      repo: 'fleetbench/repo-1',
      number: pull.issue.number,
      conclusion: 'success',
    });
    await octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
      ...repo,
      pull_number: opened.data.number,
    });
    const six = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', {
      ...repo,
      issue_number: 6,
    });
    expect(six.data.state).toBe('closed');
    // A merged pull request is closed: listed only with includeClosedPrs.
    expect(await closers(6)).toEqual([]);
    expect(await closers(6, ', includeClosedPrs: true')).toEqual([
      { number: opened.data.number, state: 'MERGED' },
    ]);
  });
});

describe("a repository's issue comments over REST", () => {
  it('lists every issue and pull request comment of the repository, not an issue numbered "comments"', async () => {
    const { octokit } = await world();
    for (const issue_number of [2, 7])
      await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        ...repo,
        issue_number,
        body: `note on ${issue_number}`,
      });
    const all = await octokit.request('GET /repos/{owner}/{repo}/issues/comments', {
      ...repo,
      per_page: 100,
    });
    const ours = all.data.filter((c) => c.body?.startsWith('note on '));
    expect(ours.map((c) => [c.body, c.issue_url.split('/').at(-1)])).toEqual([
      ['note on 2', '2'],
      ['note on 7', '7'],
    ]);
    const newest = await octokit.request('GET /repos/{owner}/{repo}/issues/comments', {
      ...repo,
      direction: 'desc',
      per_page: 1,
    });
    expect(newest.data.map((c) => c.body)).toEqual(['note on 7']);
    const later = await octokit.request('GET /repos/{owner}/{repo}/issues/comments', {
      ...repo,
      since: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(later.data).toEqual([]);
  });
});

describe('commit statuses and check runs over REST', () => {
  it('shows a status in the combined status and refuses what GitHub refuses', async () => {
    const { emulator, octokit } = await world();
    const sha = emulator.state.repo('fleetbench/repo-1').pulls.get(7)!.headSha;
    await octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
      ...repo,
      sha,
      state: 'failure',
      context: 'ci/lint',
      description: 'lint failed',
    });
    const combined = await octokit.request('GET /repos/{owner}/{repo}/commits/{ref}/status', {
      ...repo,
      ref: sha,
    });
    expect(combined.data.state).toBe('failure');
    expect(combined.data.statuses.map((s: { context: string }) => s.context)).toContain('ci/lint');

    for (const description of ['x'.repeat(MAX_STATUS_DESCRIPTION_CHARS + 1), 'x'.repeat(1_000_000)]) {
      const long = await refusal(
        octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
          ...repo,
          sha,
          state: 'success',
          description,
        }),
      );
      expect(long.status).toBe(422);
      expect(JSON.stringify(long.data)).toContain('description is too long (maximum is 140 characters)');
    }
    const unknown = await refusal(
      octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
        ...repo,
        sha: 'f'.repeat(40),
        state: 'success',
      }),
    );
    expect(unknown.status).toBe(422);

    // GitHub keeps at most 1,000 statuses of one commit and context.
    const commit = emulator.state.repo('fleetbench/repo-1').commits.get(sha)!;
    for (
      let i = commit.statuses.filter((s) => s.context === 'ci/many').length;
      i < MAX_STATUSES_PER_CONTEXT;
      i++
    )
      emulator.state.setStatus(commit, { context: 'ci/many', state: 'pending' });
    const full = await refusal(
      octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
        ...repo,
        sha,
        state: 'success',
        context: 'ci/many',
      }),
    );
    expect(full.status).toBe(422);
    expect(JSON.stringify(full.data)).toContain(
      'This SHA and context has reached the maximum number of statuses.',
    );
  });

  it('check runs: written by an app token only, updated to a conclusion, bounded', async () => {
    const { emulator, octokit, ci } = await world();
    const sha = emulator.state.repo('fleetbench/repo-1').pulls.get(8)!.headSha;
    const create = (client: Octokit, extra: Record<string, unknown> = {}) =>
      client.request('POST /repos/{owner}/{repo}/check-runs', {
        ...repo,
        name: 'build',
        head_sha: sha,
        ...extra,
      });
    expect((await refusal(create(octokit))).status).toBe(403);
    const run = await create(ci, { status: 'in_progress' });
    expect(run.status).toBe(201);
    expect(run.data).toMatchObject({
      status: 'in_progress',
      conclusion: null,
      app: { slug: 'github-actions' },
    });
    const done = await ci.request('PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}', {
      ...repo,
      check_run_id: run.data.id,
      conclusion: 'failure',
      output: { title: 'Build', summary: 'one test failed' },
    });
    expect(done.data).toMatchObject({ status: 'completed', conclusion: 'failure' });
    const listed = await octokit.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
      ...repo,
      ref: sha,
      check_name: 'build',
    });
    expect(listed.data.check_runs.map((r) => [r.id, r.conclusion])).toEqual([[run.data.id, 'failure']]);
    const suites = await octokit.request('GET /repos/{owner}/{repo}/commits/{ref}/check-suites', {
      ...repo,
      ref: sha,
    });
    expect(suites.data.check_suites.map((s) => s.id)).toContain(run.data.check_suite?.id);

    for (const text of ['x'.repeat(MAX_CHECK_OUTPUT_CHARS + 1), 'x'.repeat(2_000_000)]) {
      const long = await refusal(create(ci, { output: { title: 'Build', summary: 'ok', text } }));
      expect(long.status).toBe(422);
      expect(JSON.stringify(long.data)).toContain('output.text is too long (maximum is 65535 characters)');
    }
    expect((await refusal(create(ci, { status: 'sideways' }))).status).toBe(422);
    expect((await refusal(create(ci, { head_sha: 'f'.repeat(40) }))).status).toBe(422);

    const commit = emulator.state.repo('fleetbench/repo-1').commits.get(sha)!;
    while (commit.checkRuns.length < MAX_CHECK_RUNS_PER_COMMIT)
      emulator.state.checks.createCheckRun(commit, { name: 'filler' }, 'github-actions');
    const full = await refusal(create(ci));
    expect(full.status).toBe(422);
    expect(JSON.stringify(full.data)).toContain('at most 1000 check runs');
  });
});

describe('reviews, merges and repository settings over REST', () => {
  it('a pending review is its author’s until submitted; one’s own approval is refused in GitHub’s words', async () => {
    const { emulator, octokit, as } = await world();
    const reviewer = as(emulator.mintToken({ user: 'reviewer-1' }).token);
    const pull = { ...repo, pull_number: 7 };
    const pending = await reviewer.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
      ...pull,
      body: 'draft thoughts',
    });
    expect(pending.data.state).toBe('PENDING');
    const review = { ...pull, review_id: Number(pending.data.id) };
    expect(
      (
        await refusal(
          octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}', review),
        )
      ).status,
    ).toBe(404);
    const submitted = await reviewer.request(
      'POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/events',
      { ...review, event: 'REQUEST_CHANGES' },
    );
    expect(submitted.data.state).toBe('CHANGES_REQUESTED');
    const seen = await octokit.request(
      'GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}',
      review,
    );
    expect(seen.data.state).toBe('CHANGES_REQUESTED');
    const deleted = await refusal(
      reviewer.request('DELETE /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}', review),
    );
    expect(deleted).toMatchObject({
      status: 422,
      data: { errors: ['Can not delete a non-pending pull request review'] },
    });
    const own = await refusal(
      octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
        ...pull,
        event: 'APPROVE',
      }),
    );
    expect(own).toMatchObject({ status: 422, data: { errors: ['Can not approve your own pull request'] } });
  });

  it('answers "has it been merged" 404 before the merge and 204 after; merge settings refuse none enabled', async () => {
    const { emulator, octokit, as } = await world();
    const pull = { ...repo, pull_number: 8 };
    // The fixture repository asks for an approving review before a merge.
    await as(emulator.mintToken({ user: 'reviewer-1' }).token).request(
      'POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews',
      { ...pull, event: 'APPROVE' },
    );
    expect(
      (await refusal(octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/merge', pull))).status,
    ).toBe(404);
    await octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', pull);
    expect((await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/merge', pull)).status).toBe(
      204,
    );

    const patched = await octokit.request('PATCH /repos/{owner}/{repo}', {
      ...repo,
      allow_merge_commit: false,
      delete_branch_on_merge: true,
    });
    expect(patched.data).toMatchObject({ allow_merge_commit: false, delete_branch_on_merge: true });
    const none = await refusal(
      octokit.request('PATCH /repos/{owner}/{repo}', {
        ...repo,
        allow_squash_merge: false,
        allow_rebase_merge: false,
      }),
    );
    expect(none.status).toBe(422);
    expect(JSON.stringify(none.data)).toContain('At least one merge method must be enabled');
    const bad = await refusal(
      octokit.request('PATCH /repos/{owner}/{repo}', {
        ...repo,
        allow_merge_commit: 'yes' as unknown as boolean,
      }),
    );
    expect(bad.status).toBe(422);

    // With merge commits off and delete_branch_on_merge on: a merge commit is refused, a squash
    // titled by commit_title lands as one commit and its head branch goes.
    const seven = { ...repo, pull_number: 7 };
    await as(emulator.mintToken({ user: 'reviewer-1' }).token).request(
      'POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews',
      { ...seven, event: 'APPROVE' },
    );
    const head = (await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', seven)).data.head
      .ref;
    const refused = await refusal(
      octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
        ...seven,
        merge_method: 'merge',
      }),
    );
    expect(refused.status).toBe(405);
    const squashed = await octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
      ...seven,
      merge_method: 'squash',
      commit_title: 'Squash: fix one (#7)',
    });
    const commit = await octokit.request('GET /repos/{owner}/{repo}/commits/{ref}', {
      ...repo,
      ref: squashed.data.sha,
    });
    expect(commit.data.commit.message.split('\n')[0]).toBe('Squash: fix one (#7)');
    expect(commit.data.parents).toHaveLength(1);
    expect(
      (
        await refusal(
          octokit.request('GET /repos/{owner}/{repo}/branches/{branch}', { ...repo, branch: head }),
        )
      ).status,
    ).toBe(404);
  });
});

describe("an issue's assignees over REST", () => {
  it('adds and removes assignees, each change an event; says who may be assigned; refuses a login that is no user', async () => {
    const { emulator, octokit } = await world();
    emulator.mintToken({ user: 'second-agent' });
    const issue = { ...repo, issue_number: 1 };
    const logins = (data: { assignees?: { login: string }[] | null }) =>
      (data.assignees ?? []).map((u) => u.login);
    const added = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/assignees', {
      ...issue,
      assignees: ['fleet-agent'],
    });
    expect(added.status).toBe(201);
    expect(logins(added.data)).toEqual(['fleet-agent']);
    const both = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/assignees', {
      ...issue,
      assignees: ['second-agent', 'fleet-agent'],
    });
    expect(logins(both.data)).toEqual(['fleet-agent', 'second-agent']);
    // A login that is no user of the world: 422 naming it, nothing written.
    const refused = await refusal(
      octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/assignees', {
        ...issue,
        assignees: ['second-agent', 'nobody-here'],
      }),
    );
    expect(refused).toMatchObject({
      status: 422,
      data: { errors: [{ value: ['nobody-here'], resource: 'Issue', field: 'assignees', code: 'invalid' }] },
    });
    const removed = await octokit.request('DELETE /repos/{owner}/{repo}/issues/{issue_number}/assignees', {
      ...issue,
      assignees: ['fleet-agent'],
    });
    expect(removed.status).toBe(200);
    expect(logins(removed.data)).toEqual(['second-agent']);
    const events = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/events', issue);
    expect(
      events.data.map((e) => `${e.event} ${(e as { assignee?: { login: string } }).assignee?.login}`),
    ).toEqual(['assigned fleet-agent', 'assigned second-agent', 'unassigned fleet-agent']);
    // Who may be assigned.
    const list = await octokit.request('GET /repos/{owner}/{repo}/assignees', repo);
    expect(list.data.map((u) => u.login)).toEqual(expect.arrayContaining(['fleet-agent', 'second-agent']));
    const can = (assignee: string) =>
      octokit.request('GET /repos/{owner}/{repo}/assignees/{assignee}', { ...repo, assignee }).then(
        (r) => r.status,
        (e: { status: number }) => e.status,
      );
    expect(await can('second-agent')).toBe(204);
    expect(await can('nobody-here')).toBe(404);
    const canIssue = (assignee: string) =>
      octokit
        .request('GET /repos/{owner}/{repo}/issues/{issue_number}/assignees/{assignee}', {
          ...issue,
          assignee,
        })
        .then(
          (r) => r.status,
          (e: { status: number }) => e.status,
        );
    expect(await canIssue('fleet-agent')).toBe(204);
    expect(await canIssue('nobody-here')).toBe(404);
  });

  it('property: any sequence of adds and removes leaves the assignees a model set says, in the order first added', async () => {
    const login = fc.constantFrom('fleet-agent', 'second-agent', 'third-agent', 'ghost-login');
    const op = fc.record({
      add: fc.boolean(),
      logins: fc.array(login as fc.Arbitrary<string>, { maxLength: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const { emulator, transport } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 1 } });
        emulator.mintToken({ user: 'second-agent' });
        emulator.mintToken({ user: 'third-agent' });
        let model: string[] = [];
        for (const { add, logins } of ops) {
          const res = await transport.request({
            method: add ? 'POST' : 'DELETE',
            path: '/repos/fleetbench/repo-1/issues/1/assignees',
            headers: {},
            body: JSON.stringify({ assignees: logins }),
          });
          if (logins.includes('ghost-login')) {
            expect(res.status).toBe(422);
            continue;
          }
          expect(res.status).toBe(add ? 201 : 200);
          model = add ? [...new Set([...model, ...logins])] : model.filter((l) => !logins.includes(l));
          expect(
            (JSON.parse(res.body) as { assignees: { login: string }[] }).assignees.map((u) => u.login),
          ).toEqual(model);
        }
        const issue = emulator.state.repo('fleetbench/repo-1').issues.get(1)!;
        expect(issue.assignees.map((u) => u.login)).toEqual(model);
      }),
      { numRuns: 60 },
    );
  });
});

describe('reactions on issues and issue comments over REST', () => {
  it('adds one of each content per user (again: the first, 200), lists, filters, deletes; the issue’s rollup counts them', async () => {
    const { emulator, octokit, as } = await world();
    const other = as(emulator.mintToken({ user: 'second-agent' }).token);
    const issue = { ...repo, issue_number: 1 };
    const eyes = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
      ...issue,
      content: 'eyes',
    });
    expect(eyes.status).toBe(201);
    expect(eyes.data).toMatchObject({ content: 'eyes', user: { login: 'fleet-agent' } });
    const again = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
      ...issue,
      content: 'eyes',
    });
    expect(again.status).toBe(200);
    expect(again.data.id).toBe(eyes.data.id);
    await other.request('POST /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
      ...issue,
      content: 'eyes',
    });
    await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
      ...issue,
      content: 'rocket',
    });
    const rollup = (await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', issue)).data
      .reactions;
    expect(rollup).toMatchObject({ total_count: 3, eyes: 2, rocket: 1, '+1': 0 });
    const onlyEyes = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
      ...issue,
      content: 'eyes',
    });
    expect(onlyEyes.data.map((r) => r.user?.login)).toEqual(['fleet-agent', 'second-agent']);
    expect(
      await refusal(
        octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
          ...issue,
          content: 'thumbsup' as 'eyes',
        }),
      ),
    ).toMatchObject({
      status: 422,
      data: { errors: [{ resource: 'Reaction', field: 'content', code: 'invalid' }] },
    });
    const deleted = await octokit.request(
      'DELETE /repos/{owner}/{repo}/issues/{issue_number}/reactions/{reaction_id}',
      {
        ...issue,
        reaction_id: eyes.data.id,
      },
    );
    expect(deleted.status).toBe(204);
    expect(
      (
        await refusal(
          octokit.request('DELETE /repos/{owner}/{repo}/issues/{issue_number}/reactions/{reaction_id}', {
            ...issue,
            reaction_id: eyes.data.id,
          }),
        )
      ).status,
    ).toBe(404);
    expect(
      (await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', issue)).data.reactions,
    ).toMatchObject({
      total_count: 2,
      eyes: 1,
    });

    // On the comment that asked for the work.
    const comment = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      ...issue,
      body: '/agent fix it',
    });
    const onComment = await octokit.request(
      'POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions',
      {
        ...repo,
        comment_id: comment.data.id,
        content: '+1',
      },
    );
    expect(onComment.status).toBe(201);
    const listed = await octokit.request('GET /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions', {
      ...repo,
      comment_id: comment.data.id,
    });
    expect(listed.data.map((r) => r.content)).toEqual(['+1']);
    expect(
      (
        await refusal(
          octokit.request('GET /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions', {
            ...repo,
            comment_id: 999_999,
          }),
        )
      ).status,
    ).toBe(404);
    const removed = await octokit.request(
      'DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions/{reaction_id}',
      { ...repo, comment_id: comment.data.id, reaction_id: onComment.data.id },
    );
    expect(removed.status).toBe(204);
    // The issue's own reactions are apart from its comment's.
    expect(
      (await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', issue)).data.reactions
        ?.total_count,
    ).toBe(2);
  });

  it('property: after any adds and deletes, the reactions are one per user and content, as a model set says, and the rollup counts them', async () => {
    const content = fc.constantFrom('eyes', '+1', 'rocket');
    const who = fc.constantFrom(0, 1);
    const op = fc.oneof(
      fc.record({ add: fc.constant(true), who, content }),
      fc.record({ add: fc.constant(false), who, content }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
        const { emulator } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 1 } });
        const tokens = [emulator.defaultToken, emulator.mintToken({ user: 'second-agent' }).token];
        const path = '/repos/fleetbench/repo-1/issues/1/reactions';
        const send = (token: string, method: string, p: string, body?: unknown) =>
          emulator.handle({
            method,
            path: p,
            headers: { authorization: `token ${token}` },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          });
        const model = new Map<string, number>();
        for (const o of ops) {
          const key = `${o.who} ${o.content}`;
          if (o.add) {
            const res = await send(tokens[o.who]!, 'POST', path, { content: o.content });
            expect(res.status).toBe(model.has(key) ? 200 : 201);
            const id = (JSON.parse(res.body) as { id: number }).id;
            if (model.has(key)) expect(id).toBe(model.get(key));
            model.set(key, id);
          } else if (model.has(key)) {
            const res = await send(tokens[o.who]!, 'DELETE', `${path}/${model.get(key)}`);
            expect(res.status).toBe(204);
            model.delete(key);
          }
        }
        const listed = JSON.parse((await send(tokens[0]!, 'GET', `${path}?per_page=100`)).body) as {
          id: number;
        }[];
        expect(listed.map((r) => r.id).sort((a, b) => a - b)).toEqual(
          [...model.values()].sort((a, b) => a - b),
        );
        const issue = JSON.parse(
          (await send(tokens[0]!, 'GET', '/repos/fleetbench/repo-1/issues/1')).body,
        ) as {
          reactions: { total_count: number; eyes: number };
        };
        expect(issue.reactions.total_count).toBe(model.size);
        expect(issue.reactions.eyes).toBe([...model.keys()].filter((k) => k.endsWith(' eyes')).length);
      }),
      { numRuns: 60 },
    );
  });
});

describe('review requests over REST', () => {
  it('asks collaborators for a review, lists them, takes them off once they review or when removed; each an event, in GraphQL too', async () => {
    const { emulator, octokit, as } = await world();
    const pr = { ...repo, pull_number: 7 };
    const author = emulator.state.repo('fleetbench/repo-1').pulls.get(7)!.issue.user.login;
    const asked = await octokit.request(
      'POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers',
      {
        ...pr,
        reviewers: ['reviewer-1', 'reviewer-2'],
      },
    );
    expect(asked.status).toBe(201);
    expect(asked.data.requested_reviewers?.map((u) => u.login)).toEqual(['reviewer-1', 'reviewer-2']);
    const listed = await octokit.request(
      'GET /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers',
      pr,
    );
    expect(listed.data).toMatchObject({
      users: [{ login: 'reviewer-1' }, { login: 'reviewer-2' }],
      teams: [],
    });
    // GitHub's refusals: the author, someone who is no collaborator, a team; nothing written.
    for (const body of [
      { reviewers: [author] },
      { reviewers: ['nobody-here'] },
      { team_reviewers: ['core'] },
    ]) {
      const refused = await refusal(
        octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', {
          ...pr,
          ...body,
        }),
      );
      expect(refused.status, JSON.stringify(body)).toBe(422);
    }
    expect(
      (
        await refusal(
          octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', pr),
        )
      ).status,
    ).toBe(422);
    // reviewer-1 reviews: no longer requested. reviewer-2's request is removed.
    const reviewer = as(emulator.mintToken({ user: 'reviewer-1' }).token);
    await reviewer.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
      ...pr,
      event: 'COMMENT',
      body: 'Looked',
    });
    const after = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', pr);
    expect(after.data.requested_reviewers?.map((u) => u.login)).toEqual(['reviewer-2']);
    const removed = await octokit.request(
      'DELETE /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers',
      { ...pr, reviewers: ['reviewer-2'] },
    );
    expect(removed.data.requested_reviewers).toEqual([]);
    const events = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/events', {
      ...repo,
      issue_number: 7,
    });
    expect(
      events.data
        .filter((e) => e.event.startsWith('review_request'))
        .map(
          (e) => `${e.event} ${(e as { requested_reviewer?: { login: string } }).requested_reviewer?.login}`,
        ),
    ).toEqual([
      'review_requested reviewer-1',
      'review_requested reviewer-2',
      'review_request_removed reviewer-2',
    ]);
    // GraphQL: the requests still open, and the events on the timeline.
    await octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', {
      ...pr,
      reviewers: ['reviewer-2'],
    });
    const gql = await octokit.request('POST /graphql', {
      query: `{ repository(owner: "fleetbench", name: "repo-1") { pullRequest(number: 7) {
        reviewRequests(first: 10) { totalCount nodes { requestedReviewer { ... on User { login } } } }
        timelineItems(first: 50, itemTypes: [REVIEW_REQUESTED_EVENT, REVIEW_REQUEST_REMOVED_EVENT]) {
          nodes { __typename ... on ReviewRequestedEvent { requestedReviewer { ... on User { login } } } }
        } } } }`,
    });
    const pull = (
      gql.data as {
        data: { repository: { pullRequest: Record<string, { nodes: unknown[]; totalCount?: number }> } };
      }
    ).data.repository.pullRequest;
    expect(pull.reviewRequests).toEqual({
      totalCount: 1,
      nodes: [{ requestedReviewer: { login: 'reviewer-2' } }],
    });
    expect(pull.timelineItems!.nodes.map((n) => (n as { __typename: string }).__typename)).toEqual([
      'ReviewRequestedEvent',
      'ReviewRequestedEvent',
      'ReviewRequestRemovedEvent',
      'ReviewRequestedEvent',
    ]);
  });
});

describe('review requests: invariants under any sequence', () => {
  it('property: the requested reviewers are those asked and neither removed nor reviewed since, in the order asked; one event per change', async () => {
    const who = fc.constantFrom('reviewer-1', 'reviewer-2');
    const op = fc.record({ kind: fc.constantFrom('request', 'remove', 'review'), who });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const { emulator } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 1, pullsPerRepo: 1 } });
        const pull = [...emulator.state.repo('fleetbench/repo-1').pulls.values()][0]!;
        const path = `/repos/fleetbench/repo-1/pulls/${pull.issue.number}`;
        const token = (login: string) => emulator.mintToken({ user: login }).token;
        const tokens = { 'reviewer-1': token('reviewer-1'), 'reviewer-2': token('reviewer-2') };
        const send = (t: string, method: string, p: string, body: unknown) =>
          emulator.handle({
            method,
            path: p,
            headers: { authorization: `token ${t}` },
            body: JSON.stringify(body),
          });
        let model: string[] = [];
        let changes = 0;
        for (const o of ops) {
          if (o.kind === 'review') {
            const res = await send(tokens[o.who], 'POST', `${path}/reviews`, {
              event: 'COMMENT',
              body: 'ok',
            });
            expect(res.status).toBe(200);
            model = model.filter((l) => l !== o.who);
          } else {
            const method = o.kind === 'request' ? 'POST' : 'DELETE';
            const res = await send(emulator.defaultToken, method, `${path}/requested_reviewers`, {
              reviewers: [o.who],
            });
            expect(res.status).toBe(o.kind === 'request' ? 201 : 200);
            if (o.kind === 'request' && !model.includes(o.who)) {
              model = [...model, o.who];
              changes++;
            }
            if (o.kind === 'remove' && model.includes(o.who)) {
              model = model.filter((l) => l !== o.who);
              changes++;
            }
          }
          expect((pull.requestedReviewers ?? []).map((u) => u.login)).toEqual(model);
        }
        expect(pull.issue.events.filter((e) => e.event.startsWith('review_request')).length).toBe(changes);
      }),
      { numRuns: 60 },
    );
  });
});

describe('one issue comment by id over REST', () => {
  it('reads, edits (a status comment kept up to date) and deletes it; edited and deleted webhooks in the documented shape', async () => {
    const { octokit } = await world();
    const issue = { ...repo, issue_number: 1 };
    const made = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      ...issue,
      body: '🤖 working on it',
    });
    const id = { ...repo, comment_id: made.data.id };
    const read = await octokit.request('GET /repos/{owner}/{repo}/issues/comments/{comment_id}', id);
    expect(read.data.body).toBe('🤖 working on it');
    const edited = await octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
      ...id,
      body: '✅ done',
    });
    expect(edited.data).toMatchObject({ id: made.data.id, body: '✅ done' });
    expect(Date.parse(edited.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(made.data.updated_at));
    expect(
      (
        await refusal(
          octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
            ...id,
            body: 7 as unknown as string,
          }),
        )
      ).status,
    ).toBe(422);
    const listed = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', issue);
    expect(listed.data.find((c) => c.id === made.data.id)?.body).toBe('✅ done');
    expect(
      (await octokit.request('DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}', id)).status,
    ).toBe(204);
    expect(
      (await refusal(octokit.request('GET /repos/{owner}/{repo}/issues/comments/{comment_id}', id))).status,
    ).toBe(404);
    const after = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', issue);
    expect(after.data.some((c) => c.id === made.data.id)).toBe(false);
  });
});

describe('issue comments edited and deleted through GraphQL', () => {
  it('updateIssueComment and deleteIssueComment by node id; any other id is unresolved, never a 5xx', async () => {
    const { emulator, graphql, post } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 2 } });
    const made = JSON.parse(
      (await post('/repos/fleetbench/repo-1/issues/1/comments', { body: 'status: started' })).body,
    ) as { id: number; node_id: string };
    const update = (id: string, body: string) =>
      graphql(
        'mutation($id: ID!, $body: String!) { updateIssueComment(input: {id: $id, body: $body}) { issueComment { body } } }',
        {
          id,
          body,
        },
      );
    const updated = JSON.parse((await update(made.node_id, 'status: done')).body);
    expect(updated.data.updateIssueComment.issueComment.body).toBe('status: done');
    expect(emulator.state.repo('fleetbench/repo-1').issues.get(1)!.comments.at(-1)?.body).toBe(
      'status: done',
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.constant('IC_'),
          fc.string().map((s) => `IC_${Buffer.from(s).toString('base64url')}`),
        ),
        async (id) => {
          fc.pre(id !== made.node_id);
          const res = await update(id, 'x');
          expect(res.status).toBeLessThan(500);
          expect(JSON.parse(res.body).errors?.[0]?.type).toBe('NOT_FOUND');
        },
      ),
      { numRuns: 80 },
    );
    const deleted = await graphql(
      'mutation($id: ID!) { deleteIssueComment(input: {id: $id}) { clientMutationId } }',
      {
        id: made.node_id,
      },
    );
    expect(JSON.parse(deleted.body).errors).toBeUndefined();
    expect(
      emulator.state
        .repo('fleetbench/repo-1')
        .issues.get(1)!
        .comments.some((c) => c.id === made.id),
    ).toBe(false);
  });
});

describe('reactions through GraphQL', () => {
  it('addReaction and removeReaction on an issue and a comment, the same reactions REST lists; reactionGroups count them', async () => {
    const { emulator, graphql, post, get } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 2 } });
    const issueId = emulator.state.repo('fleetbench/repo-1').issues.get(1)!.nodeId;
    const add = (subjectId: string, content: string, mutation = 'addReaction') =>
      graphql(
        `mutation($id: ID!, $c: ReactionContent!) { ${mutation}(input: {subjectId: $id, content: $c}) { reaction { content user { login } } subject { id } } }`,
        { id: subjectId, c: content },
      ).then(
        (r) =>
          JSON.parse(r.body) as {
            data?: Record<string, { reaction: { content: string } | null; subject: { id: string } }>;
            errors?: unknown[];
          },
      );
    const added = await add(issueId, 'EYES');
    expect(added.errors).toBeUndefined();
    expect(added.data?.addReaction).toMatchObject({
      reaction: { content: 'EYES', user: { login: 'fleet-agent' } },
      subject: { id: issueId },
    });
    const listed = JSON.parse((await get('/repos/fleetbench/repo-1/issues/1/reactions')).body) as {
      content: string;
    }[];
    expect(listed.map((r) => r.content)).toEqual(['eyes']);
    // A reaction of another user's, through REST: the groups count both, the viewer's flagged.
    const other = emulator.mintToken({ user: 'second-agent' }).token;
    await post(
      '/repos/fleetbench/repo-1/issues/1/reactions',
      { content: 'eyes' },
      { authorization: `token ${other}` },
    );
    await post(
      '/repos/fleetbench/repo-1/issues/1/reactions',
      { content: '+1' },
      { authorization: `token ${other}` },
    );
    const groups = JSON.parse(
      (
        await graphql(
          '{ repository(owner: "fleetbench", name: "repo-1") { issue(number: 1) { reactionGroups { content users { totalCount } viewerHasReacted } } } }',
        )
      ).body,
    ).data.repository.issue.reactionGroups as {
      content: string;
      users: { totalCount: number };
      viewerHasReacted: boolean;
    }[];
    expect(groups.filter((g) => g.users.totalCount > 0)).toEqual([
      { content: 'THUMBS_UP', users: { totalCount: 1 }, viewerHasReacted: false },
      { content: 'EYES', users: { totalCount: 2 }, viewerHasReacted: true },
    ]);
    const removed = await add(issueId, 'EYES', 'removeReaction');
    expect(removed.data?.removeReaction?.reaction?.content).toBe('EYES');
    expect((await add(issueId, 'EYES', 'removeReaction')).data?.removeReaction?.reaction).toBeNull();
    // On a comment, by its node id.
    const comment = JSON.parse(
      (await post('/repos/fleetbench/repo-1/issues/1/comments', { body: '/agent go' })).body,
    ) as {
      id: number;
      node_id: string;
    };
    expect((await add(comment.node_id, 'ROCKET')).errors).toBeUndefined();
    const onComment = JSON.parse(
      (await get(`/repos/fleetbench/repo-1/issues/comments/${comment.id}/reactions`)).body,
    ) as {
      content: string;
    }[];
    expect(onComment.map((r) => r.content)).toEqual(['rocket']);
    expect((await add('IC_nope', 'ROCKET')).errors).toBeDefined();
  });
});

describe("a pull request's branch updated from its base", () => {
  it('PUT update-branch merges the base into the head (202), once: then nothing new; a moved head is refused', async () => {
    const { emulator, octokit } = await world();
    const repoState = emulator.state.repo('fleetbench/repo-1');
    const pull = repoState.pulls.get(7)!;
    const pr = { ...repo, pull_number: 7 };
    const before = pull.headSha;
    // Nothing new on the base yet (the fixtures' pull requests start from its tip).
    if (emulator.state.refs.reaches(repoState, pull.headSha, repoState.branches.get('main')!))
      expect(
        (await refusal(octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/update-branch', pr)))
          .data,
      ).toMatchObject({
        message: 'There are no new commits on the base branch.',
      });
    emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'main' });
    const mainTip = repoState.branches.get('main')!;
    expect(
      (
        await refusal(
          octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/update-branch', {
            ...pr,
            expected_head_sha: '0'.repeat(40),
          }),
        )
      ).data,
    ).toMatchObject({ message: "expected head sha didn't match current head ref." });
    const updated = await octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/update-branch', {
      ...pr,
      expected_head_sha: before,
    });
    expect(updated.status).toBe(202);
    expect(updated.data.message).toBe('Updating pull request branch.');
    expect(pull.headSha).not.toBe(before);
    expect(repoState.branches.get(pull.head)).toBe(pull.headSha);
    const merge = await octokit.request('GET /repos/{owner}/{repo}/git/commits/{commit_sha}', {
      ...repo,
      commit_sha: pull.headSha,
    });
    expect(merge.data.parents.map((p) => p.sha)).toEqual([before, mainTip]);
    expect(merge.data.message).toBe(`Merge branch 'main' into ${pull.head}`);
    expect(
      (await refusal(octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/update-branch', pr)))
        .data,
    ).toMatchObject({ message: 'There are no new commits on the base branch.' });
  });
});
