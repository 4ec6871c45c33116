/**
 * Quota arithmetic through the real handle() path, in-process under a VirtualClock: every number
 * a client sees (x-ratelimit-*, retry-after, /rate_limit) and every cost the trace records.
 */
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock, VIRTUAL_EPOCH_MS } from '../src/clock/index.ts';
import { type EmulatorResponse, GitHubEmulator, InProcessTransport } from '../src/github/index.ts';
import { inProcess, rate, serve } from './helpers/github.ts';

const EPOCH_S = VIRTUAL_EPOCH_MS / 1000;
const PULLS = '/repos/fleetbench/repo-1/pulls';
const ISSUES = '/repos/fleetbench/repo-1/issues';
const RATE_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';

describe('primary limit', () => {
  it('charges one point per REST call and answers 403 with remaining 0 once exhausted', async () => {
    const { get, emulator, apiRecords } = inProcess({ limits: { primary: { user: { core: 3 } } } });
    for (let i = 1; i <= 3; i++) {
      const res = await get(ISSUES);
      expect(res.status).toBe(200);
      expect(rate(res)).toEqual({
        limit: 3,
        remaining: 3 - i,
        used: i,
        reset: EPOCH_S + 3600,
        resource: 'core',
      });
    }
    const over = await get(ISSUES);
    expect(over.status).toBe(403);
    expect(JSON.parse(over.body)).toEqual({
      message: `API rate limit exceeded for user ID ${emulator.state.defaultUser.id}.`,
      documentation_url: RATE_DOCS,
    });
    expect(rate(over)).toEqual({ limit: 3, remaining: 0, used: 3, reset: EPOCH_S + 3600, resource: 'core' });
    expect(over.headers['retry-after']).toBeUndefined();
    const records = apiRecords();
    expect(records.map((r) => r.cost)).toEqual([1, 1, 1, 0]);
    expect(records.map((r) => r.limited)).toEqual([undefined, undefined, undefined, 'primary']);
    expect(records[3]!.rl).toEqual({
      limit: 3,
      remaining: 0,
      used: 3,
      reset: EPOCH_S + 3600,
      resource: 'core',
    });
  });

  it('can answer 429 instead of 403 when configured', async () => {
    const { get } = inProcess({ limits: { primary: { user: { core: 1 } }, primaryStatus: 429 } });
    expect((await get(ISSUES)).status).toBe(200);
    expect((await get(ISSUES)).status).toBe(429);
  });

  it('shares one bucket between the tokens of a user; another user has its own', async () => {
    const { emulator, get } = inProcess({ limits: { primary: { user: { core: 10 } } } });
    const second = new InProcessTransport(emulator, {
      token: emulator.admin.mintToken({ session: 's2' }).token,
    });
    const other = new InProcessTransport(emulator, {
      token: emulator.admin.mintToken({ user: 'someone-else' }).token,
    });
    await get(ISSUES);
    await get(ISSUES);
    const viaSecond = await second.request({ method: 'GET', path: ISSUES, headers: {} });
    expect(rate(viaSecond)).toMatchObject({ used: 3, remaining: 7 });
    const viaOther = await other.request({ method: 'GET', path: ISSUES, headers: {} });
    expect(rate(viaOther)).toMatchObject({ used: 1, remaining: 9 });
    expect(emulator.admin.quota({ user: 'someone-else' }).resources.core).toMatchObject({
      used: 1,
      remaining: 9,
    });
    expect(emulator.admin.quota().resources.core).toMatchObject({ used: 3, remaining: 7 });
  });

  it('opens the hourly window at first use and resets it at x-ratelimit-reset, in virtual time', async () => {
    const { get, advance, clock } = inProcess({ limits: { primary: { user: { core: 2 } } } });
    await advance(1_000);
    const first = await get(ISSUES);
    expect(rate(first)).toMatchObject({ used: 1, reset: EPOCH_S + 1 + 3600 });
    await get(ISSUES);
    await advance(3_600_000 - 1);
    expect(clock.now()).toBe(3_600_999);
    const stillOver = await get(ISSUES);
    expect(stillOver.status).toBe(403);
    expect(rate(stillOver)).toMatchObject({ remaining: 0, used: 2, reset: EPOCH_S + 3601 });
    await advance(1);
    const fresh = await get(ISSUES);
    expect(fresh.status).toBe(200);
    expect(rate(fresh)).toEqual({
      limit: 2,
      remaining: 1,
      used: 1,
      reset: EPOCH_S + 3601 + 3600,
      resource: 'core',
    });
  });

  it('allows 60 unauthenticated calls per hour per IP and names the IP when exhausted', async () => {
    const { emulator } = inProcess();
    const a = new InProcessTransport(emulator, { remoteAddress: '10.0.0.1' });
    const b = new InProcessTransport(emulator, { remoteAddress: '10.0.0.2' });
    const request = { method: 'GET', path: ISSUES, headers: {} };
    let last = await a.request(request);
    expect(rate(last)).toMatchObject({ limit: 60, remaining: 59, used: 1 });
    for (let i = 2; i <= 60; i++) last = await a.request(request);
    expect(rate(last)).toMatchObject({ remaining: 0, used: 60 });
    const over = await a.request(request);
    expect(over.status).toBe(403);
    expect(JSON.parse(over.body).message).toBe(
      "API rate limit exceeded for 10.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
    );
    expect(rate(await b.request(request))).toMatchObject({ limit: 60, remaining: 59, used: 1 });
  });

  it('serves GET /rate_limit free, with GitHub shape and the current numbers', async () => {
    const { get, graphql } = inProcess();
    await get(ISSUES);
    await get(ISSUES);
    await graphql('{ viewer { login } }');
    const res = await get('/rate_limit');
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(Object.keys(body)).toEqual(['resources', 'rate']);
    expect(Object.keys(body.resources)).toEqual(
      expect.arrayContaining(['core', 'search', 'graphql', 'integration_manifest', 'code_search']),
    );
    expect(body.resources.core).toEqual({ limit: 5000, used: 2, remaining: 4998, reset: EPOCH_S + 3600 });
    expect(body.resources.graphql).toEqual({ limit: 5000, used: 1, remaining: 4999, reset: EPOCH_S + 3600 });
    expect(body.resources.search).toEqual({ limit: 30, used: 0, remaining: 30, reset: EPOCH_S + 60 });
    expect(body.rate).toEqual(body.resources.core);
    // Free: asking again changes nothing.
    expect(JSON.parse((await get('/rate_limit')).body).resources.core.used).toBe(2);
    expect(rate(res)).toMatchObject({ used: 2, remaining: 4998, resource: 'core' });
  });

  it('gives an actions token 1,000/h per repository and an enterprise token 15,000/h', async () => {
    const { emulator } = inProcess({ fixtures: { repos: 2, issuesPerRepo: 1 } });
    const actions1 = new InProcessTransport(emulator, {
      token: emulator.admin.mintToken({ kind: 'actions', repo: 'fleetbench/repo-1' }).token,
    });
    const actions1b = new InProcessTransport(emulator, {
      token: emulator.admin.mintToken({ kind: 'actions', repo: 'fleetbench/repo-1' }).token,
    });
    const actions2 = new InProcessTransport(emulator, {
      token: emulator.admin.mintToken({ kind: 'actions', repo: 'fleetbench/repo-2' }).token,
    });
    const app = new InProcessTransport(emulator, {
      token: emulator.admin.mintToken({ kind: 'enterprise', user: 'my-app[bot]' }).token,
    });
    const req = { method: 'GET', path: ISSUES, headers: {} };
    await actions1.request(req);
    expect(rate(await actions1b.request(req))).toMatchObject({ limit: 1000, used: 2 });
    expect(rate(await actions2.request(req))).toMatchObject({ limit: 1000, used: 1 });
    expect(rate(await app.request(req))).toMatchObject({ limit: 15000, used: 1 });
    expect(emulator.admin.quota({ repo: 'fleetbench/repo-1' })).toMatchObject({
      kind: 'actions',
      resources: { core: { used: 2 } },
    });
    expect(() => emulator.admin.mintToken({ kind: 'actions' })).toThrow('an actions token needs repo');
  });

  it('accepts unknown tokens as the default user when asked to', async () => {
    const { emulator } = inProcess({ acceptUnknownTokens: true });
    const res = await emulator.handle({
      method: 'GET',
      path: '/user',
      headers: { authorization: 'Bearer whatever-123' },
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).login).toBe('fleet-agent');
    expect(rate(res)).toMatchObject({ limit: 5000, used: 1 });
  });

  it('resets quota through the admin API', async () => {
    const { get, emulator } = inProcess({ limits: { primary: { user: { core: 1 } } } });
    await get(ISSUES);
    expect((await get(ISSUES)).status).toBe(403);
    expect(emulator.admin.resetQuota({ resource: 'core' })).toEqual({ identities: 1 });
    expect(rate(await get(ISSUES))).toMatchObject({ used: 1, remaining: 0 });
  });
});

describe('refused requests charge nothing', () => {
  it('gives back the secondary point of a request the primary limit refuses', async () => {
    const { get, apiRecords } = inProcess({
      limits: { primary: { user: { core: 2 } }, secondary: { restPointsPerMinute: 3 } },
    });
    for (let i = 0; i < 2; i++) expect((await get(ISSUES)).status).toBe(200);
    // Had refusals taken a point, the fourth would meet the 3-point secondary limit instead.
    for (let i = 0; i < 3; i++) expect((await get(ISSUES)).status).toBe(403);
    expect(apiRecords().map((r) => [r.limited ?? null, r.cost, r.secondaryCost])).toEqual([
      [null, 1, 1],
      [null, 1, 1],
      ['primary', 0, 0],
      ['primary', 0, 0],
      ['primary', 0, 0],
    ]);
  });
});

describe('CPU-time secondary limit', () => {
  it('refuses once a minute of response time reaches the limit, GraphQL with its own share', async () => {
    const h = inProcess({
      latency: { rest: { medianMs: 1000, p95Ms: 1000 }, graphql: { medianMs: 1000, p95Ms: 1000 } },
      limits: { secondary: { cpuMsPerMinute: 4000, graphqlCpuMsPerMinute: 2000 } },
    });
    // One request at a time, each taking its modelled second of virtual time.
    const run = async (pending: Promise<EmulatorResponse>) => {
      await h.clock.run();
      return pending;
    };
    const query = () => run(h.graphql('{ viewer { login } }'));
    const answers = [await query(), await query(), await query()]; // GraphQL's 2 s are used
    answers.push(await run(h.get(ISSUES)), await run(h.get(ISSUES))); // 4 s in all
    answers.push(await run(h.get(ISSUES)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 403, 200, 200, 403]);
    expect(JSON.parse(answers[2]!.body).message).toMatch(
      /more than 2 seconds of CPU time per minute for the GraphQL API/,
    );
    expect(JSON.parse(answers[5]!.body).message).toMatch(/more than 4 seconds of CPU time per minute\./);
    // The window opened at 0; five answers later (a refusal takes its latency but no CPU), 55 s remain.
    expect(answers[5]!.headers['retry-after']).toBe('55');
    expect(h.apiRecords().map((r) => r.limited ?? null)).toEqual([
      null,
      null,
      'secondary',
      null,
      null,
      'secondary',
    ]);
  });
});

describe("CPU time is charged when an answer completes, the emulator's own time to answer", () => {
  it('three overlapping 1 s GraphQL queries all pass a 2 s share; the next one is refused', async () => {
    const h = inProcess({
      latency: { graphql: { medianMs: 1000, p95Ms: 1000 } },
      limits: { secondary: { graphqlCpuMsPerMinute: 2000 } },
    });
    // Admitted together at t=0: none has completed, so none has used CPU time yet.
    const together = Promise.all([1, 2, 3].map(() => h.graphql('{ viewer { login } }')));
    await h.clock.run();
    expect((await together).map((a) => a.status)).toEqual([200, 200, 200]);
    // Completed at t=1 s: 3 s of GraphQL CPU time in the window, over its 2 s.
    const next = h.graphql('{ viewer { login } }');
    await h.clock.run();
    const refused = await next;
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).message).toMatch(/2 seconds of CPU time per minute for the GraphQL API/);
    expect(refused.headers['retry-after']).toBe('59');
  });

  it("over HTTP: a client's slow upload is not the emulator's CPU time (150 slow GraphQL bodies were refused for it)", async () => {
    const clock = new RealClock();
    const emulator = new GitHubEmulator({
      clock,
      rng: new Rng(3),
      fixtures: { repos: 1, issuesPerRepo: 2 },
      latency: false,
      limits: { secondary: { cpuMsPerMinute: 300 } },
    });
    const { url } = await serve(emulator);
    const auth = `token ${emulator.defaultToken}`;
    /** A request whose body arrives `holdMs` after its headers: its status and error message. */
    const send = (method: string, path: string, body?: string, holdMs = 0) =>
      new Promise<{ status: number; message?: string }>((resolve, reject) => {
        const req = httpRequest(`${url}${path}`, {
          method,
          headers: {
            authorization: auth,
            ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
          },
        });
        req.on('response', (res) => {
          let text = '';
          res.on('data', (d) => {
            text += d;
          });
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              message: (JSON.parse(text) as { message?: string }).message,
            }),
          );
        });
        req.on('error', reject);
        req.flushHeaders();
        setTimeout(() => req.end(body), holdMs);
      });
    // Its body arrives 400 ms after its headers: more than the 300 ms share, none of it the emulator's.
    expect(
      (await send('POST', '/repos/fleetbench/repo-1/issues/1/comments', '{"body":"x"}', 400)).status,
    ).toBe(201);
    expect((await send('GET', '/repos/fleetbench/repo-1/issues')).status).toBe(200);
    // The report's case at the default limits: 60 GraphQL requests at once, each body 1.5 s in
    // coming, 90 s of upload in all against a 60 s share of GraphQL CPU time: all answered.
    const graphql = new GitHubEmulator({
      clock,
      rng: new Rng(4),
      fixtures: { repos: 1, issuesPerRepo: 2 },
      latency: false,
    });
    const served = await serve(graphql);
    const slow = await Promise.all(
      Array.from(
        { length: 60 },
        () =>
          new Promise<{ status: number; text: string }>((resolve, reject) => {
            const body = JSON.stringify({ query: '{ viewer { login } }' });
            const req = httpRequest(`${served.url}/graphql`, {
              method: 'POST',
              headers: {
                authorization: `token ${graphql.defaultToken}`,
                'content-length': String(body.length),
              },
            });
            req.on('response', (res) => {
              let text = '';
              res.on('data', (d) => {
                text += d;
              });
              res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
            });
            req.on('error', reject);
            req.write(body.slice(0, 10));
            setTimeout(() => req.end(body.slice(10)), 1_500);
          }),
      ),
    );
    expect(slow.filter((a) => a.status !== 200).map((a) => a.text)).toEqual([]);
    clock.dispose();
  }, 60_000);
});

describe('conditional requests', () => {
  it('answers a matching If-None-Match with 304, free when authenticated', async () => {
    const { get, apiRecords } = inProcess();
    const first = await get(PULLS);
    expect(first.headers.etag).toMatch(/^W\/".+"$/);
    expect(rate(first)).toMatchObject({ used: 1, remaining: 4999 });
    const again = await get(PULLS, { 'if-none-match': first.headers.etag! });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(rate(again)).toMatchObject({ used: 1, remaining: 4999, resource: 'core' });
    const records = apiRecords();
    expect(records[1]).toMatchObject({
      status: 304,
      conditional: true,
      notModified: true,
      cost: 0,
      secondaryCost: 1,
    });
    expect(records[0]).toMatchObject({ conditional: false, notModified: false, cost: 1 });
  });

  it('charges an unauthenticated 304', async () => {
    const { emulator } = inProcess();
    const anon = new InProcessTransport(emulator, { remoteAddress: '10.1.1.1' });
    const first = await anon.request({ method: 'GET', path: PULLS, headers: {} });
    const again = await anon.request({
      method: 'GET',
      path: PULLS,
      headers: { 'if-none-match': first.headers.etag! },
    });
    expect(again.status).toBe(304);
    expect(rate(again)).toMatchObject({ limit: 60, used: 2, remaining: 58 });
  });

  it('gives each token its own ETag for the same resource', async () => {
    const { emulator, get } = inProcess();
    const other = new InProcessTransport(emulator, { token: emulator.admin.mintToken().token });
    const mine = await get(PULLS);
    const theirs = await other.request({ method: 'GET', path: PULLS, headers: {} });
    expect(mine.body).toBe(theirs.body);
    expect(mine.headers.etag).not.toBe(theirs.headers.etag);
    const crossed = await other.request({
      method: 'GET',
      path: PULLS,
      headers: { 'if-none-match': mine.headers.etag! },
    });
    expect(crossed.status).toBe(200);
  });

  it('changes ETags and updated_at order when state changes, and only where it changed', async () => {
    const { get, emulator, advance } = inProcess();
    const guard = `${PULLS}?state=open&sort=updated&direction=desc&per_page=1`;
    const before = await get(guard);
    expect(JSON.parse(before.body)[0].number).toBe(7);
    const pr6 = emulator.admin.findPullRequest({ repo: 'fleetbench/repo-1', number: 6 })!;
    const checks = `/repos/fleetbench/repo-1/commits/${pr6.headSha}/check-runs?per_page=1`;
    const checksBefore = await get(checks);
    await advance(5_000);
    emulator.admin.postReviewComments({ repo: 'fleetbench/repo-1', number: 6, count: 2 });
    const after = await get(guard, { 'if-none-match': before.headers.etag! });
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    const top = JSON.parse(after.body)[0];
    expect(top.number).toBe(6);
    expect(top.updated_at).toBe('2026-01-01T00:00:05Z');
    // Review comments do not touch the head commit's checks.
    expect((await get(checks, { 'if-none-match': checksBefore.headers.etag! })).status).toBe(304);
    emulator.admin.setCheckRun({ repo: 'fleetbench/repo-1', number: 6, name: 'ci', conclusion: 'failure' });
    const checksAfter = await get(checks, { 'if-none-match': checksBefore.headers.etag! });
    expect(checksAfter.status).toBe(200);
    expect(JSON.parse(checksAfter.body).check_runs[0]).toMatchObject({
      name: 'ci',
      status: 'completed',
      conclusion: 'failure',
    });
    // A finished check does not reorder pulls either (GitHub leaves updated_at alone).
    const latest = await get(guard, { 'if-none-match': after.headers.etag! });
    expect(latest.status).toBe(304);
  });

  it('derives ETags from the answer: an unchanged body keeps its ETag and is a free 304', async () => {
    const { get, post, emulator, apiRecords } = inProcess();
    // Newest-created first: a comment on PR 6 bumps the repo's pulls version but not this page.
    const page = `${PULLS}?state=open&sort=created&direction=desc&per_page=1`;
    const before = await get(page);
    expect(before.headers.etag).toMatch(/^W\/"[0-9a-z]+[0-9a-f]{32}"$/);
    expect(JSON.parse(before.body)[0].number).toBe(7);
    const pr6 = emulator.admin.findPullRequest({ repo: 'fleetbench/repo-1', number: 6 })!;
    const status = `/repos/fleetbench/repo-1/commits/${pr6.headSha}/status`;
    const statusBefore = await get(status);
    expect((await post('/repos/fleetbench/repo-1/issues/6/comments', { body: 'hi' })).status).toBe(201);
    // A check run changes the commit's version, not its combined status (statuses only).
    emulator.admin.setCheckRun({ repo: 'fleetbench/repo-1', number: 6, name: 'ci', conclusion: 'failure' });
    const after = await get(page, { 'if-none-match': before.headers.etag! });
    expect(after.status).toBe(304);
    expect(after.headers.etag).toBe(before.headers.etag);
    const statusAfter = await get(status, { 'if-none-match': statusBefore.headers.etag! });
    expect(statusAfter.status).toBe(304);
    // The same request again, now that the new version's hash is known: still 304.
    expect((await get(status, { 'if-none-match': statusBefore.headers.etag! })).status).toBe(304);
    // ...and a real change shows: a status on the commit changes the combined status.
    emulator.admin.setStatus({ repo: 'fleetbench/repo-1', number: 6, context: 'lint', state: 'failure' });
    const changed = await get(status, { 'if-none-match': statusBefore.headers.etag! });
    expect(changed.status).toBe(200);
    expect(JSON.parse(changed.body).state).toBe('failure');
    const costs = apiRecords().map((r) => [r.status, r.cost]);
    expect(costs).toEqual([
      [200, 1],
      [200, 1],
      [201, 1],
      [304, 0],
      [304, 0],
      [304, 0],
      [200, 1],
    ]);
  });

  it('matches weak, strong and listed validators', async () => {
    const { get } = inProcess();
    const etag = (await get(PULLS)).headers.etag!;
    const bare = etag.slice(2);
    expect((await get(PULLS, { 'if-none-match': bare })).status).toBe(304);
    expect((await get(PULLS, { 'if-none-match': `"nope", ${etag}` })).status).toBe(304);
    expect((await get(PULLS, { 'if-none-match': '"nope"' })).status).toBe(200);
  });
});

describe('secondary limits', () => {
  it('refuses the 101st concurrent request of a user with retry-after', async () => {
    const { emulator, clock, transport, apiRecords } = inProcess({
      latency: { rest: { medianMs: 100, p95Ms: 100 } },
    });
    const all = Promise.all(
      Array.from({ length: 101 }, () => transport.request({ method: 'GET', path: ISSUES, headers: {} })),
    );
    await clock.run();
    const responses = await all;
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    const refused = responses.find((r) => r.status === 403)!;
    // No header would tell the client otherwise, so it waits GitHub's documented minute.
    expect(refused.headers['retry-after']).toBe('60');
    expect(JSON.parse(refused.body).message).toMatch(
      /secondary rate limit: more than 100 concurrent requests/,
    );
    expect(rate(refused)).toMatchObject({ used: 100, remaining: 4900 });
    // Refused as it arrived: never counted in flight itself.
    expect(emulator.admin.quota().peakInFlight).toBe(100);
    const record = apiRecords().find((r) => r.status === 403)!;
    expect(record).toMatchObject({ limited: 'secondary', retryAfter: 60, cost: 0, secondaryCost: 0 });
    // Every request took the modelled 100 ms.
    expect(apiRecords().every((r) => Math.abs(r.dur - 100) < 1e-6)).toBe(true);
  });

  it('limits points per minute per REST endpoint (GET 1, POST 5) and says which', async () => {
    const { get, post, advance } = inProcess({ limits: { secondary: { restPointsPerMinute: 10 } } });
    for (let i = 0; i < 10; i++) expect((await get(PULLS)).status).toBe(200);
    const over = await get(PULLS);
    expect(over.status).toBe(403);
    expect(over.headers['retry-after']).toBe('60');
    expect(JSON.parse(over.body).message).toContain(
      'more than 10 points per minute for GET /repos/{owner}/{repo}/pulls',
    );
    expect(rate(over)).toMatchObject({ used: 10 });
    // Another endpoint has its own budget.
    expect((await get(ISSUES)).status).toBe(200);
    const comments = '/repos/fleetbench/repo-1/issues/1/comments';
    expect((await post(comments, { body: 'a' })).status).toBe(201);
    expect((await post(comments, { body: 'b' })).status).toBe(201);
    expect((await post(comments, { body: 'c' })).status).toBe(403);
    await advance(30_000);
    expect((await get(PULLS)).headers['retry-after']).toBe('30');
    await advance(30_000);
    expect((await get(PULLS)).status).toBe(200);
  });

  it('limits content-creating requests per minute and per hour', async () => {
    const { post, advance, apiRecords } = inProcess({
      limits: { secondary: { contentPerMinute: 2, contentPerHour: 3 } },
    });
    const comments = '/repos/fleetbench/repo-1/issues/1/comments';
    expect((await post(comments, { body: 'a' })).status).toBe(201);
    expect((await post(comments, { body: 'b' })).status).toBe(201);
    const perMinute = await post(comments, { body: 'c' });
    expect(perMinute.status).toBe(403);
    expect(JSON.parse(perMinute.body).message).toContain('more than 2 content-creating requests per minute');
    await advance(60_000);
    expect((await post(comments, { body: 'd' })).status).toBe(201);
    const perHour = await post(comments, { body: 'e' });
    expect(JSON.parse(perHour.body).message).toContain('more than 3 content-creating requests per hour');
    expect(perHour.headers['retry-after']).toBe('3540');
    expect(
      apiRecords()
        .filter((r) => r.limited === 'secondary')
        .map((r) => r.retryAfter),
    ).toEqual([60, 3540]);
  });

  it('limits GraphQL points per minute', async () => {
    const { graphql } = inProcess({ limits: { secondary: { graphqlPointsPerMinute: 2 } } });
    expect((await graphql('{ viewer { login } }')).status).toBe(200);
    expect((await graphql('{ viewer { login } }')).status).toBe(200);
    const over = await graphql('{ viewer { login } }');
    expect(over.status).toBe(403);
    expect(JSON.parse(over.body).message).toContain('more than 2 points per minute for the GraphQL API');
    expect(rate(over)).toMatchObject({ resource: 'graphql', used: 2 });
  });
});
