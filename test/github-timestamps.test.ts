/**
 * Timestamps that move as on GitHub, and the validators that follow them, in-process under a
 * VirtualClock: a push moves the repository's pushed_at, so the ETag of every
 * representation that embeds the repository object (each pull request's head.repo/base.repo,
 * the repository, a combined status) changes, and no other; Last-Modified on single objects
 * and If-Modified-Since answered 304 (free when authenticated) until the object changes; and,
 * through the real `github serve`, a large generated world whose every date is before the
 * server's clock, so a push moves pushed_at forward (issue 38).
 */
import { describe, expect, it } from 'vitest';
import { inProcess } from './helpers/github.ts';
import { startCliServer } from './helpers/serve.ts';

const REPO = '/repos/fleetbench/repo-1';

describe('a push moves pushed_at', () => {
  it('changes the ETags of what embeds the repository, and of nothing else', async () => {
    const h = inProcess({ fixtures: { repos: 2, issuesPerRepo: 5, pullsPerRepo: 3 } });
    const paths = {
      otherPull: `${REPO}/pulls/7`,
      pulls: `${REPO}/pulls?state=open`,
      repo: REPO,
      status: `${REPO}/commits/agent%2Fissue-2/status`,
      issue: `${REPO}/issues/1`,
      issues: `${REPO}/issues?state=open`,
      otherRepoPulls: '/repos/fleetbench/repo-2/pulls',
      comments: `${REPO}/issues/7/comments`,
    };
    const etags = async () =>
      Object.fromEntries(
        await Promise.all(Object.entries(paths).map(async ([k, p]) => [k, (await h.get(p)).headers.etag])),
      ) as Record<keyof typeof paths, string>;
    const before = await etags();
    const repoBefore = JSON.parse((await h.get(REPO)).body);
    const pullBefore = JSON.parse((await h.get(paths.otherPull)).body);
    await h.advance(90_000);
    // A push to pull request 6 (branch agent/issue-1): not to 7.
    h.emulator.admin.pushCommit({ repo: 'fleetbench/repo-1', number: 6 });
    const after = await etags();
    const repoAfter = JSON.parse((await h.get(REPO)).body);
    expect(repoAfter.pushed_at).not.toBe(repoBefore.pushed_at);
    expect(repoAfter.pushed_at).toBe('2026-01-01T00:01:30Z');
    // A push is not an update of the repository object (GitHub answers updated_at < pushed_at).
    expect(repoAfter.updated_at).toBe(repoBefore.updated_at);
    expect(Date.parse((await h.get(REPO)).headers['last-modified']!)).toBe(Date.parse(repoAfter.pushed_at));
    const pullAfter = JSON.parse((await h.get(paths.otherPull)).body);
    expect(pullAfter.head.repo.pushed_at).toBe('2026-01-01T00:01:30Z');
    expect(pullAfter.base.repo.pushed_at).toBe('2026-01-01T00:01:30Z');
    // Pull request 7 itself did not change: its updated_at stays.
    expect(pullAfter.updated_at).toBe(pullBefore.updated_at);
    for (const etag of Object.values(after)) expect(etag).toMatch(/^W\//);
    const changed = (Object.keys(paths) as (keyof typeof paths)[]).filter((k) => before[k] !== after[k]);
    // The issues list changed because pull request 6 is in it (its updated_at moved); issue 1,
    // the comments of 7 and the other repository's pulls embed no repository object of this one.
    expect(changed.sort()).toEqual(['issues', 'otherPull', 'pulls', 'repo', 'status']);
  });

  it('also on a merge (the base branch moves) and a pushed branch, not on a comment or a check run', async () => {
    const h = inProcess();
    const pushedAt = async () => JSON.parse((await h.get(REPO)).body).pushed_at as string;
    const at0 = await pushedAt();
    await h.advance(60_000);
    h.emulator.admin.postIssueComment({ repo: 'fleetbench/repo-1', number: 6 });
    h.emulator.admin.setCheckRun({ repo: 'fleetbench/repo-1', number: 6, conclusion: 'failure' });
    expect(await pushedAt()).toBe(at0);
    h.emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'wip' });
    const at1 = await pushedAt();
    expect(at1).toBe('2026-01-01T00:01:00Z');
    await h.advance(60_000);
    h.emulator.admin.mergePullRequest({ repo: 'fleetbench/repo-1', number: 7 });
    expect(await pushedAt()).toBe('2026-01-01T00:02:00Z');
  });
});

describe('Last-Modified and If-Modified-Since', () => {
  it('answers 304 (free) while the object has not changed since, 200 once it has', async () => {
    const h = inProcess();
    const first = await h.get(`${REPO}/issues/1`);
    const lastModified = first.headers['last-modified']!;
    expect(lastModified).toMatch(/^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$/);
    expect(Date.parse(lastModified)).toBe(Date.parse(JSON.parse(first.body).updated_at));
    const cached = await h.get(`${REPO}/issues/1`, { 'if-modified-since': lastModified });
    expect(cached.status).toBe(304);
    expect(cached.body).toBe('');
    expect(cached.headers['last-modified']).toBe(lastModified);
    await h.advance(5_000);
    h.emulator.admin.postIssueComment({ repo: 'fleetbench/repo-1', number: 1 });
    const fresh = await h.get(`${REPO}/issues/1`, { 'if-modified-since': lastModified });
    expect(fresh.status).toBe(200);
    expect(Date.parse(fresh.headers['last-modified']!)).toBe(Date.parse('2026-01-01T00:00:05Z'));
    // If-None-Match wins over If-Modified-Since (HTTP's rule): a stale ETag gets the body.
    const both = await h.get(`${REPO}/issues/1`, {
      'if-none-match': first.headers.etag!,
      'if-modified-since': fresh.headers['last-modified']!,
    });
    expect(both.status).toBe(200);
    // Single objects carry it (repository, pull request, user); lists do not.
    expect((await h.get(REPO)).headers['last-modified']).toBeDefined();
    expect((await h.get(`${REPO}/pulls/6`)).headers['last-modified']).toBeDefined();
    expect((await h.get('/user')).headers['last-modified']).toBeDefined();
    expect((await h.get(`${REPO}/issues`)).headers['last-modified']).toBeUndefined();
    const records = h.apiRecords();
    expect(records.slice(0, 4).map((r) => [r.status, r.conditional, r.notModified, r.cost])).toEqual([
      [200, false, false, 1],
      [304, true, true, 0],
      [200, true, false, 1],
      [200, true, false, 1],
    ]);
  });

  it('an unauthenticated If-Modified-Since 304 is charged, as any unauthenticated 304', async () => {
    const h = inProcess();
    const anonymous = { method: 'GET', headers: {} as Record<string, string>, remoteAddress: '10.0.0.9' };
    const first = await h.emulator.handle({ ...anonymous, path: REPO });
    const again = await h.emulator.handle({
      ...anonymous,
      path: REPO,
      headers: { 'if-modified-since': first.headers['last-modified']! },
    });
    expect(again.status).toBe(304);
    expect(again.headers['x-ratelimit-used']).toBe('2');
  });
});

describe('github serve --issues-per-repo 1200: the world keeps time', () => {
  it('no timestamp after the server’s Date; a push moves pushed_at forward and a conditional request after it gets 200', async () => {
    const server = await startCliServer<{ url: string; token: string; adminToken: string }>([
      'github',
      'serve',
      '--repos',
      '2',
      '--issues-per-repo',
      '1200',
      '--pulls-per-repo',
      '30',
    ]);
    try {
      const { url, token, adminToken } = server.info;
      const auth = { authorization: `token ${token}` };
      const get = async (path: string, headers: Record<string, string> = {}) => {
        const res = await fetch(`${url}${path}`, { headers: { ...auth, ...headers } });
        return { status: res.status, headers: res.headers, body: await res.text() };
      };
      // Every date the world shows, against the answer's own Date (whole seconds).
      const notAfterDate = (res: { headers: Headers; body: string }) => {
        const date = Date.parse(res.headers.get('date')!);
        const stamps = [...res.body.matchAll(/"(?:\w+_at)":"([^"]+)"/g)].map((m) => m[1]!);
        expect(stamps.length).toBeGreaterThan(0);
        for (const stamp of stamps) expect(Date.parse(stamp), stamp).toBeLessThanOrEqual(date);
      };
      for (const repo of ['repo-1', 'repo-2']) {
        notAfterDate(await get(`/repos/fleetbench/${repo}`));
        // The newest objects of each repository: issues, then pull requests, created last.
        notAfterDate(
          await get(`/repos/fleetbench/${repo}/issues?state=all&sort=created&direction=desc&per_page=100`),
        );
        notAfterDate(await get(`/repos/fleetbench/${repo}/pulls?state=all&per_page=100`));
      }
      const before = await get('/repos/fleetbench/repo-2');
      const lastModified = before.headers.get('last-modified')!;
      expect(Date.parse(lastModified)).toBeLessThanOrEqual(Date.parse(before.headers.get('date')!));
      expect((await get('/repos/fleetbench/repo-2', { 'if-modified-since': lastModified })).status).toBe(304);
      const pushed = await fetch(`${url}/_fleetbench/push-branch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ repo: 'fleetbench/repo-2', branch: 'agent/new-work' }),
      });
      expect(pushed.status).toBe(200);
      const after = await get('/repos/fleetbench/repo-2', { 'if-modified-since': lastModified });
      expect(after.status).toBe(200);
      notAfterDate(after);
      const pushedAt = (res: { body: string }) => Date.parse(JSON.parse(res.body).pushed_at);
      expect(pushedAt(after)).toBeGreaterThan(pushedAt(before));
    } finally {
      await server.stop();
    }
  }, 120_000);
});
