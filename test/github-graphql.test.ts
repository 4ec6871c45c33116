/**
 * GraphQL through handle(): GitHub's cost rule, the free rateLimit field, primary-limit breach
 * as 200 with an error body, GitHub-style refusals, and the data the subset serves.
 */
import { describe, expect, it } from 'vitest';
import { InProcessTransport } from '../src/github/index.ts';
import { MERGEABILITY_JOB_MS } from '../src/github/state.ts';
import { inProcess, rate } from './helpers/github.ts';

const PR_FIELDS = `
  number state mergeable reviewDecision headRefName
  commits(last: 1) { nodes { commit { oid statusCheckRollup { state contexts(first: 10) { nodes {
    __typename ... on CheckRun { name status conclusion } ... on StatusContext { context state } } } } } } }
  reviewThreads(first: 10) { totalCount nodes { isResolved } }
  reviews(last: 5) { nodes { state author { login } } }`;

function batchQuery(numbers: number[]): string {
  const aliases = numbers.map((n) => `pr${n}: pullRequest(number: ${n}) { ...pr }`).join('\n');
  return `query Batch($owner: String!, $name: String!) {
    repository(owner: $owner, name: $name) { ${aliases} }
    rateLimit { limit cost remaining used resetAt }
  }
  fragment pr on PullRequest { ${PR_FIELDS} }`;
}

const vars = { owner: 'fleetbench', name: 'repo-1' };

describe('GraphQL cost', () => {
  it('charges 1 point for 25 aliased pull requests (4 connections each = 100 requests)', async () => {
    const { graphql, apiRecords } = inProcess({
      fixtures: { repos: 1, issuesPerRepo: 25, pullsPerRepo: 25 },
    });
    const numbers = Array.from({ length: 25 }, (_, i) => 26 + i);
    const res = await graphql(batchQuery(numbers), vars);
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.errors).toBeUndefined();
    expect(Object.keys(body.data.repository)).toHaveLength(25);
    expect(body.data.repository.pr26).toMatchObject({
      number: 26,
      state: 'OPEN',
      mergeable: 'MERGEABLE',
      reviewDecision: 'REVIEW_REQUIRED',
    });
    expect(body.data.repository.pr26.commits.nodes[0].commit.statusCheckRollup).toEqual({
      state: 'SUCCESS',
      contexts: {
        nodes: [{ __typename: 'CheckRun', name: 'ci', status: 'COMPLETED', conclusion: 'SUCCESS' }],
      },
    });
    expect(body.data.rateLimit).toEqual({
      limit: 5000,
      cost: 1,
      remaining: 4999,
      used: 1,
      resetAt: '2026-01-01T01:00:00Z',
    });
    expect(rate(res)).toMatchObject({ resource: 'graphql', used: 1, remaining: 4999 });
    expect(apiRecords()[0]).toMatchObject({
      protocol: 'graphql',
      route: '/graphql',
      cost: 1,
      secondaryCost: 1,
      repo: 'fleetbench/repo-1',
    });
    // One more connection inside each thread costs 10 requests per PR: 25 x 14 = 350 -> 4 points.
    const heavier = batchQuery(numbers).replace(
      'nodes { isResolved }',
      'nodes { isResolved comments(first: 1) { nodes { body } } }',
    );
    expect(JSON.parse((await graphql(heavier, vars)).body).data.rateLimit).toMatchObject({
      cost: 4,
      used: 5,
    });
  });

  it('multiplies nested connections by their parents: 1 + 100 + 100x100 requests = 101 points', async () => {
    const { graphql } = inProcess();
    const res = await graphql(
      `{ repository(owner: "fleetbench", name: "repo-1") {
          pullRequests(first: 100) { nodes { reviews(first: 100) { nodes { comments(first: 10) { totalCount } } } } } }
        rateLimit { cost used nodeCount } }`,
    );
    expect(JSON.parse(res.body).data.rateLimit).toEqual({
      cost: 101,
      used: 101,
      nodeCount: 100 + 10_000 + 100_000,
    });
    expect(rate(res).used).toBe(101);
  });

  it('rounds small queries to 1, a rateLimit-only query too (the minimum of a call)', async () => {
    const { graphql, apiRecords } = inProcess();
    const only = await graphql('{ rateLimit { limit cost remaining used } }');
    expect(JSON.parse(only.body).data.rateLimit).toEqual({ limit: 5000, cost: 1, remaining: 4999, used: 1 });
    const one = await graphql('{ viewer { login } rateLimit { cost } }');
    expect(JSON.parse(one.body).data).toEqual({ viewer: { login: 'fleet-agent' }, rateLimit: { cost: 1 } });
    expect(apiRecords().map((r) => r.cost)).toEqual([1, 1]);
  });

  it('answers a primary-limit breach with 200, an error body and remaining 0', async () => {
    const { graphql, apiRecords } = inProcess({ limits: { primary: { user: { graphql: 2 } } } });
    expect((await graphql('{ viewer { login } }')).status).toBe(200);
    expect((await graphql('{ viewer { login } }')).status).toBe(200);
    const over = await graphql('{ viewer { login } }');
    expect(over.status).toBe(200);
    expect(JSON.parse(over.body)).toEqual({
      errors: [{ type: 'RATE_LIMITED', message: 'API rate limit exceeded for user ID 1.' }],
    });
    expect(rate(over)).toMatchObject({ limit: 2, remaining: 0, used: 2, resource: 'graphql' });
    expect(apiRecords()[2]).toMatchObject({ status: 200, limited: 'primary', cost: 0 });
  });

  it('refuses a query costing more than what remains, before running it', async () => {
    const { graphql, apiRecords } = inProcess({ limits: { primary: { user: { graphql: 50 } } } });
    const big = await graphql(
      '{ repository(owner: "fleetbench", name: "repo-1") { pullRequests(first: 100) { nodes { reviews(first: 100) { nodes { comments(first: 10) { totalCount } } } } } } }',
    );
    expect(JSON.parse(big.body).errors[0].type).toBe('RATE_LIMITED');
    // GitHub: a 200 with an error and x-ratelimit-remaining 0, though 50 points are left.
    expect(rate(big)).toMatchObject({ remaining: 0, used: 0 });
    expect(apiRecords()[0]).toMatchObject({ limited: 'primary', cost: 0, secondaryCost: 0 });
    const small = await graphql('{ viewer { login } }');
    expect(rate(small)).toMatchObject({ remaining: 49, used: 1 });
  });
});

describe('GraphQL refusals', () => {
  it('returns an errors array for a malformed query, free', async () => {
    const { graphql, apiRecords } = inProcess();
    const res = await graphql('{ repository(owner: "x" { id }');
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    // GitHub's (graphql-ruby's) words, not graphql-js's.
    expect(body.errors[0].message).toBe('Parse error on "{" (LCURLY) at [1, 25]');
    expect(body.errors[0].locations[0]).toEqual({ line: 1, column: 25 });
    const unknown = JSON.parse((await graphql('{ viewer { nope } }')).body);
    expect(unknown.errors[0]).toEqual({
      path: ['query', 'viewer', 'nope'],
      extensions: { code: 'undefinedField', typeName: 'User', fieldName: 'nope' },
      locations: [{ line: 1, column: 12 }],
      message: "Field 'nope' doesn't exist on type 'User'",
    });
    const missing = JSON.parse((await graphql('query Q { repository(owner: "x") { id } }')).body);
    expect(missing.errors[0]).toMatchObject({
      path: ['query Q', 'repository'],
      extensions: { code: 'missingRequiredArguments', name: 'repository', arguments: 'name' },
      message: "Field 'repository' is missing required arguments: name",
    });
    const noSelection = JSON.parse((await graphql('{ viewer }')).body);
    expect(noSelection.errors[0].message).toBe(
      "Field must have selections (field 'viewer' returns User! but has no selections. Did you mean 'viewer { ... }'?)",
    );
    const scalar = JSON.parse((await graphql('{ viewer { login { x } } }')).body);
    expect(scalar.errors[0].message).toBe(
      `Selections can't be made on scalars (field 'login' returns String! but has selections ["x"])`,
    );
    const unknownArg = JSON.parse((await graphql('{ viewer { avatarUrl(colour: 1) } }')).body);
    expect(unknownArg.errors[0].message).toBe("Field 'avatarUrl' doesn't accept argument 'colour'");
    expect(apiRecords().map((r) => r.cost)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('refuses a query that could touch more than 500,000 nodes', async () => {
    const { graphql } = inProcess();
    const res = JSON.parse(
      (
        await graphql(
          '{ repository(owner: "fleetbench", name: "repo-1") { pullRequests(first: 100) { nodes { reviews(first: 100) { nodes { comments(first: 100) { totalCount } } } } } } }',
        )
      ).body,
    );
    expect(res.errors[0]).toMatchObject({ type: 'MAX_NODE_LIMIT_EXCEEDED' });
  });

  it('requires pagination bounds when nodes are asked for, and at most 100', async () => {
    const { graphql } = inProcess();
    const q = (args: string) =>
      graphql(
        `{ repository(owner: "fleetbench", name: "repo-1") { pullRequests${args} { totalCount nodes { number } } } }`,
      );
    const missing = JSON.parse((await q('')).body);
    expect(missing.errors[0]).toMatchObject({
      type: 'MISSING_PAGINATION_BOUNDARIES',
      message:
        'You must provide a `first` or `last` value to properly paginate the `pullRequests` connection.',
    });
    const excessive = JSON.parse((await q('(last: 101)')).body);
    expect(excessive.errors[0].message).toBe(
      'Requesting 101 records on the `pullRequests` connection exceeds the `last` limit of 100 records.',
    );
    const countOnly = JSON.parse(
      (await graphql('{ repository(owner: "fleetbench", name: "repo-1") { pullRequests { totalCount } } }'))
        .body,
    );
    expect(countOnly.data.repository.pullRequests.totalCount).toBe(2);
  });

  it('refuses `first: 0` (GitHub: values of first and last must be within 1-100)', async () => {
    const { graphql, apiRecords } = inProcess();
    const res = JSON.parse(
      (
        await graphql(
          '{ repository(owner: "fleetbench", name: "repo-1") { pullRequests(first: 0) { nodes { number } } } }',
        )
      ).body,
    );
    expect(res.data).toBeUndefined();
    expect(res.errors[0].message).toBe(
      '`first` on the `pullRequests` connection must be within 1-100 (got 0).',
    );
    expect(apiRecords()[0]).toMatchObject({ cost: 0, status: 200 });
  });

  it('costs a doubling-fragment query in time linear in its size and refuses it past the bound', async () => {
    // 2 KB: each of 40 fragments spreads the next twice, so the document expands to 2^40 copies of
    // the last one (no connection, so the node limit never stops the walk). Walking it expanded
    // kept a server busy until killed (2^24: 3.5 s).
    const levels = 40;
    const fragments = Array.from(
      { length: levels },
      (_, i) => `fragment Level${i} on Query { ...Level${i + 1} ...Level${i + 1} }`,
    );
    const query = `query Doubling { ...Level0 }\n${fragments.join('\n')}\nfragment Level${levels} on Query { viewer { login name } }`;
    expect(query.length).toBeGreaterThan(2000);
    expect(query.length).toBeLessThan(2600);
    const { graphql, apiRecords } = inProcess();
    const started = performance.now();
    const res = await graphql(query);
    const ms = performance.now() - started;
    // Milliseconds of work; the bound leaves room for a loaded machine.
    expect(ms).toBeLessThan(2_000);
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.data).toBeUndefined();
    expect(body.errors[0]).toMatchObject({ type: 'MAX_COMPLEXITY_EXCEEDED' });
    expect(body.errors[0].message).toMatch(/exceeds max complexity of 100,000/);
    expect(apiRecords()[0]).toMatchObject({ op: 'Doubling', cost: 0, secondaryCost: 1 });
    // Small fan-out of the same shape is costed as its expansion: 2^3 copies of one connection.
    const small = Array.from(
      { length: 3 },
      (_, i) => `fragment G${i} on Query { ...G${i + 1} ...G${i + 1} }`,
    );
    const ok = await graphql(
      `query Small { ...G0 rateLimit { cost } }\n${small.join('\n')}\nfragment G3 on Query { repository(owner: "fleetbench", name: "repo-1") { pullRequests(first: 100) { nodes { comments(first: 100) { totalCount } } } } }`,
    );
    // Per copy: 1 request for pullRequests + 100 for the comments under each PR; one copy is
    // executed (identical fields merge), but the cost counts what the document asks: 8 x 101.
    expect(JSON.parse(ok.body).data.rateLimit.cost).toBe(8);
  });

  it('answers bad JSON with 400, no query with 400, unauthenticated with 401', async () => {
    const { emulator, transport } = inProcess();
    const badJson = await transport.request({ method: 'POST', path: '/graphql', headers: {}, body: '{nope' });
    expect(badJson.status).toBe(400);
    expect(JSON.parse(badJson.body).message).toBe('Problems parsing JSON');
    const noQuery = await transport.request({ method: 'POST', path: '/graphql', headers: {}, body: '{}' });
    expect(noQuery.status).toBe(400);
    const anon = await emulator.handle({
      method: 'POST',
      path: '/api/graphql',
      headers: {},
      body: '{"query":"{viewer{login}}"}',
    });
    expect(anon.status).toBe(401);
    expect(JSON.parse(anon.body).message).toBe('This endpoint requires you to be authenticated.');
  });

  it('reports a missing repository or pull request as NOT_FOUND next to partial data', async () => {
    const { graphql } = inProcess();
    const repo = JSON.parse((await graphql('{ repository(owner: "nobody", name: "nothing") { id } }')).body);
    expect(repo).toEqual({
      data: { repository: null },
      errors: [
        {
          type: 'NOT_FOUND',
          path: ['repository'],
          locations: [{ line: 1, column: 3 }],
          message: "Could not resolve to a Repository with the name 'nobody/nothing'.",
        },
      ],
    });
    const pr = JSON.parse(
      (
        await graphql(
          '{ repository(owner: "fleetbench", name: "repo-1") { pullRequest(number: 99) { id } } }',
        )
      ).body,
    );
    expect(pr.data).toEqual({ repository: { pullRequest: null } });
    expect(pr.errors[0].message).toBe('Could not resolve to a PullRequest with the number of 99.');
  });
});

describe('GraphQL data follows the state', () => {
  it('shows review decision, threads, reviews, checks and merge state after admin changes', async () => {
    const { graphql, emulator, advance } = inProcess();
    const admin = emulator.admin;
    const opened = admin.openPullRequest({ repo: 'fleetbench/repo-1', head: 'agent/issue-3', issue: 3 });
    expect(opened.number).toBe(8);
    const query = `query($owner: String!, $name: String!) { repository(owner: $owner, name: $name) {
      pr: pullRequest(number: 8) { ${PR_FIELDS} mergeStateStatus closingIssuesReferences(first: 1) { nodes { number } }
        threads: reviewThreads(first: 10) { nodes { comments(first: 1) { nodes { body } } } } } } }`;
    let pr = JSON.parse((await graphql(query, vars)).body).data.repository.pr;
    // New: GitHub computes mergeability in the background, started by this read.
    expect(pr.mergeable).toBe('UNKNOWN');
    expect(pr.mergeStateStatus).toBe('UNKNOWN');
    await advance(MERGEABILITY_JOB_MS);
    expect(pr.commits.nodes[0].commit.statusCheckRollup).toBeNull();
    expect(pr.closingIssuesReferences.nodes).toEqual([{ number: 3 }]);
    admin.setCheckRun({ repo: 'fleetbench/repo-1', number: 8, name: 'ci', status: 'in_progress' });
    admin.setStatus({ repo: 'fleetbench/repo-1', number: 8, context: 'lint', state: 'success' });
    admin.postReviewComments({ repo: 'fleetbench/repo-1', number: 8, count: 2, user: 'reviewer-2' });
    admin.submitReview({
      repo: 'fleetbench/repo-1',
      number: 8,
      state: 'CHANGES_REQUESTED',
      user: 'reviewer-1',
    });
    pr = JSON.parse((await graphql(query, vars)).body).data.repository.pr;
    expect(pr.reviewDecision).toBe('CHANGES_REQUESTED');
    expect(pr.mergeStateStatus).toBe('BLOCKED');
    expect(pr.reviewThreads.totalCount).toBe(2);
    expect(pr.threads.nodes[1].comments.nodes[0].body).toBe('Review comment 2: please look at this.');
    expect(pr.reviews.nodes).toEqual([
      { state: 'COMMENTED', author: { login: 'reviewer-2' } },
      { state: 'CHANGES_REQUESTED', author: { login: 'reviewer-1' } },
    ]);
    expect(pr.commits.nodes[0].commit.statusCheckRollup).toEqual({
      state: 'PENDING',
      contexts: {
        nodes: [
          { __typename: 'CheckRun', name: 'ci', status: 'IN_PROGRESS', conclusion: null },
          { __typename: 'StatusContext', context: 'lint', state: 'SUCCESS' },
        ],
      },
    });
    admin.submitReview({ repo: 'fleetbench/repo-1', number: 8, state: 'APPROVED', user: 'reviewer-1' });
    admin.setCheckRun({ repo: 'fleetbench/repo-1', number: 8, name: 'ci', conclusion: 'success' });
    pr = JSON.parse((await graphql(query, vars)).body).data.repository.pr;
    expect(pr.reviewDecision).toBe('APPROVED');
    expect(pr.mergeStateStatus).toBe('CLEAN');
    expect(pr.commits.nodes[0].commit.statusCheckRollup.state).toBe('SUCCESS');
    admin.mergePullRequest({ repo: 'fleetbench/repo-1', number: 8 });
    pr = JSON.parse((await graphql(query, vars)).body).data.repository.pr;
    expect(pr.state).toBe('MERGED');
    const issue = JSON.parse(
      (
        await graphql(
          '{ repository(owner: "fleetbench", name: "repo-1") { issue(number: 3) { state stateReason } } }',
        )
      ).body,
    );
    expect(issue.data.repository.issue).toEqual({ state: 'CLOSED', stateReason: 'COMPLETED' });
  });

  it('filters pull requests by head branch and state, and pages with cursors', async () => {
    const { graphql } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 5, pullsPerRepo: 5 } });
    const byHead = JSON.parse(
      (
        await graphql(
          '{ repository(owner: "fleetbench", name: "repo-1") { pullRequests(first: 5, headRefName: "agent/issue-3", states: [OPEN]) { totalCount nodes { number headRefName } } } }',
        )
      ).body,
    );
    expect(byHead.data.repository.pullRequests).toEqual({
      totalCount: 1,
      nodes: [{ number: 8, headRefName: 'agent/issue-3' }],
    });
    const seen: number[] = [];
    let after: string | null = null;
    for (let page = 0; page < 5; page++) {
      const res = JSON.parse(
        (
          await graphql(
            'query($after: String) { repository(owner: "fleetbench", name: "repo-1") { pullRequests(first: 2, after: $after, orderBy: {field: CREATED_AT, direction: DESC}) { nodes { number } pageInfo { hasNextPage endCursor } } } }',
            { after },
          )
        ).body,
      );
      const conn = res.data.repository.pullRequests;
      seen.push(...conn.nodes.map((n: { number: number }) => n.number));
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    expect(seen).toEqual([10, 9, 8, 7, 6]);
  });
});

describe('GraphQL operation names in the trace', () => {
  it('records operationName, else the named operation, as op; the x-fleetbench-op header wins', async () => {
    const { post, graphql, apiRecords } = inProcess();
    const two = 'query A { viewer { login } } query B { rateLimit { cost } }';
    await post('/graphql', { query: two, operationName: 'B' });
    await graphql('query PullRequestForBranch { viewer { login } }');
    await graphql('query PullRequestForBranch { viewer { login } }', undefined, {
      'x-fleetbench-op': 'guard',
    });
    await graphql('{ viewer { login } }');
    await graphql('query Broken { viewer { nope } }');
    await post('/graphql', { query: two });
    expect(apiRecords().map((r) => r.op ?? null)).toEqual([
      'B',
      'PullRequestForBranch',
      'guard',
      'query viewer.login',
      'Broken',
      'A',
    ]);
  });
});

describe('GraphQL mutations', () => {
  const REPO = '/repos/fleetbench/repo-1';
  const idsQuery =
    '{ repository(owner: "fleetbench", name: "repo-1") { pullRequest(number: 6) { id } issue(number: 3) { id } labels(first: 10, orderBy: {field: NAME, direction: ASC}) { nodes { id name } } } }';

  async function ids(graphql: ReturnType<typeof inProcess>['graphql']) {
    const data = JSON.parse((await graphql(idsQuery)).body).data.repository;
    return {
      pr: data.pullRequest.id as string,
      issue: data.issue.id as string,
      labels: data.labels.nodes as { id: string; name: string }[],
    };
  }

  it('addComment posts the comment REST lists, at 1 primary and 5 secondary points, content-creating', async () => {
    const { graphql, get, apiRecords } = inProcess({ limits: { secondary: { contentPerMinute: 1 } } });
    const { pr } = await ids(graphql);
    const before = await get(`${REPO}/issues/6/comments`);
    const res = await graphql(
      'mutation CommentCreate($input: AddCommentInput!) { addComment(input: $input) { commentEdge { node { url body author { login } } } subject { id } } }',
      { input: { subjectId: pr, body: 'from graphql' } },
    );
    expect(JSON.parse(res.body).data.addComment).toEqual({
      commentEdge: {
        node: {
          url: expect.stringMatching(/\/fleetbench\/repo-1\/pull\/6#issuecomment-\d+$/),
          body: 'from graphql',
          author: { login: 'fleet-agent' },
        },
      },
      subject: { id: pr },
    });
    const after = await get(`${REPO}/issues/6/comments`, { 'if-none-match': before.headers.etag! });
    expect(after.status).toBe(200);
    expect(JSON.parse(after.body).map((c: { body: string }) => c.body)).toEqual(['from graphql']);
    // The second content-creating request within the minute meets the 1/min limit set here...
    const again = await graphql(
      'mutation { addComment(input: {subjectId: "' + pr + '", body: "x"}) { clientMutationId } }',
    );
    expect(again.status).toBe(403);
    expect(JSON.parse(again.body).message).toMatch(/content-creating requests per minute/);
    // ...while an edit is not content creation.
    const edit = await graphql(
      `mutation { updatePullRequest(input: {pullRequestId: "${pr}", title: "Renamed"}) { pullRequest { title } } }`,
    );
    expect(JSON.parse(edit.body).data.updatePullRequest.pullRequest.title).toBe('Renamed');
    expect(JSON.parse((await get(`${REPO}/pulls/6`)).body).title).toBe('Renamed');
    const mutations = apiRecords()
      .filter((r) => r.protocol === 'graphql')
      .slice(1);
    expect(mutations.map((r) => [r.op ?? null, r.status, r.cost, r.secondaryCost, r.repo ?? null])).toEqual([
      ['CommentCreate', 200, 1, 5, 'fleetbench/repo-1'],
      ['mutation addComment', 403, 0, 0, null],
      ['mutation updatePullRequest', 200, 1, 5, 'fleetbench/repo-1'],
    ]);
  });

  it("addPullRequestReview: refuses approving one's own PR; a reviewer's approval and inline threads show in REST", async () => {
    const { graphql, get, emulator } = inProcess();
    const { pr } = await ids(graphql);
    const review = (event: string) =>
      `mutation { addPullRequestReview(input: {pullRequestId: "${pr}", event: ${event}, body: "ok", threads: [{path: "a.ts", line: 3, body: "nit"}]}) { pullRequestReview { state author { login } comments(first: 5) { nodes { path line body } } } } }`;
    const own = JSON.parse((await graphql(review('APPROVE'))).body);
    expect(own).toMatchObject({
      data: { addPullRequestReview: null },
      errors: [
        {
          type: 'UNPROCESSABLE',
          path: ['addPullRequestReview'],
          message: 'Can not approve your own pull request',
        },
      ],
    });
    const reviewer = new InProcessTransport(emulator, {
      token: emulator.admin.mintToken({ user: 'reviewer-2' }).token,
    });
    const approved = await reviewer.request({
      method: 'POST',
      path: '/graphql',
      headers: {},
      body: JSON.stringify({ query: review('APPROVE') }),
    });
    expect(JSON.parse(approved.body).data.addPullRequestReview.pullRequestReview).toEqual({
      state: 'APPROVED',
      author: { login: 'reviewer-2' },
      comments: { nodes: [{ path: 'a.ts', line: 3, body: 'nit' }] },
    });
    expect(JSON.parse((await get(`${REPO}/pulls/6/reviews`)).body).at(-1)).toMatchObject({
      state: 'APPROVED',
      user: { login: 'reviewer-2' },
    });
    expect(JSON.parse((await get(`${REPO}/pulls/6/comments`)).body).at(-1)).toMatchObject({
      path: 'a.ts',
      body: 'nit',
    });
    expect(JSON.parse((await get(`${REPO}/pulls/6`)).body).mergeable_state).toBe('clean');
  });

  it('merges, closes, marks ready and labels through the state REST reads', async () => {
    const { graphql, get, emulator } = inProcess();
    const { pr, issue, labels } = await ids(graphql);
    const stale = await graphql(
      `mutation { mergePullRequest(input: {pullRequestId: "${pr}", mergeMethod: SQUASH, expectedHeadOid: "${'0'.repeat(40)}"}) { pullRequest { state } } }`,
    );
    expect(JSON.parse(stale.body).errors[0]).toMatchObject({
      type: 'UNPROCESSABLE',
      message: 'Head branch was modified. Review and try the merge again.',
    });
    // Review required (the repository asks for one approval): refused as GitHub refuses it.
    const blocked = await graphql(
      `mutation { mergePullRequest(input: {pullRequestId: "${pr}", mergeMethod: MERGE}) { pullRequest { state merged } } }`,
    );
    expect(JSON.parse(blocked.body)).toMatchObject({
      data: { mergePullRequest: null },
      errors: [
        {
          type: 'UNPROCESSABLE',
          message: 'At least 1 approving review is required by reviewers with write access.',
        },
      ],
    });
    emulator.admin.submitReview({
      repo: 'fleetbench/repo-1',
      number: 6,
      state: 'APPROVED',
      user: 'reviewer-1',
    });
    const merged = await graphql(
      `mutation { mergePullRequest(input: {pullRequestId: "${pr}", mergeMethod: MERGE}) { pullRequest { state merged } actor { login } } }`,
    );
    expect(JSON.parse(merged.body).data.mergePullRequest).toEqual({
      pullRequest: { state: 'MERGED', merged: true },
      actor: { login: 'fleet-agent' },
    });
    expect(JSON.parse((await get(`${REPO}/pulls/6`)).body)).toMatchObject({ state: 'closed', merged: true });
    expect(JSON.parse((await get(`${REPO}/issues/1`)).body).state).toBe('closed'); // PR 6 closes #1
    const again = await graphql(
      `mutation { mergePullRequest(input: {pullRequestId: "${pr}"}) { clientMutationId } }`,
    );
    expect(JSON.parse(again.body).errors[0].message).toBe('Pull Request is not mergeable');

    const draft = emulator.admin.openPullRequest({
      repo: 'fleetbench/repo-1',
      head: 'agent/issue-4',
      issue: 4,
    });
    emulator.state.pull(emulator.state.repo('fleetbench/repo-1'), draft.number).draft = true;
    const draftId = emulator.state.pull(emulator.state.repo('fleetbench/repo-1'), draft.number).nodeId;
    const ready = await graphql(
      `mutation { markPullRequestReadyForReview(input: {pullRequestId: "${draftId}"}) { pullRequest { isDraft } } }`,
    );
    expect(JSON.parse(ready.body).data.markPullRequestReadyForReview.pullRequest.isDraft).toBe(false);
    const closed = await graphql(
      `mutation { closePullRequest(input: {pullRequestId: "${draftId}"}) { pullRequest { state closed } } }`,
    );
    expect(JSON.parse(closed.body).data.closePullRequest.pullRequest).toEqual({
      state: 'CLOSED',
      closed: true,
    });
    expect(JSON.parse((await get(`${REPO}/pulls/${draft.number}`)).body)).toMatchObject({
      state: 'closed',
      merged: false,
    });

    const label = labels[0]!;
    const labelled = await graphql(
      `mutation { addLabelsToLabelable(input: {labelableId: "${issue}", labelIds: ["${label.id}"]}) { labelable { ... on Issue { labels(first: 5) { nodes { name } } } } } }`,
    );
    expect(JSON.parse(labelled.body).data.addLabelsToLabelable.labelable.labels.nodes).toContainEqual({
      name: label.name,
    });
    const edited = await graphql(
      `mutation IssueUpdate { updateIssue(input: {id: "${issue}", title: "New title", state: CLOSED}) { issue { title state } } }`,
    );
    expect(JSON.parse(edited.body).data.updateIssue.issue).toEqual({ title: 'New title', state: 'CLOSED' });
    const rest = JSON.parse((await get(`${REPO}/issues/3`)).body);
    expect(rest).toMatchObject({ title: 'New title', state: 'closed' });
    expect(rest.labels.map((l: { name: string }) => l.name)).toContain(label.name);
    const missing = await graphql(
      'mutation { closePullRequest(input: {pullRequestId: "PR_nope"}) { clientMutationId } }',
    );
    expect(JSON.parse(missing.body).errors[0]).toMatchObject({
      type: 'NOT_FOUND',
      message: "Could not resolve to a PullRequest with the global id of 'PR_nope'.",
    });
  });
});
