/**
 * Real clients over loopback: @octokit/core with plugin-throttling and plugin-retry (what
 * orchestrators use) and plain fetch, against the HTTP binding on a real, time-scaled clock.
 */

import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator, type GitHubEmulatorOptions } from '../src/github/index.ts';
import { readTrace, type TraceSink, TraceWriter } from '../src/trace/index.ts';
import { serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const Throttled = Octokit.plugin(throttling, retry);
const repo = { owner: 'fleetbench', repo: 'repo-1' };

async function emulatorServer(options: Partial<GitHubEmulatorOptions> & { timeScale?: number } = {}) {
  const emulator = new GitHubEmulator({
    clock: new RealClock({ timeScale: options.timeScale ?? 1 }),
    rng: new Rng(1),
    fixtures: { repos: 1, issuesPerRepo: 60, pullsPerRepo: 3 },
    latency: false,
    ...options,
  });
  const server = await serve(emulator);
  return { emulator, server };
}

interface Calls {
  rateLimit: number[];
  secondary: number[];
}

function client(baseUrl: string, auth: string, calls: Calls = { rateLimit: [], secondary: [] }) {
  return new Throttled({
    baseUrl,
    auth,
    throttle: {
      onRateLimit: (retryAfter: number, _options: unknown, _octokit: unknown, retryCount: number) => {
        calls.rateLimit.push(retryAfter);
        return retryCount < 1;
      },
      onSecondaryRateLimit: (
        retryAfter: number,
        _options: unknown,
        _octokit: unknown,
        retryCount: number,
      ) => {
        calls.secondary.push(retryAfter);
        return retryCount < 1;
      },
    },
    retry: { retryAfterBaseValue: 50 },
  });
}

describe('Octokit (core + throttling + retry) over HTTP', () => {
  it('a 304 leaves remaining unchanged (Octokit throws it; count it as a cache hit)', async () => {
    const { emulator, server } = await emulatorServer();
    const octokit = client(server.url, emulator.defaultToken);
    const first = await octokit.request('GET /repos/{owner}/{repo}/pulls', repo);
    expect(first.data.map((p: { number: number }) => p.number)).toEqual([63, 62, 61]);
    expect(first.headers['x-ratelimit-remaining']).toBe('4999');
    let hits = 0;
    for (let i = 0; i < 3; i++) {
      try {
        await octokit.request('GET /repos/{owner}/{repo}/pulls', {
          ...repo,
          headers: { 'if-none-match': first.headers.etag },
        });
      } catch (error) {
        const e = error as { status: number; response: { headers: Record<string, string> } };
        expect(e.status).toBe(304);
        expect(e.response.headers['x-ratelimit-remaining']).toBe('4999');
        expect(e.response.headers['x-ratelimit-used']).toBe('1');
        hits++;
      }
    }
    expect(hits).toBe(3);
  });

  it('gets the 403 the throttling plugin reacts to and resumes after the time-scaled reset', async () => {
    // time scale 1200: the hourly window lasts three real seconds (one second was too short for
    // four requests on a machine at load 20). At such a scale every real millisecond of an answer
    // is 1.2 s of CPU time, so the CPU-time limit, not under test here, is raised.
    const { emulator, server } = await emulatorServer({
      timeScale: 1200,
      limits: {
        primary: { user: { core: 3 } },
        secondary: {
          cpuMsPerMinute: Number.MAX_SAFE_INTEGER,
          graphqlCpuMsPerMinute: Number.MAX_SAFE_INTEGER,
        },
      },
    });
    const calls: Calls = { rateLimit: [], secondary: [] };
    const octokit = client(server.url, emulator.defaultToken, calls);
    const statuses: number[] = [];
    const records: number[] = [];
    emulator.trace = { write: (r) => r.kind === 'api' && records.push(r.status ?? 0) } satisfies TraceSink;
    for (let i = 0; i < 3; i++)
      statuses.push((await octokit.request('GET /repos/{owner}/{repo}/issues', repo)).status);
    const started = Date.now();
    const resumed = await octokit.request('GET /repos/{owner}/{repo}/issues', repo);
    const waited = Date.now() - started;
    expect(statuses).toEqual([200, 200, 200]);
    expect(records).toEqual([200, 200, 200, 403, 200]);
    expect(calls.rateLimit).toHaveLength(1);
    expect(calls.rateLimit[0]).toBeGreaterThanOrEqual(1);
    // The three-second window, x-ratelimit-reset rounded up to a second, and the plugin's extra second.
    expect(calls.rateLimit[0]).toBeLessThanOrEqual(5);
    expect(waited).toBeGreaterThanOrEqual(calls.rateLimit[0]! * 1000 - 50);
    expect(resumed.status).toBe(200);
    expect(resumed.headers['x-ratelimit-used']).toBe('1');
    expect(resumed.headers['x-ratelimit-remaining']).toBe('2');
  });

  it('honours retry-after on a secondary-limit answer', async () => {
    // time scale 60: the per-minute secondary window lasts one real second.
    const { emulator, server } = await emulatorServer({
      timeScale: 60,
      limits: { secondary: { restPointsPerMinute: 2 } },
    });
    const calls: Calls = { rateLimit: [], secondary: [] };
    const octokit = client(server.url, emulator.defaultToken, calls);
    await octokit.request('GET /repos/{owner}/{repo}/pulls', repo);
    await octokit.request('GET /repos/{owner}/{repo}/pulls', repo);
    const started = Date.now();
    const third = await octokit.request('GET /repos/{owner}/{repo}/pulls', repo);
    expect(third.status).toBe(200);
    expect(calls.secondary).toEqual([1]);
    expect(calls.rateLimit).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(emulator.stats()).toMatchObject({ requests: 4, limitedSecondary: 1 });
  });

  it('recovers with plugin-retry from an injected 503', async () => {
    const { emulator, server } = await emulatorServer();
    const statuses: number[] = [];
    // Clear the fault as soon as the first 503 is answered: the retry must then succeed.
    emulator.trace = {
      write: (r) => {
        if (r.kind !== 'api') return;
        statuses.push(r.status ?? 0);
        if (r.status === 503) emulator.admin.clearFaults();
      },
    };
    emulator.admin.injectFault({ kind: 'error', share: 1, status: 503 });
    const octokit = client(server.url, emulator.defaultToken);
    const res = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
      ...repo,
      pull_number: 61,
    });
    expect(res.status).toBe(200);
    expect(res.data.number).toBe(61);
    expect(statuses).toEqual([503, 200]);
  });

  it('walks every page by following the Link header', async () => {
    const { emulator, server } = await emulatorServer();
    const octokit = client(server.url, emulator.defaultToken);
    const seen: number[] = [];
    let url: string | undefined = `${server.url}/repos/fleetbench/repo-1/issues?state=open&per_page=7`;
    let pages = 0;
    while (url && pages < 20) {
      const res: { data: { number: number; pull_request?: unknown }[]; headers: { link?: string } } =
        await octokit.request(`GET ${url}`);
      pages++;
      seen.push(...res.data.filter((i) => !i.pull_request).map((i) => i.number));
      url = /<([^>]+)>; rel="next"/.exec(res.headers.link ?? '')?.[1];
    }
    expect(pages).toBe(9); // 63 issues and PRs, 7 per page
    expect(seen).toEqual(Array.from({ length: 60 }, (_, i) => 60 - i));
  });

  it('answers a GraphQL primary-limit breach with 200 and an error body', async () => {
    const { emulator, server } = await emulatorServer({ limits: { primary: { user: { graphql: 1 } } } });
    const plain = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
    const query = `{ repository(owner: "fleetbench", name: "repo-1") { ${[61, 62, 63]
      .map(
        (n) =>
          `p${n}: pullRequest(number: ${n}) { state reviewDecision commits(last: 1) { nodes { commit { statusCheckRollup { state } } } } }`,
      )
      .join(' ')} } rateLimit { cost remaining } }`;
    type Rollup = { commits: { nodes: { commit: { statusCheckRollup: { state: string } } }[] } };
    type GraphQLBody = {
      data: { rateLimit: unknown; repository: Record<string, Rollup> };
      errors: { type: string }[];
    };
    const ok: { status: number; data: GraphQLBody } = await plain.request('POST /graphql', { query });
    expect(ok.status).toBe(200);
    expect(ok.data.data.rateLimit).toEqual({ cost: 1, remaining: 0 });
    expect(ok.data.data.repository.p61!.commits.nodes[0]!.commit.statusCheckRollup.state).toBe('SUCCESS');
    const over: { status: number; data: GraphQLBody; headers: Record<string, unknown> } = await plain.request(
      'POST /graphql',
      { query },
    );
    expect(over.status).toBe(200);
    expect(over.data.errors[0]!.type).toBe('RATE_LIMITED');
    expect(over.headers['x-ratelimit-remaining']).toBe('0');
    expect(over.headers['x-ratelimit-resource']).toBe('graphql');
  });
});

describe('plain HTTP', () => {
  it('limits unauthenticated clients to 60 per hour by IP', async () => {
    const { server } = await emulatorServer();
    let last: Response | undefined;
    for (let i = 0; i < 60; i++) last = await fetch(`${server.url}/repos/fleetbench/repo-1`);
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
    const over = await fetch(`${server.url}/api/v3/repos/fleetbench/repo-1`);
    expect(over.status).toBe(403);
    expect(((await over.json()) as { message: string }).message).toMatch(
      /^API rate limit exceeded for 127\.0\.0\.1\./,
    );
  });

  it('records exactly one trace record per request answered under concurrent load', async () => {
    const path = join(dir, 'http.jsonl');
    const clock = new RealClock();
    const writer = new TraceWriter(path, {
      runId: 'http-test',
      tool: { name: 'fleetbench', version: 'test' },
      clock: 'real',
      seed: 1,
      scenario: { name: 'http', hash: null },
      epochMs: clock.epochMs,
      startedAt: new Date(clock.epochMs).toISOString(),
    });
    const emulator = new GitHubEmulator({
      clock,
      rng: new Rng(1),
      trace: writer,
      fixtures: { repos: 2, issuesPerRepo: 5 },
      latency: false,
    });
    const server = await serve(emulator);
    const headers = { authorization: `token ${emulator.defaultToken}` };
    let answered = 0;
    await Promise.all(
      Array.from({ length: 20 }, async (_, w) => {
        for (let i = 0; i < 15; i++) {
          const res = await fetch(`${server.url}/repos/fleetbench/repo-${(w % 2) + 1}/issues?i=${i}`, {
            headers,
          });
          await res.arrayBuffer();
          answered++;
        }
      }),
    );
    await server.close();
    writer.close();
    const { records, stats } = await readTrace(path);
    const api = records.filter((r) => r.kind === 'api');
    expect(answered).toBe(300);
    expect(api).toHaveLength(300);
    expect(stats.truncated).toBe(false);
    expect(stats.footer).toMatchObject({ kind: 'end', reason: 'completed', counts: { api: 300 } });
    expect(Math.max(...api.map((r) => r.rl!.used!))).toBe(300);
  });
});

/**
 * Documented behaviours the fidelity table (docs/github-emulator.md, "Fidelity") held only
 * in-process before: the same rules, through Octokit over HTTP.
 */
describe('documented limits through Octokit over HTTP', () => {
  /** A refused request's status and body (Octokit throws on 4xx). */
  async function refusal(call: Promise<unknown>): Promise<{ status: number; message: string }> {
    try {
      await call;
    } catch (error) {
      const e = error as { status: number; response?: { data: { message?: string } } };
      return { status: e.status, message: e.response?.data?.message ?? '' };
    }
    throw new Error('the request was not refused');
  }

  it('ETags per token: each token its own, a 304 only for its own; If-Modified-Since too', async () => {
    const { emulator, server } = await emulatorServer();
    const one = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
    const two = new Octokit({ baseUrl: server.url, auth: emulator.mintToken({}).token });
    const route = 'GET /repos/{owner}/{repo}/issues/{issue_number}';
    const a = await one.request(route, { ...repo, issue_number: 1 });
    const b = await two.request(route, { ...repo, issue_number: 1 });
    expect(a.headers.etag).not.toBe(b.headers.etag);
    const same = await refusal(
      one.request(route, { ...repo, issue_number: 1, headers: { 'if-none-match': String(a.headers.etag) } }),
    );
    expect(same.status).toBe(304);
    const other = await one.request(route, {
      ...repo,
      issue_number: 1,
      headers: { 'if-none-match': String(b.headers.etag) },
    });
    expect(other.status).toBe(200);
    const since = await refusal(
      one.request(route, {
        ...repo,
        issue_number: 1,
        headers: { 'if-modified-since': String(a.headers['last-modified']) },
      }),
    );
    expect(since.status).toBe(304);
    const rate = await one.request('GET /rate_limit');
    // Three 200s charged to the one user both tokens share; the 304s were free.
    expect(rate.data.resources.core.used).toBe(3);
  });

  it('primary limits by identity: an actions token 1,000/h per repository, an enterprise one 15,000/h', async () => {
    const { emulator, server } = await emulatorServer();
    const as = (token: string) => new Octokit({ baseUrl: server.url, auth: token });
    const actions = await as(
      emulator.mintToken({ kind: 'actions', repo: 'fleetbench/repo-1', user: 'github-actions[bot]' }).token,
    ).request('GET /repos/{owner}/{repo}', repo);
    expect(actions.headers['x-ratelimit-limit']).toBe('1000');
    const enterprise = await as(
      emulator.mintToken({ kind: 'enterprise', user: 'fleet-app[bot]' }).token,
    ).request('GET /repos/{owner}/{repo}', repo);
    expect(enterprise.headers['x-ratelimit-limit']).toBe('15000');
  });

  it('secondary: REST points per endpoint and content creation a minute, each refusal naming its limit', async () => {
    const { emulator, server } = await emulatorServer({
      limits: { secondary: { restPointsPerMinute: 10, contentPerMinute: 2 } },
    });
    const octokit = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
    for (let i = 0; i < 10; i++) await octokit.request('GET /repos/{owner}/{repo}/pulls', repo);
    const over = await refusal(octokit.request('GET /repos/{owner}/{repo}/pulls', repo));
    expect(over.status).toBe(403);
    expect(over.message).toContain('more than 10 points per minute for GET /repos/{owner}/{repo}/pulls');
    expect((await octokit.request('GET /repos/{owner}/{repo}/issues', repo)).status).toBe(200);
    const comment = (body: string) =>
      octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        ...repo,
        issue_number: 2,
        body,
      });
    await comment('a');
    await comment('b');
    const third = await refusal(comment('c'));
    expect(third.status).toBe(403);
    expect(third.message).toContain('content-creating requests per minute');
  });

  it('GraphQL: the cost formula over nested connections, the node limit, pagination bounds', async () => {
    const { emulator, server } = await emulatorServer();
    const octokit = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
    const nested = await octokit.graphql<{ rateLimit: { cost: number; nodeCount: number } }>(
      `{ repository(owner: "fleetbench", name: "repo-1") {
          pullRequests(first: 100) { nodes { reviews(first: 100) { nodes { comments(first: 10) { totalCount } } } } } }
        rateLimit { cost nodeCount } }`,
    );
    expect(nested.rateLimit).toEqual({ cost: 101, nodeCount: 110_100 });
    const tooMany = await octokit
      .graphql(
        '{ repository(owner: "fleetbench", name: "repo-1") { pullRequests(first: 100) { nodes { reviews(first: 100) { nodes { comments(first: 100) { totalCount } } } } } } }',
      )
      .then(
        () => undefined,
        (error: { errors?: { type?: string }[] }) => error.errors?.[0]?.type,
      );
    expect(tooMany).toBe('MAX_NODE_LIMIT_EXCEEDED');
    const unbounded = await octokit
      .graphql(
        '{ repository(owner: "fleetbench", name: "repo-1") { pullRequests(first: 101) { totalCount } } }',
      )
      .then(
        () => 'answered',
        (error: { errors?: { message?: string }[] }) => error.errors?.[0]?.message ?? '',
      );
    expect(unbounded).toContain('101');
  });

  it('search bounds: keywords past 256 characters and a page past 1,000 results are 422', async () => {
    const { emulator, server } = await emulatorServer();
    const octokit = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
    const long = await refusal(
      octokit.request('GET /search/issues', { q: `${'w'.repeat(257)} repo:fleetbench/repo-1` }),
    );
    expect(long.status).toBe(422);
    const deep = await refusal(
      octokit.request('GET /search/issues', { q: 'repo:fleetbench/repo-1', per_page: 100, page: 11 }),
    );
    expect(deep.status).toBe(422);
    expect(deep.message).toContain('Only the first 1000 search results are available');
  });
});
