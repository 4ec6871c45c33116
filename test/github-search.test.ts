/**
 * Search, in-process under a VirtualClock: REST `GET /search/issues` with the qualifiers control
 * planes use, on the `search` resource (30 requests a minute for a user, 10 unauthenticated) in
 * the headers and `/rate_limit`; GitHub's query bounds; GraphQL `search` with its connection,
 * charged as GraphQL points.
 */
import { describe, expect, it } from 'vitest';
import { VIRTUAL_EPOCH_MS } from '../src/clock/index.ts';
import { inProcess, rate } from './helpers/github.ts';

const EPOCH_S = VIRTUAL_EPOCH_MS / 1000;
const search = (q: string, extra = '') => `/search/issues?q=${encodeURIComponent(q)}${extra}`;
const numbers = (body: string) => (JSON.parse(body).items as { number: number }[]).map((i) => i.number);

describe('REST /search/issues', () => {
  it('finds issues and pull requests by the qualifiers control planes use', async () => {
    const h = inProcess({ fixtures: { repos: 2, issuesPerRepo: 6, pullsPerRepo: 3 } });
    const state = h.emulator.state;
    const repo1 = state.repo('fleetbench/repo-1');
    state.setAssignees(state.issue(repo1, 2), ['reviewer-2']);
    h.emulator.admin.postIssueComment({
      repo: 'fleetbench/repo-1',
      number: 3,
      body: 'Needs a flux capacitor',
    });
    h.emulator.admin.closeIssue({ repo: 'fleetbench/repo-1', number: 4 });
    const q = async (query: string, extra = '') => {
      const res = await h.get(search(query, extra));
      expect(res.status).toBe(200);
      return res;
    };
    const all = JSON.parse((await q('repo:fleetbench/repo-1')).body);
    expect(all).toMatchObject({ total_count: 9, incomplete_results: false });
    expect(all.items[0]).toMatchObject({
      score: 1,
      repository_url: expect.stringContaining('/repos/fleetbench/repo-1'),
    });
    // Best match is modelled as newest first: the PRs (9, 8, 7) were created last.
    expect(numbers((await q('repo:fleetbench/repo-1 is:pr')).body)).toEqual([9, 8, 7]);
    expect(
      numbers((await q('repo:fleetbench/repo-1 is:issue is:open', '&sort=created&order=asc')).body),
    ).toEqual([1, 2, 3, 5, 6]);
    expect(numbers((await q('repo:fleetbench/repo-1 is:issue is:closed')).body)).toEqual([4]);
    expect(numbers((await q('repo:fleetbench/repo-1 head:agent/issue-2')).body)).toEqual([8]);
    expect(numbers((await q('repo:fleetbench/repo-1 assignee:reviewer-2')).body)).toEqual([2]);
    expect(numbers((await q('repo:fleetbench/repo-1 author:@me is:pr')).body)).toEqual([9, 8, 7]);
    expect(numbers((await q('repo:fleetbench/repo-1 flux capacitor')).body)).toEqual([3]);
    expect(
      numbers(
        (await q('repo:fleetbench/repo-1 is:issue -linked:pr is:open', '&sort=created&order=asc')).body,
      ),
    ).toEqual([5, 6]);
    const label = state.issue(repo1, 1).labels[0]?.name ?? 'bug';
    const labelled = [...repo1.issues.values()]
      .filter((i) => i.labels.some((l) => l.name === label))
      .map((i) => i.number);
    expect(
      numbers((await q(`repo:fleetbench/repo-1 label:"${label}"`, '&sort=created&order=asc')).body),
    ).toEqual(labelled.sort((a, b) => a - b));
    // Every repository without repo:; an owner with org:.
    expect(JSON.parse((await q('is:pr org:fleetbench')).body).total_count).toBe(6);
  });

  it("a negated repo:, org: or user: excludes, as GitHub's syntax says (-QUALIFIER)", async () => {
    const h = inProcess({ fixtures: { repos: 2, issuesPerRepo: 3, pullsPerRepo: 1 } });
    const repos = async (query: string) =>
      new Set(
        (JSON.parse((await h.get(search(query))).body).items as { repository_url: string }[]).map((i) =>
          i.repository_url.replace(/.*\/repos\//, ''),
        ),
      );
    expect(await repos('is:issue -repo:fleetbench/repo-1')).toEqual(new Set(['fleetbench/repo-2']));
    expect(
      await repos('is:issue repo:fleetbench/repo-1 repo:fleetbench/repo-2 -repo:fleetbench/repo-2'),
    ).toEqual(new Set(['fleetbench/repo-1']));
    expect(await repos('is:issue -org:fleetbench')).toEqual(new Set());
    expect(await repos('is:issue -user:someone-else')).toEqual(
      new Set(['fleetbench/repo-1', 'fleetbench/repo-2']),
    );
  });

  it('counts against the search resource: 30 a minute, its own headers and /rate_limit entry', async () => {
    const h = inProcess();
    for (let i = 1; i <= 30; i++) {
      const res = await h.get(search('is:open'));
      expect(res.status).toBe(200);
      expect(rate(res)).toEqual({
        limit: 30,
        remaining: 30 - i,
        used: i,
        reset: EPOCH_S + 60,
        resource: 'search',
      });
    }
    const over = await h.get(search('is:open'));
    expect(over.status).toBe(403);
    expect(rate(over)).toMatchObject({ resource: 'search', remaining: 0 });
    const limits = JSON.parse((await h.get('/rate_limit')).body).resources;
    expect(limits.search).toEqual({ limit: 30, used: 30, remaining: 0, reset: EPOCH_S + 60 });
    expect(limits.core.used).toBe(0);
    await h.advance(60_000);
    expect((await h.get(search('is:open'))).status).toBe(200);
    const records = h.apiRecords().filter((r) => r.route === '/search/issues');
    expect(records.every((r) => r.resource === 'search')).toBe(true);
    expect(records.map((r) => r.cost).reduce((a, b) => a + b)).toBe(31);
  });

  it('allows 10 a minute unauthenticated', async () => {
    const h = inProcess();
    const anon = (n: number) =>
      h.emulator.handle({
        method: 'GET',
        path: search(`is:open ${n}`),
        headers: {},
        remoteAddress: '10.1.2.3',
      });
    for (let i = 0; i < 10; i++) expect((await anon(i)).status).toBe(200);
    const over = await anon(10);
    expect(over.status).toBe(403);
    expect(rate(over)).toMatchObject({ limit: 10, resource: 'search' });
  });

  it('refuses what GitHub refuses: no q, long keywords, many operators, an unknown repo, past 1,000 results', async () => {
    const h = inProcess();
    const body = async (path: string) => {
      const res = await h.get(path);
      expect(res.status).toBe(422);
      return JSON.parse(res.body);
    };
    expect(await body('/search/issues')).toEqual({
      message: 'Validation Failed',
      errors: [{ resource: 'Search', field: 'q', code: 'missing' }],
      documentation_url: 'https://docs.github.com/rest/search/search#search-issues-and-pull-requests',
      status: '422',
    });
    expect((await body(search(`repo:fleetbench/repo-1 ${'x'.repeat(257)}`))).errors[0].message).toBe(
      'The search is longer than 256 characters.',
    );
    expect((await body(search('a OR b OR c OR d OR e OR f OR g'))).errors[0].message).toMatch(
      /more than 5 AND/,
    );
    expect((await body(search('repo:nobody/nothing is:pr'))).errors[0].message).toMatch(
      /^The listed users and repositories cannot be searched/,
    );
    // An owner it does not have is refused the same way, not answered with nothing (issue 38).
    for (const q of ['org:no-such-org is:pr', 'user:nobody is:issue', 'owner:ghost'])
      expect((await body(search(q))).errors[0].message).toMatch(
        /^The listed users and repositories cannot be searched/,
      );
    expect((await body(search('is:open', '&per_page=100&page=11'))).message).toBe(
      'Only the first 1000 search results are available',
    );
    // Refused searches still count against the search resource, as on GitHub.
    expect(h.apiRecords().map((r) => r.cost)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
  });
});

describe('search work is bounded, as GitHub bounds a search by its time limit', () => {
  const negated = (n: number) => Array.from({ length: n }, (_, i) => `-author:ghost-${i}`).join(' ');

  it('REST: a query is at most 4,096 characters; one that would check too much stops early and says so', async () => {
    const h = inProcess({ fixtures: { repos: 30, issuesPerRepo: 1_000 } });
    const long = await h.get(search(negated(5_000)));
    expect(long.status).toBe(422);
    expect(JSON.parse(long.body).errors[0].message).toMatch(/^The search is longer than 4096 characters/);
    // About 200 qualifiers on each of 30,000 issues: every issue matches, the search stops first.
    const res = await h.get(search(negated(300).slice(0, 4_000)));
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.incomplete_results).toBe(true);
    expect(body.total_count).toBeGreaterThan(0);
    expect(body.total_count).toBeLessThan(30_000);
    // An ordinary query over the same world is complete.
    expect(JSON.parse((await h.get(search('is:open -author:ghost'))).body)).toMatchObject({
      total_count: 30_000,
      incomplete_results: false,
    });
  });

  it('a keyword search is charged for the text it reads, not per issue: megabytes of comments end it early', async () => {
    const h = inProcess({ fixtures: { repos: 1, issuesPerRepo: 3 } });
    const text = 'lorem ipsum dolor sit amet '.repeat(40_000); // ~1 MB
    for (let i = 0; i < 100; i++)
      h.emulator.admin.postIssueComment({ repo: 'fleetbench/repo-1', number: 2, body: text });
    h.emulator.admin.postIssueComment({ repo: 'fleetbench/repo-1', number: 3, body: 'a flux capacitor' });
    // 100 MB of comments on issue 2: more than one request may read (80 million characters).
    const slow = JSON.parse((await h.get(search('flux in:comments'))).body);
    expect(slow.incomplete_results).toBe(true);
    // Qualifiers are tested first: once issue 2 is closed, `is:open` keeps its text unread.
    h.emulator.admin.closeIssue({ repo: 'fleetbench/repo-1', number: 2 });
    const open = JSON.parse((await h.get(search('flux in:comments is:open'))).body);
    expect(open).toMatchObject({ total_count: 1, incomplete_results: false });
    expect(numbers(JSON.stringify(open))).toEqual([3]);
    const mentions = JSON.parse((await h.get(search('mentions:someone is:open'))).body);
    expect(mentions).toMatchObject({ total_count: 0, incomplete_results: false });
  });

  it("GraphQL: aliased searches share one request budget; past it, GitHub's timeout error", async () => {
    const h = inProcess({ fixtures: { repos: 10, issuesPerRepo: 100, pullsPerRepo: 50 } });
    const q = JSON.stringify(negated(20));
    const doc = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `s${i}: search(query: ${q}, type: ISSUE) { issueCount }`).join(' ')} }`;
    // A few such searches are answered in full.
    const few = JSON.parse((await h.graphql(doc(3))).body);
    expect(few.errors).toBeUndefined();
    expect(few.data.s2.issueCount).toBe(1_500);
    // 2,000 of them (3 points) would scan the world 2,000 times: refused once the budget is spent.
    const started = performance.now();
    const many = JSON.parse((await h.graphql(doc(2_000))).body);
    expect(many.data).toBeNull();
    expect(many.errors[0].message).toMatch(
      /^Something went wrong while executing your query\. This may be the result of a timeout/,
    );
    // A query of 1.5 MB is refused before it is read; a thousand aliased 4,000-character queries
    // that look at no issue still spend the budget by their length.
    const huge = JSON.parse(
      (
        await h.graphql('query($q: String!) { search(query: $q, type: ISSUE) { issueCount } }', {
          q: negated(100_000),
        })
      ).body,
    );
    expect(huge.errors[0].message).toMatch(/^The search is longer than 4096 characters/);
    const nowhere = JSON.stringify(
      `repo:fleetbench/repo-1 -repo:fleetbench/repo-1 ${negated(200)}`.slice(0, 4_000),
    );
    const empty = JSON.parse(
      (
        await h.graphql(
          `{ ${Array.from({ length: 1_000 }, (_, i) => `s${i}: search(query: ${nowhere}, type: ISSUE) { issueCount }`).join(' ')} }`,
        )
      ).body,
    );
    expect(empty.errors[0].message).toMatch(/timeout/);
    // Unbounded, these took about 5 s, 25 s and 3 s on a 2-core machine.
    expect(performance.now() - started).toBeLessThan(10_000);
    const records = h.apiRecords();
    expect(records.at(-1)!.error).toMatch(/timeout/);
  });
});

describe('GraphQL search', () => {
  it('issueCount, nodes of both types, pages, and its cost in GraphQL points', async () => {
    const h = inProcess({ fixtures: { repos: 1, issuesPerRepo: 6, pullsPerRepo: 2 } });
    const query = `query Find($q: String!, $after: String) {
      search(query: $q, type: ISSUE, first: 3, after: $after) {
        issueCount
        pageInfo { hasNextPage endCursor }
        nodes { __typename ... on Issue { number state } ... on PullRequest { number headRefName } }
      }
      rateLimit { cost }
    }`;
    const first = JSON.parse(
      (await h.graphql(query, { q: 'repo:fleetbench/repo-1 is:open sort:created-desc' })).body,
    );
    expect(first.data.search.issueCount).toBe(8);
    expect(first.data.search.nodes).toEqual([
      { __typename: 'PullRequest', number: 8, headRefName: 'agent/issue-2' },
      { __typename: 'PullRequest', number: 7, headRefName: 'agent/issue-1' },
      { __typename: 'Issue', number: 6, state: 'OPEN' },
    ]);
    expect(first.data.search.pageInfo.hasNextPage).toBe(true);
    expect(first.data.rateLimit.cost).toBe(1);
    const next = JSON.parse(
      (
        await h.graphql(query, {
          q: 'repo:fleetbench/repo-1 is:open sort:created-desc',
          after: first.data.search.pageInfo.endCursor,
        })
      ).body,
    );
    expect(next.data.search.nodes.map((n: { number: number }) => n.number)).toEqual([5, 4, 3]);
    const bad = JSON.parse((await h.graphql(query, { q: 'repo:nobody/nothing' })).body);
    expect(bad.errors[0].message).toMatch(/^The listed users and repositories cannot be searched/);
    expect(h.apiRecords().map((r) => [r.resource, r.cost, r.op])).toEqual([
      ['graphql', 1, 'Find'],
      ['graphql', 1, 'Find'],
      ['graphql', 1, 'Find'],
    ]);
  });
});
