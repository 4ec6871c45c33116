/**
 * The GitHub emulator's newest routes (docs/github-emulator.md, Fidelity rows 60-64: assignees,
 * reactions, review requests, one issue comment by id, update-branch) held to GitHub's documented
 * API and bounds under hostile input: conditional requests that never answer 304 for a changed
 * body, comment lookups by id that cost the same however many comments there are, and GitHub's
 * documented limits (docs/limits.md). Each through Octokit against the emulator served on
 * 127.0.0.1 (stopped after the file).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import { cli } from './helpers/cli.ts';
import { serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';

const repo = { owner: 'fleetbench', repo: 'repo-1' };

async function world(fixtures = { repos: 1, issuesPerRepo: 3, pullsPerRepo: 1 }) {
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(8),
    fixtures,
    latency: false,
  });
  const server = await serve(emulator);
  const as = (token: string) => new Octokit({ baseUrl: server.url, auth: token });
  return { emulator, url: server.url, octokit: as(emulator.defaultToken), as };
}

/** A request's status and body, a refusal's too (Octokit throws on 304 and 4xx). */
async function answer(call: Promise<{ status: number; data: unknown; headers: Record<string, unknown> }>) {
  try {
    const res = await call;
    return { status: res.status, data: res.data, etag: res.headers.etag as string | undefined };
  } catch (error) {
    const e = error as { status: number; response?: { data: unknown } };
    if (typeof e.status !== 'number') throw error;
    return { status: e.status, data: e.response?.data, etag: undefined };
  }
}

describe('conditional GETs of the newest routes', () => {
  it('property: after any sequence of changes (new users included), a 304 only for a body that is byte-identical', async () => {
    const change = fc.constantFrom(
      'mint',
      'newcomerOpensPull',
      'comment',
      'react',
      'reactOnComment',
      'editComment',
      'assign',
      'requestReview',
      'unrequestReview',
      'unreact',
      'deleteComment',
    );
    await fc.assert(
      fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 6 }), async (changes) => {
        const { emulator, octokit, url } = await world();
        const pull = 4; // the fixture's one pull request (issues 1-3, then the pull)
        const newcomer = 'newcomer-1';
        emulator.mintToken({ user: newcomer });
        const { id: commentId } = emulator.admin.postIssueComment({
          repo: 'fleetbench/repo-1',
          number: 1,
          body: 'first',
          user: newcomer,
        });
        // What each GET shows; a route's body is compared as text, as a client's cache would hold it.
        const reads: string[] = [
          '/repos/fleetbench/repo-1/assignees?per_page=100',
          '/repos/fleetbench/repo-1/issues/1',
          '/repos/fleetbench/repo-1/issues/1/comments?per_page=100',
          `/repos/fleetbench/repo-1/issues/comments/${commentId}`,
          `/repos/fleetbench/repo-1/issues/comments/${commentId}/reactions`,
          '/repos/fleetbench/repo-1/issues/1/reactions',
          '/repos/fleetbench/repo-1/issues/1/events',
          `/repos/fleetbench/repo-1/pulls/${pull}/requested_reviewers`,
          '/repos/fleetbench/repo-1/collaborators',
          '/repos/fleetbench/repo-1/issues/comments?per_page=100',
          `/repos/fleetbench/repo-1/pulls/${pull}`,
        ];
        const get = (path: string, etag?: string) =>
          fetch(`${url}${path}`, {
            headers: {
              authorization: `token ${emulator.defaultToken}`,
              ...(etag === undefined ? {} : { 'if-none-match': etag }),
            },
          }).then(async (res) => ({
            status: res.status,
            body: await res.text(),
            etag: res.headers.get('etag'),
          }));
        const seen = new Map<string, { body: string; etag: string | null }>();
        let users = 1;
        let pulls = 0;
        const issueReactions: number[] = [];
        const madeComments: number[] = [];
        for (const kind of changes) {
          for (const path of reads) seen.set(path, await get(path));
          if (kind === 'mint') emulator.mintToken({ user: `newcomer-${++users}` });
          else if (kind === 'newcomerOpensPull')
            emulator.admin.openPullRequest({
              repo: 'fleetbench/repo-1',
              head: `newcomer/${++pulls}`,
              user: `newcomer-${users}`,
            });
          else if (kind === 'comment') {
            const made = await new Octokit({
              baseUrl: url,
              auth: emulator.mintToken({ user: `newcomer-${users}` }).token,
            }).request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
              ...repo,
              issue_number: 1,
              body: 'more',
            });
            madeComments.push(Number(made.data.id));
          } else if (kind === 'react' || kind === 'reactOnComment') {
            const as = new Octokit({
              baseUrl: url,
              auth: emulator.mintToken({ user: `newcomer-${users}` }).token,
            });
            const made = await as.request(
              kind === 'react'
                ? 'POST /repos/{owner}/{repo}/issues/1/reactions'
                : `POST /repos/{owner}/{repo}/issues/comments/${commentId}/reactions`,
              { ...repo, content: 'eyes' },
            );
            if (kind === 'react') issueReactions.push(Number((made.data as { id: number }).id));
          } else if (kind === 'unreact') {
            const id = issueReactions.pop();
            if (id !== undefined)
              await octokit.request(`DELETE /repos/{owner}/{repo}/issues/1/reactions/${id}`, repo);
          } else if (kind === 'deleteComment') {
            const id = madeComments.pop();
            if (id !== undefined)
              await octokit.request('DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}', {
                ...repo,
                comment_id: id,
              });
          } else if (kind === 'unrequestReview')
            await octokit.request('DELETE /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', {
              ...repo,
              pull_number: pull,
              reviewers: ['reviewer-1'],
            });
          else if (kind === 'editComment')
            await octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
              ...repo,
              comment_id: commentId,
              body: `edited ${users} ${pulls}`,
            });
          else if (kind === 'assign')
            await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/assignees', {
              ...repo,
              issue_number: 1,
              assignees: [`newcomer-${users}`],
            });
          else
            await answer(
              octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', {
                ...repo,
                pull_number: pull,
                reviewers: ['reviewer-1'],
              }),
            );
          for (const path of reads) {
            const before = seen.get(path)!;
            if (before.etag === null) continue;
            const conditional = await get(path, before.etag);
            if (conditional.status === 304) {
              const now = await get(path);
              expect(now.body === before.body, `304 for a changed ${path} after ${kind}`).toBe(true);
            } else expect(conditional.status).toBe(200);
          }
        }
      }),
      { numRuns: 15 },
    );
  });
});

describe('ETags on every GET of the newest routes', () => {
  it('each answers with an ETag, and a conditional repeat is a free 304 (GitHub: every GET is conditional)', async () => {
    const { emulator, url } = await world();
    const { id } = emulator.admin.postIssueComment({ repo: 'fleetbench/repo-1', number: 1, body: 'x' });
    const paths = [
      '/assignees',
      `/issues/comments/${id}`,
      `/issues/comments/${id}/reactions`,
      '/issues/1/reactions',
      '/pulls/4/requested_reviewers',
    ];
    const headers = { authorization: `token ${emulator.defaultToken}` };
    for (const path of paths) {
      const first = await fetch(`${url}/repos/fleetbench/repo-1${path}`, { headers });
      await first.text();
      const etag = first.headers.get('etag');
      expect({ path, etag: typeof etag }).toEqual({ path, etag: 'string' });
      const again = await fetch(`${url}/repos/fleetbench/repo-1${path}`, {
        headers: { ...headers, 'if-none-match': etag! },
      });
      await again.text();
      expect({ path, status: again.status }).toEqual({ path, status: 304 });
    }
  });
});

describe('one issue comment by id: found through an index', () => {
  it('property: after any creates, edits and deletes, the lookup by id (REST and GraphQL node id) finds what a scan of every issue finds', async () => {
    const { emulator, octokit } = await world({ repos: 2, issuesPerRepo: 3, pullsPerRepo: 0 });
    const state = emulator.state;
    const repos = [state.repo('fleetbench/repo-1'), state.repo('fleetbench/repo-2')];
    const scan = (id: number) => {
      for (const r of repos)
        for (const issue of r.issues.values())
          for (const comment of issue.comments) if (comment.id === id) return { repo: r, issue, comment };
      return undefined;
    };
    const ids: number[] = [];
    const step = fc.oneof(
      fc.record({ kind: fc.constant('create'), repo: fc.nat(1), issue: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant('edit'), pick: fc.nat() }),
      fc.record({ kind: fc.constant('delete'), pick: fc.nat() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 12 }), async (steps) => {
        for (const s of steps) {
          if (s.kind === 'create') {
            const made = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
              owner: 'fleetbench',
              repo: `repo-${s.repo + 1}`,
              issue_number: s.issue,
              body: 'made',
            });
            ids.push(Number(made.data.id));
          } else if (ids.length > 0) {
            const id = ids[s.pick % ids.length]!;
            const where = scan(id);
            const path = { owner: 'fleetbench', repo: where?.repo.name ?? 'repo-1', comment_id: id };
            const res =
              s.kind === 'edit'
                ? await answer(
                    octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
                      ...path,
                      body: 'edited',
                    }),
                  )
                : await answer(
                    octokit.request('DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}', path),
                  );
            expect(res.status).toBe(where === undefined ? 404 : s.kind === 'edit' ? 200 : 204);
          }
        }
        for (const id of [...ids, 0, 10 ** 9]) {
          const found = scan(id);
          for (const r of repos) {
            const hit = state.findIssueComment(r, id);
            expect(hit?.comment).toBe(found?.repo === r ? found.comment : undefined);
            if (found?.repo === r) expect(hit?.issue).toBe(found.issue);
          }
          if (found !== undefined)
            expect(state.findIssueCommentByNodeId(found.comment.nodeId)?.comment).toBe(found.comment);
        }
      }),
      { numRuns: 25 },
    );
  });

  it('a lookup by id costs the same with 200,000 comments as with one (no scan of every comment)', async () => {
    const { emulator } = await world({ repos: 1, issuesPerRepo: 2, pullsPerRepo: 0 });
    const state = emulator.state;
    const repo1 = state.repo('fleetbench/repo-1');
    const lookups = (id: number) => {
      const started = performance.now();
      for (let i = 0; i < 2_000; i++) state.findIssueComment(repo1, id);
      return performance.now() - started;
    };
    const first = state.postIssueComment(repo1.issues.get(1)!, { body: 'one' });
    const small = lookups(first.id);
    const issue2 = repo1.issues.get(2)!;
    for (let i = 0; i < 200_000; i++) state.postIssueComment(issue2, { body: 'filler' });
    const last = issue2.comments.at(-1)!;
    // A scan reads 200,000 comments for each of 2,000 lookups (4e8 steps, seconds); an index a map
    // entry each. Compared with the same lookups in a small world, on the same (busy) machine.
    const big = lookups(last.id);
    expect(big).toBeLessThan(Math.max(250, small * 20));
  });
});

describe('hostile input to the newest routes', () => {
  it('property: an issue holds at most 10 assignees (GitHub: "Adds up to 10 assignees"), the first ones named, however many a write names', async () => {
    const { emulator, octokit } = await world({ repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 });
    const pool = Array.from({ length: 14 }, (_, i) => `agent-${i}`);
    for (const login of pool) emulator.mintToken({ user: login });
    const issue = { ...repo, issue_number: 1 };
    const logins = fc.array(fc.constantFrom(...pool), { maxLength: 30 });
    const step = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), logins }),
      fc.record({ kind: fc.constant('remove' as const), logins }),
      fc.record({ kind: fc.constant('replace' as const), logins }),
    );
    const firstTen = (names: string[]) => [...new Set(names)].slice(0, 10);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 8 }), async (steps) => {
        let model: string[] = [];
        await octokit.request('PATCH /repos/{owner}/{repo}/issues/{issue_number}', {
          ...issue,
          assignees: [],
        });
        for (const s of steps) {
          let res: { data: { assignees?: { login: string }[] | null } };
          if (s.kind === 'add') {
            model = firstTen([...model, ...s.logins]);
            res = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/assignees', {
              ...issue,
              assignees: s.logins,
            });
          } else if (s.kind === 'remove') {
            model = model.filter((l) => !s.logins.includes(l));
            res = await octokit.request('DELETE /repos/{owner}/{repo}/issues/{issue_number}/assignees', {
              ...issue,
              assignees: s.logins,
            });
          } else {
            model = firstTen(s.logins);
            res = await octokit.request('PATCH /repos/{owner}/{repo}/issues/{issue_number}', {
              ...issue,
              assignees: s.logins,
            });
          }
          expect((res.data.assignees ?? []).map((u) => u.login)).toEqual(model);
        }
      }),
      { numRuns: 30 },
    );
    // 100,000 names of those users in one write: the first ten, in a request's time.
    const many = Array.from({ length: 100_000 }, (_, i) => pool[i % pool.length]!);
    const made = await octokit.request('POST /repos/{owner}/{repo}/issues', {
      ...repo,
      title: 't',
      assignees: many,
    });
    expect(made.data.assignees?.map((u) => u.login)).toEqual(pool.slice(0, 10));
  });

  it('property: a comment or reaction id in the path is its decimal digits only: 0x…, 29.0, 2.9e1, +29, " 29" are 404, as issue numbers are', async () => {
    const { octokit, url, emulator } = await world({ repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 });
    const made = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      ...repo,
      issue_number: 1,
      body: 'x',
    });
    const id = Number(made.data.id);
    const reaction = await octokit.request(
      'POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions',
      {
        ...repo,
        comment_id: id,
        content: 'eyes',
      },
    );
    const rid = Number(reaction.data.id);
    const spellings = (n: number) =>
      fc.constantFrom(
        `0x${n.toString(16)}`,
        `${n}.0`,
        `${n / 10}e1`,
        `%2B${n}`,
        `%20${n}`,
        `${n}%20`,
        `${n}n`,
        `-${n}`,
        `${n + 2 ** 53}`,
        `${n}${'0'.repeat(400)}`,
      );
    const status = (path: string, method = 'GET') =>
      fetch(`${url}/repos/fleetbench/repo-1${path}`, {
        method,
        headers: { authorization: `token ${emulator.defaultToken}` },
      }).then((r) => r.status);
    await fc.assert(
      fc.asyncProperty(spellings(id), spellings(rid), async (comment, reactionId) => {
        expect(await status(`/issues/comments/${comment}`)).toBe(404);
        expect(await status(`/issues/comments/${comment}/reactions`)).toBe(404);
        expect(await status(`/issues/comments/${id}/reactions/${reactionId}`, 'DELETE')).toBe(404);
      }),
      { numRuns: 40 },
    );
    expect(await status(`/issues/comments/${id}`)).toBe(200);
    expect(await status(`/issues/comments/${id}/reactions/${rid}`, 'DELETE')).toBe(204);
  });

  it('a comment body of more than 65,536 characters is refused as GitHub refuses it (REST POST and PATCH, GraphQL addComment and updateIssueComment), nothing written', async () => {
    const { octokit } = await world({ repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 });
    const made = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      ...repo,
      issue_number: 1,
      body: 'x'.repeat(65_536),
    });
    expect(made.status).toBe(201);
    const id = { ...repo, comment_id: Number(made.data.id) };
    const tooLong = {
      status: 422,
      data: {
        message: 'Validation Failed',
        errors: [
          {
            resource: 'IssueComment',
            code: 'custom',
            field: 'body',
            message: 'body is too long (maximum is 65536 characters)',
          },
        ],
      },
    };
    // 65,536 characters of four UTF-8 bytes each (two UTF-16 units) are within it; one more is not.
    const emoji = '🤖'.repeat(65_536);
    expect(
      (
        await answer(
          octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', { ...id, body: emoji }),
        )
      ).status,
    ).toBe(200);
    expect(
      await answer(
        octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
          ...id,
          body: `${emoji}!`,
        }),
      ),
    ).toMatchObject(tooLong);
    expect(
      await answer(
        octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
          ...id,
          body: 'y'.repeat(4 * 1024 * 1024),
        }),
      ),
    ).toMatchObject(tooLong);
    expect(
      await answer(
        octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          ...repo,
          issue_number: 1,
          body: 'z'.repeat(65_537),
        }),
      ),
    ).toMatchObject(tooLong);
    const read = await octokit.request('GET /repos/{owner}/{repo}/issues/comments/{comment_id}', id);
    expect(read.data.body).toBe(emoji);
    const listed = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      ...repo,
      issue_number: 1,
    });
    expect(listed.data).toHaveLength(1);
    const gql = (query: string, variables: Record<string, unknown>) =>
      octokit
        .request('POST /graphql', { query, variables })
        .then((r) => r.data as { errors?: { type: string; message: string }[] });
    const issueId = (
      await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', { ...repo, issue_number: 1 })
    ).data.node_id;
    const added = await gql(
      'mutation($id: ID!, $body: String!) { addComment(input: {subjectId: $id, body: $body}) { clientMutationId } }',
      { id: issueId, body: 'a'.repeat(65_537) },
    );
    expect(added.errors?.[0]).toMatchObject({
      type: 'UNPROCESSABLE',
      message: expect.stringContaining('body is too long'),
    });
    const updated = await gql(
      'mutation($id: ID!, $body: String!) { updateIssueComment(input: {id: $id, body: $body}) { clientMutationId } }',
      { id: read.data.node_id, body: 'a'.repeat(65_537) },
    );
    expect(updated.errors?.[0]).toMatchObject({
      type: 'UNPROCESSABLE',
      message: expect.stringContaining('body is too long'),
    });
    expect(
      (await octokit.request('GET /repos/{owner}/{repo}/issues/comments/{comment_id}', id)).data.body,
    ).toBe(emoji);
    expect(
      (
        await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          ...repo,
          issue_number: 1,
        })
      ).data,
    ).toHaveLength(1);
  });

  it('removing review requests costs the size of the request, not requested reviewers times names: 10,000 asked, 600,000 names removed', async () => {
    const collaborators = Array.from({ length: 10_000 }, (_, i) => ({
      login: `c${i}`,
      role_name: 'write' as const,
    }));
    const { octokit } = await world({
      repos: [
        {
          owner: 'fleetbench',
          name: 'repo-1',
          collaborators,
          pulls: [{ number: 1, head: 'work', title: 'p' }],
        },
      ],
    } as never);
    const all = collaborators.map((c) => c.login);
    const path = { ...repo, pull_number: 1 };
    await octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', {
      ...path,
      reviewers: all,
    });
    // The last one asked named 590,000 times, then everyone: a scan of the names for each of the
    // 10,000 asked reads 590,000 names first (6e9 steps).
    const names = [...Array.from({ length: 590_000 }, () => all.at(-1)!), ...all];
    const started = performance.now();
    const removed = await octokit.request(
      'DELETE /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers',
      {
        ...path,
        reviewers: names,
      },
    );
    const ms = performance.now() - started;
    expect(removed.data.requested_reviewers).toEqual([]);
    // 2 s here (the names parsed, checked and removed, 10,000 events); the scan took 40 s.
    expect(ms).toBeLessThan(10_000);
  });

  it('GraphQL assigns users only, as REST does: an organization or a bot node id is unresolved, nothing written', async () => {
    const { emulator, octokit } = await world({ repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 });
    emulator.mintToken({ user: 'helper-bot[bot]' });
    const node = async (path: string) =>
      ((await octokit.request(`GET ${path}`)).data as { node_id: string }).node_id;
    const issueId = await node('/repos/fleetbench/repo-1/issues/1');
    const update = (ids: string[]) =>
      octokit
        .request('POST /graphql', {
          query:
            'mutation($id: ID!, $ids: [ID!]) { updateIssue(input: {id: $id, assigneeIds: $ids}) { issue { assignees(first: 20) { nodes { login } } } } }',
          variables: { id: issueId, ids },
        })
        .then((r) => r.data as { errors?: { type: string }[] });
    for (const login of ['fleetbench', 'helper-bot[bot]']) {
      const id = await node(`/users/${encodeURIComponent(login)}`);
      const answer = await update([id]);
      expect({ login, error: answer.errors?.[0]?.type }).toEqual({ login, error: 'NOT_FOUND' });
      const rest = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', {
        ...repo,
        issue_number: 1,
      });
      expect(rest.data.assignees).toEqual([]);
    }
  });

  it('a page of GET …/assignees costs a page, not a sort of every user: 100,000 users, 100 pages', async () => {
    const { emulator, url } = await world({ repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 });
    const headers = { authorization: `token ${emulator.defaultToken}` };
    const pages = async () => {
      const started = performance.now();
      for (let page = 1; page <= 100; page++) {
        const res = await fetch(`${url}/repos/fleetbench/repo-1/assignees?per_page=100&page=${page}`, {
          headers,
        });
        expect(res.status).toBe(200);
        await res.text();
      }
      return performance.now() - started;
    };
    const small = await pages();
    for (let i = 0; i < 100_000; i++) emulator.state.ensureUser(`user-${i}`);
    const first = await fetch(`${url}/repos/fleetbench/repo-1/assignees?per_page=100`, { headers });
    const logins = ((await first.json()) as { login: string }[]).map((u) => u.login);
    expect(logins.slice(0, 3)).toEqual(['fleet-agent', 'reviewer-1', 'reviewer-2']);
    // Sorting 100,000 logins for each page held the server about 100 ms a page; now the list is
    // sorted once for the world's users as they are, and a page is a slice of it. The sort per
    // page took 10 s for the 100 pages on a quiet machine; without it they took 1.5 s there and
    // 2.3 s at load average 10, so the bound sits between the two classes, not at a timing.
    const big = await pages();
    expect(big).toBeLessThan(Math.max(5_000, small * 5));
  });

  it('a fixtures issue with more than 10 assignees is refused, naming the file, line and field (exit 2)', async () => {
    const file = join(scratchDir('fleetbench-assignees-'), 'many.yaml');
    const logins = Array.from({ length: 11 }, (_, i) => `a${i}`);
    writeFileSync(
      file,
      `repos:\n  - owner: acme\n    name: widgets\n    issues:\n      - title: ok\n        assignees: [${logins.join(', ')}]\n`,
    );
    const res = await cli(['github', 'serve', '--fixtures', file]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(
      new RegExp(`^fleetbench: ${file}:6: repos\\[0\\]\\.issues\\[0\\]\\.assignees: .*10`),
    );
    expect(res.stdout).toBe('');
  });

  it('GraphQL createIssue looks each labelId up once: 300,000 ids in a repository of 1,000 labels cost what they cost with one label', async () => {
    const timedCreate = async (labels: number) => {
      const { emulator, octokit } = await world({ repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 });
      const target = emulator.state.repo('fleetbench/repo-1');
      for (let i = 0; i < labels; i++) emulator.state.createLabel(target, { name: `label-${i}` });
      const label = [...target.labels.values()].at(-1)!;
      const ids = Array.from({ length: 300_000 }, () => label.nodeId);
      const started = performance.now();
      const res = await octokit.request('POST /graphql', {
        query:
          'mutation($r: ID!, $l: [ID!]) { createIssue(input: {repositoryId: $r, title: "t", labelIds: $l}) { issue { labels(first: 5) { nodes { name } } } } }',
        variables: { r: target.nodeId, l: ids },
      });
      const ms = performance.now() - started;
      const data = res.data as {
        data: { createIssue: { issue: { labels: { nodes: { name: string }[] } } } };
      };
      expect(data.data.createIssue.issue.labels.nodes.map((n) => n.name)).toEqual([label.name]);
      return ms;
    };
    const one = await timedCreate(1);
    // Each id compared with a fresh copy of every label: 300,000 x 1,000 (2.2 s here).
    const thousand = await timedCreate(999);
    expect(thousand).toBeLessThan(Math.max(1_000, one * 3));
  });
});
