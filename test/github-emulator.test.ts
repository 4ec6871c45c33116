/**
 * The rest of the core, in-process: trace records and attribution, determinism, faults, REST
 * shapes and pagination, fixtures (generated and loaded) and the admin API's own behaviour.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { InputFileError } from '../src/base/errors.ts';
import { Rng } from '../src/base/rng.ts';
import { VirtualClock } from '../src/clock/index.ts';
import {
  GitHubEmulator,
  generateFixtures,
  InProcessTransport,
  loadFixturesFile,
} from '../src/github/index.ts';
import { apiRecordSchema, eventRecordSchema } from '../src/trace/schema.ts';
import { inProcess, rate, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();

describe('trace records', () => {
  it('writes one valid api record per request answered, attributed from headers', async () => {
    const { get, graphql, post, apiRecords, emulator } = inProcess();
    await get('/repos/fleetbench/repo-1/pulls/6', {
      'x-fleetbench-session': 's-7',
      'x-fleetbench-source': 'lifecycle',
      'x-fleetbench-op': 'pr-state',
      'x-fleetbench-cycle': '12',
      'x-fleetbench-phase': 'pr_open',
      'x-fleetbench-project': 'demo',
    });
    await get('/api/v3/repos/fleetbench/repo-1/commits/main/status', {
      'x-fleetbench-source': 'not-a-source',
    });
    await graphql('{ repository(owner: "fleetbench", name: "repo-1") { id } }', undefined, {
      'x-fleetbench-op': 'graphql-batch',
    });
    await post('/repos/fleetbench/repo-1/issues/1/comments', { body: 'hi' });
    await get('/nope/nothing');
    const records = apiRecords();
    expect(records).toHaveLength(5);
    expect(emulator.stats()).toMatchObject({ requests: 5, traceRecords: 5 });
    for (const record of records) expect(apiRecordSchema.safeParse(record).success).toBe(true);
    expect(records[0]).toEqual({
      kind: 'api',
      t: 0,
      dur: 0,
      service: 'github',
      protocol: 'rest',
      method: 'GET',
      route: '/repos/{owner}/{repo}/pulls/{pull_number}',
      status: 200,
      conditional: false,
      notModified: false,
      resource: 'core',
      cost: 1,
      secondaryCost: 1,
      rl: { limit: 5000, remaining: 4999, used: 1, reset: records[0]!.rl!.reset, resource: 'core' },
      bytes: expect.any(Number),
      project: 'demo',
      session: 's-7',
      repo: 'fleetbench/repo-1',
      source: 'lifecycle',
      op: 'pr-state',
      cycle: 12,
      phase: 'pr_open',
    });
    expect(records[0]!.bytes).toBeGreaterThan(1000);
    expect(records[1]).toMatchObject({ route: '/repos/{owner}/{repo}/commits/{ref}/status', status: 200 });
    expect(records[1]!.source).toBeUndefined();
    expect(records[2]).toMatchObject({
      protocol: 'graphql',
      op: 'graphql-batch',
      repo: 'fleetbench/repo-1',
      cost: 1,
    });
    expect(records[3]).toMatchObject({ method: 'POST', status: 201, secondaryCost: 5, cost: 1 });
    expect(records[4]).toMatchObject({
      route: '(unmatched)',
      status: 404,
      cost: 1,
      error: 'Not Found: /nope/nothing',
    });
  });

  it('attributes a client that cannot send headers through its minted per-session token', async () => {
    const { emulator, apiRecords } = inProcess();
    const minted = emulator.admin.mintToken({ session: 'sess-42', source: 'agent', project: 'p1' });
    expect(minted).toMatchObject({ user: 'fleet-agent', kind: 'user', session: 'sess-42', source: 'agent' });
    const client = new InProcessTransport(emulator, { token: minted.token });
    await client.request({ method: 'GET', path: '/user', headers: {} });
    await client.request({ method: 'GET', path: '/user', headers: { 'x-fleetbench-session': 'override' } });
    expect(apiRecords().map((r) => [r.session, r.source, r.project])).toEqual([
      ['sess-42', 'agent', 'p1'],
      ['override', 'agent', 'p1'],
    ]);
  });

  it('answers an unknown token 401 without charging anyone, and records it', async () => {
    const { emulator, apiRecords } = inProcess();
    const res = await emulator.handle({
      method: 'GET',
      path: '/user',
      headers: { authorization: 'token ghp_unknown' },
    });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toEqual({
      message: 'Bad credentials',
      documentation_url: 'https://docs.github.com/rest',
    });
    expect(rate(res)).toMatchObject({ limit: 60, used: 0 });
    expect(apiRecords()[0]).toMatchObject({ status: 401, cost: 0, route: '/user' });
  });

  it('gives byte-identical records for the same seed, with latency', async () => {
    const run = async () => {
      const h = inProcess({
        seed: 7,
        latency: { rest: { medianMs: 60, p95Ms: 250 }, graphql: { medianMs: 120, p95Ms: 500 } },
      });
      const all = Promise.all([
        h.get('/repos/fleetbench/repo-1/pulls'),
        h.get('/repos/fleetbench/repo-1/issues'),
        h.graphql('{ viewer { login } }'),
        h.get('/repos/fleetbench/repo-1/pulls/7'),
      ]);
      await h.clock.run();
      await all;
      return h.sink.records.map((r) => JSON.stringify(r)).join('\n');
    };
    const a = await run();
    expect(a).toBe(await run());
    expect(a).toMatch(/"dur":\d+\.\d+/);
  });

  it('emits a ratelimit.snapshot event for bracketing, without charging', async () => {
    const { get, emulator, sink } = inProcess();
    await get('/repos/fleetbench/repo-1/issues');
    const snapshot = emulator.admin.snapshotRateLimit({ label: 'before' });
    expect(snapshot.resources.core).toMatchObject({ used: 1, remaining: 4999 });
    const event = sink.records.find((r) => r.kind === 'event')!;
    expect(eventRecordSchema.safeParse(event).success).toBe(true);
    expect(event).toMatchObject({
      kind: 'event',
      name: 'ratelimit.snapshot',
      labels: { identity: 'user:fleet-agent', label: 'before' },
      data: snapshot,
    });
    expect(emulator.admin.snapshotRateLimit().resources.core.used).toBe(1);
  });
});

describe('admin API over HTTP paths', () => {
  it('dispatches /_fleetbench/<kebab-name> to the same methods, validated, behind the admin token', async () => {
    const { emulator, apiRecords } = inProcess();
    const admin = (method: string, name: string, body?: unknown, token = emulator.adminToken) =>
      emulator.handle({
        method,
        path: `/api/v3/_fleetbench/${name}`,
        headers: { authorization: `Bearer ${token}` },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await admin('POST', 'stats', {}, 'wrong')).status).toBe(401);
    const opened = await admin('POST', 'open-pull-request', {
      repo: 'fleetbench/repo-1',
      head: 'feature/x',
      title: 'X',
    });
    expect(opened.status).toBe(200);
    expect(JSON.parse(opened.body)).toMatchObject({
      number: 8,
      state: 'open',
      head: 'feature/x',
      base: 'main',
      checks: null,
    });
    const invalid = await admin('POST', 'post-review-comments', {
      repo: 'fleetbench/repo-1',
      number: 8,
      count: 0,
    });
    expect(invalid.status).toBe(400);
    expect(JSON.parse(invalid.body).message).toMatch(/^count: /);
    const missing = await admin('POST', 'merge-pull-request', { repo: 'fleetbench/repo-1', number: 99 });
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).message).toBe('no pull request #99 in fleetbench/repo-1');
    expect((await admin('POST', 'merge-pull-request', { repo: 'fleetbench/repo-1', number: 8 })).status).toBe(
      200,
    );
    expect((await admin('POST', 'merge-pull-request', { repo: 'fleetbench/repo-1', number: 8 })).status).toBe(
      405,
    );
    const quota = await emulator.handle({
      method: 'GET',
      path: '/_fleetbench/quota?user=fleet-agent',
      headers: { authorization: `Bearer ${emulator.adminToken}` },
    });
    expect(JSON.parse(quota.body)).toMatchObject({
      identity: 'user:fleet-agent',
      resources: { core: { used: 0, limit: 5000 } },
    });
    expect((await admin('GET', 'open-pull-request')).status).toBe(405);
    expect(JSON.parse((await admin('POST', 'nope', {})).body).methods).toContain('snapshot-rate-limit');
    // Admin calls are not GitHub calls: nothing traced, nothing charged.
    expect(apiRecords()).toHaveLength(0);
  });
});

describe('faults', () => {
  it('injects a 5xx share, extra latency and a forced secondary window, each with start/end events', async () => {
    const { emulator, get, clock, sink, apiRecords, advance } = inProcess();
    const admin = emulator.admin;
    const { id } = admin.injectFault({ kind: 'error', share: 1, status: 502 });
    const failed = await get('/repos/fleetbench/repo-1/pulls');
    expect(failed.status).toBe(502);
    expect(rate(failed)).toMatchObject({ used: 0 });
    expect(admin.clearFaults({ id })).toEqual({ cleared: 1 });

    admin.injectFault({ kind: 'latency', ms: 400, protocol: 'rest' });
    const slow = get('/repos/fleetbench/repo-1/pulls');
    await clock.run();
    expect((await slow).status).toBe(200);
    expect(apiRecords().at(-1)!.dur).toBe(400);
    admin.clearFaults();

    admin.injectFault({ kind: 'secondary', durationMs: 90_000, route: '/repos/{owner}/{repo}/pulls' });
    const limited = await get('/repos/fleetbench/repo-1/pulls');
    expect(limited.status).toBe(403);
    expect(limited.headers['retry-after']).toBe('90');
    expect(JSON.parse(limited.body).message).toMatch(/secondary rate limit/);
    expect((await get('/repos/fleetbench/repo-1/issues')).status).toBe(200);
    await advance(90_000);
    expect((await get('/repos/fleetbench/repo-1/pulls')).status).toBe(200);
    const events = sink.records.filter((r) => r.kind === 'event').map((r) => [r.name, r.labels?.fault, r.t]);
    expect(events).toEqual([
      ['fault.start', 'error', 0],
      ['fault.end', 'error', 0],
      ['fault.start', 'latency', 0],
      ['fault.end', 'latency', 400],
      ['fault.start', 'secondary', 400],
      ['fault.end', 'secondary', 90_400],
    ]);
    expect(apiRecords().map((r) => r.status)).toEqual([502, 200, 403, 200, 200]);
  });

  it('answers a handler crash with 500 and keeps serving', async () => {
    const { emulator, get, apiRecords } = inProcess();
    const repo = emulator.state.findRepo('fleetbench', 'repo-1')!;
    // Corrupt the state the way a bug would.
    (repo.pulls.get(6) as unknown as { issue: unknown }).issue = undefined;
    const res = await get('/repos/fleetbench/repo-1/pulls/6');
    expect(res.status).toBe(500);
    expect(apiRecords()[0]!.error).toMatch(/^emulator error:/);
    expect((await get('/repos/fleetbench/repo-1/issues/1')).status).toBe(200);
  });
});

describe('REST', () => {
  it('paginates with a Link header that walks every page', async () => {
    const { get } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 23 } });
    const seen: number[] = [];
    let next: string | undefined = '/api/v3/repos/fleetbench/repo-1/issues?per_page=5&state=open';
    let pages = 0;
    while (next && pages < 10) {
      const res = await get(next);
      pages++;
      seen.push(...JSON.parse(res.body).map((i: { number: number }) => i.number));
      next = /<([^>]+)>; rel="next"/.exec(res.headers.link ?? '')?.[1];
      if (pages === 1) {
        expect(res.headers.link).toBe(
          '<https://api.github.com/api/v3/repos/fleetbench/repo-1/issues?per_page=5&state=open&page=2>; rel="next", <https://api.github.com/api/v3/repos/fleetbench/repo-1/issues?per_page=5&state=open&page=5>; rel="last"',
        );
      }
    }
    expect(pages).toBe(5);
    expect(seen).toEqual(Array.from({ length: 23 }, (_, i) => 23 - i));
  });

  it('lists pulls by head, state and sort the way GitHub does', async () => {
    const { get, emulator } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 4, pullsPerRepo: 3 } });
    const list = async (qs: string) =>
      JSON.parse((await get(`/repos/fleetbench/repo-1/pulls?${qs}`)).body).map(
        (p: { number: number }) => p.number,
      );
    expect(await list('')).toEqual([7, 6, 5]);
    expect(await list('direction=asc')).toEqual([5, 6, 7]);
    expect(await list('head=fleetbench:agent/issue-2')).toEqual([6]);
    expect(await list('head=someone-else:agent/issue-2')).toEqual([]);
    emulator.admin.mergePullRequest({ repo: 'fleetbench/repo-1', number: 5 });
    expect(await list('state=closed')).toEqual([5]);
    expect(await list('state=all&sort=updated&direction=desc')).toEqual([5, 7, 6]);
    const pr = JSON.parse((await get('/repos/fleetbench/repo-1/pulls/5')).body);
    expect(pr).toMatchObject({
      number: 5,
      state: 'closed',
      merged: true,
      mergeable: null,
      head: { ref: 'agent/issue-1' },
    });
    const issue = JSON.parse((await get('/repos/fleetbench/repo-1/issues/1')).body);
    expect(issue).toMatchObject({ state: 'closed', state_reason: 'completed' });
  });

  it('serves the reads an orchestrator makes, with GitHub shapes', async () => {
    const { get, post, emulator } = inProcess();
    const user = JSON.parse((await get('/user')).body);
    expect(user).toMatchObject({ login: 'fleet-agent', type: 'User', id: emulator.state.defaultUser.id });
    const repos = JSON.parse((await get('/user/repos')).body);
    expect(repos.map((r: { full_name: string }) => r.full_name)).toEqual(['fleetbench/repo-1']);
    const pr = JSON.parse((await get('/repos/fleetbench/repo-1/pulls/6')).body);
    expect(pr).toMatchObject({
      number: 6,
      state: 'open',
      mergeable: true,
      mergeable_state: 'blocked',
      draft: false,
    });
    expect(pr.head.sha).toMatch(/^[0-9a-f]{40}$/);
    const checks = JSON.parse((await get(`/repos/fleetbench/repo-1/commits/${pr.head.sha}/check-runs`)).body);
    expect(checks).toMatchObject({
      total_count: 1,
      check_runs: [{ name: 'ci', status: 'completed', conclusion: 'success', head_sha: pr.head.sha }],
    });
    const status = JSON.parse((await get(`/repos/fleetbench/repo-1/commits/${pr.head.sha}/status`)).body);
    expect(status).toMatchObject({ state: 'pending', total_count: 0, sha: pr.head.sha });
    const issues = JSON.parse((await get('/repos/fleetbench/repo-1/issues')).body);
    expect(issues.find((i: { number: number }) => i.number === 6).pull_request.url).toBe(
      'https://api.github.com/repos/fleetbench/repo-1/pulls/6',
    );
    const created = await post('/repos/fleetbench/repo-1/pulls/6/comments', {
      body: 'nit',
      path: 'a.ts',
      line: 3,
      commit_id: pr.head.sha,
    });
    expect(created.status).toBe(201);
    expect(JSON.parse(created.body)).toMatchObject({
      body: 'nit',
      path: 'a.ts',
      line: 3,
      user: { login: 'fleet-agent' },
    });
    const comments = JSON.parse((await get('/repos/fleetbench/repo-1/pulls/6/comments')).body);
    expect(comments).toHaveLength(1);
    const reviews = JSON.parse((await get('/repos/fleetbench/repo-1/pulls/6/reviews')).body);
    expect(reviews).toMatchObject([{ state: 'COMMENTED', user: { login: 'fleet-agent' } }]);
    const invalid = await post('/repos/fleetbench/repo-1/issues/1/comments', {});
    expect(invalid.status).toBe(422);
    expect(JSON.parse(invalid.body)).toMatchObject({
      message: 'Validation Failed',
      errors: [{ field: 'body', code: 'missing_field' }],
    });
    // GitHub names the operation's documentation and the status in an error body.
    const notFound = await get('/repos/fleetbench/nope/pulls');
    expect(notFound.status).toBe(404);
    expect(JSON.parse(notFound.body)).toEqual({
      message: 'Not Found',
      documentation_url: 'https://docs.github.com/rest/pulls/pulls#list-pull-requests',
      status: '404',
    });
    const unknownRoute = await get('/repos/fleetbench/repo-1/nothing-here');
    expect(JSON.parse(unknownRoute.body)).toEqual({
      message: 'Not Found',
      documentation_url: 'https://docs.github.com/rest',
      status: '404',
    });
    const badJson = await emulator.handle({
      method: 'POST',
      path: '/repos/fleetbench/repo-1/issues/1/comments',
      headers: { authorization: `token ${emulator.defaultToken}` },
      body: '{oops',
    });
    expect(badJson.status).toBe(400);
    const dup = await post('/repos/fleetbench/repo-1/pulls', {
      head: 'agent/issue-1',
      base: 'main',
      title: 'again',
    });
    expect(dup.status).toBe(422);
    expect(JSON.parse(dup.body).errors[0].message).toBe(
      'A pull request already exists for fleetbench:agent/issue-1.',
    );
  });
});

describe('REST writes mirrored by the GraphQL mutations', () => {
  it('edits, labels, reviews and closes through PATCH/POST as GraphQL does', async () => {
    const h = inProcess();
    const send = (method: string, path: string, body: unknown, token = h.emulator.defaultToken) =>
      new InProcessTransport(h.emulator, { token }).request({
        method,
        path,
        headers: {},
        body: JSON.stringify(body),
      });
    const repo = '/repos/fleetbench/repo-1';
    const label = [...h.emulator.state.repoLabels(h.emulator.state.repo('fleetbench/repo-1')).keys()][0]!;
    const edited = await send('PATCH', `${repo}/pulls/6`, { title: 'Renamed', body: 'B' });
    expect(edited.status).toBe(200);
    expect(JSON.parse(edited.body)).toMatchObject({ title: 'Renamed', body: 'B', state: 'open' });
    const labelled = await send('POST', `${repo}/issues/3/labels`, { labels: [label, 'brand-new'] });
    expect(JSON.parse(labelled.body).map((l: { name: string }) => l.name)).toEqual(
      expect.arrayContaining([label, 'brand-new']),
    );
    const issue = await send('PATCH', `${repo}/issues/3`, { state: 'closed', labels: ['brand-new'] });
    expect(JSON.parse(issue.body)).toMatchObject({ state: 'closed', labels: [{ name: 'brand-new' }] });
    const own = await send('POST', `${repo}/pulls/6/reviews`, { event: 'APPROVE' });
    expect(own.status).toBe(422);
    expect(own.body).toContain('Can not approve your own pull request');
    const reviewer = h.emulator.admin.mintToken({ user: 'reviewer-1' }).token;
    const review = await send(
      'POST',
      `${repo}/pulls/6/reviews`,
      { event: 'APPROVE', body: 'ok', comments: [{ path: 'a.ts', line: 2, body: 'nit' }] },
      reviewer,
    );
    expect(review.status).toBe(200);
    expect(JSON.parse(review.body)).toMatchObject({ state: 'APPROVED', user: { login: 'reviewer-1' } });
    expect(h.emulator.admin.findPullRequest({ repo: 'fleetbench/repo-1', number: 6 })).toMatchObject({
      reviewDecision: 'APPROVED',
      reviewComments: 1,
    });
    const closed = await send('PATCH', `${repo}/pulls/6`, { state: 'closed' });
    expect(JSON.parse(closed.body)).toMatchObject({ state: 'closed', merged: false });
    expect(h.apiRecords().map((r) => [r.method, r.route, r.status, r.secondaryCost])).toEqual([
      ['PATCH', '/repos/{owner}/{repo}/pulls/{pull_number}', 200, 5],
      ['POST', '/repos/{owner}/{repo}/issues/{issue_number}/labels', 200, 5],
      ['PATCH', '/repos/{owner}/{repo}/issues/{issue_number}', 200, 5],
      ['POST', '/repos/{owner}/{repo}/pulls/{pull_number}/reviews', 422, 5],
      ['POST', '/repos/{owner}/{repo}/pulls/{pull_number}/reviews', 200, 5],
      ['PATCH', '/repos/{owner}/{repo}/pulls/{pull_number}', 200, 5],
    ]);
  });
});

describe('fixtures', () => {
  it('generates the same world from the same seed', () => {
    const a = generateFixtures({ repos: 10, issuesPerRepo: 8 }, new Rng(3));
    const b = generateFixtures({ repos: 10, issuesPerRepo: 8 }, new Rng(3));
    expect(a).toEqual(b);
    expect(a.repos).toHaveLength(10);
    expect(a.repos.every((r) => r.issues!.length === 8)).toBe(true);
    const emulator = new GitHubEmulator({
      clock: new VirtualClock(),
      rng: new Rng(3),
      fixtures: { repos: 1, issuesPerRepo: 60 },
    });
    expect(emulator.state.counts()).toEqual({ repos: 1, issues: 60, pulls: 0 });
    expect(emulator.admin.listRepos().repos[0]!.openIssues).toHaveLength(60);
  });

  it('loads a YAML file with tokens, PRs, checks and reviews', async () => {
    const file = join(dir, 'world.yaml');
    writeFileSync(
      file,
      `default_user: bot-one
tokens:
  - token: ghp_fixturetoken1
    user: bot-one
    session: s1
repos:
  - owner: acme
    name: widgets
    required_reviews: 0
    issues:
      - title: Broken widget
        labels: [bug]
    pulls:
      - title: Fix widget
        head: fix/widget
        issue: 1
        checks: [{ name: build, conclusion: failure }]
        reviews: [{ user: alice, state: APPROVED }]
        review_comments: [{ user: alice, body: looks good, path: w.ts, line: 2 }]
`,
    );
    const fixtures = loadFixturesFile(file);
    const h = inProcess({ fixtures });
    const client = new InProcessTransport(h.emulator, { token: 'ghp_fixturetoken1' });
    const res = await client.request({ method: 'GET', path: '/repos/acme/widgets/pulls/2', headers: {} });
    expect(JSON.parse(res.body)).toMatchObject({
      number: 2,
      title: 'Fix widget',
      user: { login: 'bot-one' },
      review_comments: 1,
      mergeable_state: 'unstable',
    });
    expect(h.apiRecords()[0]!.session).toBe('s1');
    expect(h.emulator.admin.findPullRequest({ repo: 'acme/widgets', head: 'fix/widget' })).toMatchObject({
      number: 2,
      reviewDecision: 'APPROVED',
      checks: 'FAILURE',
      linkedIssue: 1,
    });
  });

  it('takes web_url from a fixtures file: web links on it, API URLs on the server origin', async () => {
    const file = join(dir, 'web.yaml');
    writeFileSync(
      file,
      'web_url: https://github.example.com\nrepos:\n  - owner: acme\n    name: w\n    issues: [{ title: t }]\n',
    );
    const h = inProcess({ fixtures: loadFixturesFile(file) });
    const server = await serve(h.emulator);
    const res = await fetch(`${server.url}/repos/acme/w/issues/1`, {
      headers: { authorization: `token ${h.emulator.defaultToken}` },
    });
    expect(await res.json()).toMatchObject({
      url: `${server.url}/repos/acme/w/issues/1`,
      html_url: 'https://github.example.com/acme/w/issues/1',
      repository_url: `${server.url}/repos/acme/w`,
    });
    writeFileSync(file, 'web_url: github.com\nrepos:\n  - owner: acme\n    name: w\n');
    expect(() => loadFixturesFile(file)).toThrow(
      `${file}:1: web_url: expected an origin such as https://github.com`,
    );
  });

  it('ships a valid example fixtures file', () => {
    const fixtures = loadFixturesFile(
      fileURLToPath(new URL('../examples/github-fixtures.yaml', import.meta.url)),
    );
    const h = inProcess({ fixtures });
    expect(h.emulator.state.counts()).toEqual({ repos: 2, issues: 4, pulls: 2 });
    expect(h.emulator.admin.findPullRequest({ repo: 'acme/widgets', head: 'agent/issue-2' })).toMatchObject({
      number: 5,
      checks: 'PENDING',
      reviewComments: 1,
    });
  });

  it('names file, line and field path for a bad file', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      'repos:\n  - owner: acme\n    name: widgets\n    pulls:\n      - title: x\n        head: 7\n',
    );
    expect(() => loadFixturesFile(file)).toThrow(InputFileError);
    expect(() => loadFixturesFile(file)).toThrow(`${file}:6: repos[0].pulls[0].head: expected string`);
    writeFileSync(
      file,
      'repos:\n  - owner: acme\n    name: widgets\n    pulls:\n      - title: x\n        head: b\n        issue: 4\n',
    );
    expect(() => loadFixturesFile(file)).toThrow(
      `${file}:7: repos[0].pulls[0].issue: no issue #4 in acme/widgets`,
    );
    writeFileSync(file, 'repos: [\n');
    expect(() => loadFixturesFile(file)).toThrow(new RegExp(`^${file.replaceAll('/', '\\/')}:\\d+: `));
  });
});
