/**
 * Attribution by content (admin register-session / set-cycle): requests that carry no
 * fleetbench header are the session's when everything they name is that session's, and shared
 * when they name several sessions' things or none. Headers always win.
 */
import { describe, expect, it } from 'vitest';
import { inProcess } from './helpers/github.ts';

function setup() {
  const gh = inProcess({ fixtures: { repos: 1, issuesPerRepo: 4 } });
  const admin = gh.emulator.admin;
  const repo = 'fleetbench/repo-1';
  const [i1, i2] = admin.listRepos().repos[0]!.openIssues;
  admin.registerSession({ session: 's-1', repo, branch: 'fleet/s-1', issue: i1! });
  admin.registerSession({ session: 's-2', repo, branch: 'fleet/s-2', issue: i2! });
  const pr1 = admin.openPullRequest({ repo, head: 'fleet/s-1', issue: i1! });
  const pr2 = admin.openPullRequest({ repo, head: 'fleet/s-2', issue: i2! });
  return { ...gh, admin, repo, i1: i1!, pr1, pr2 };
}

const last = (records: ReturnType<ReturnType<typeof inProcess>['apiRecords']>) =>
  records.at(-1) as Record<string, unknown>;

describe('content attribution', () => {
  it('REST: a pull request, its head commit, an issue, a head filter each name one session', async () => {
    const { get, apiRecords, repo, pr1, pr2, i1 } = setup();
    await get(`/repos/${repo}/pulls/${pr1.number}`);
    expect(last(apiRecords()).session).toBe('s-1');
    await get(`/repos/${repo}/pulls/${pr2.number}/comments`);
    expect(last(apiRecords()).session).toBe('s-2');
    await get(`/repos/${repo}/commits/${pr2.headSha}/check-runs`);
    expect(last(apiRecords()).session).toBe('s-2');
    await get(`/repos/${repo}/issues/${i1}`);
    expect(last(apiRecords()).session).toBe('s-1');
    await get(`/repos/${repo}/pulls?head=fleetbench:fleet/s-2&state=open`);
    expect(last(apiRecords()).session).toBe('s-2');
    // The list of every open PR names no one session: shared.
    await get(`/repos/${repo}/pulls?state=open`);
    expect(last(apiRecords()).session).toBeUndefined();
  });

  it('GraphQL: a lookup by number or head branch is the session’s; a batch over two sessions is shared', async () => {
    const { graphql, apiRecords, pr1, pr2 } = setup();
    const one = `query PullRequestByNumber { repository(owner: "fleetbench", name: "repo-1") { pullRequest(number: ${pr1.number}) { state } } }`;
    await graphql(one);
    expect(last(apiRecords())).toMatchObject({ session: 's-1', op: 'PullRequestByNumber' });
    const byHead = `query PullRequestList { repository(owner: "fleetbench", name: "repo-1") { pullRequests(headRefName: "fleet/s-2", first: 1) { nodes { number } } } }`;
    await graphql(byHead);
    expect(last(apiRecords()).session).toBe('s-2');
    const both = `query { repository(owner: "fleetbench", name: "repo-1") { a: pullRequest(number: ${pr1.number}) { state } b: pullRequest(number: ${pr2.number}) { state } } }`;
    await graphql(both);
    expect(last(apiRecords()).session).toBeUndefined();
  });

  it('set-cycle stamps the cycle and the source; a header wins over content', async () => {
    const { get, apiRecords, admin, emulator, repo, pr1 } = setup();
    emulator.attribution.sources = { inCycle: 'lifecycle', outside: 'cli' };
    admin.setCycle({ repo, cycle: 7 });
    await get(`/repos/${repo}/pulls/${pr1.number}`);
    expect(last(apiRecords())).toMatchObject({ session: 's-1', cycle: 7, source: 'lifecycle' });
    admin.setCycle({ repo, cycle: null });
    await get(`/repos/${repo}/pulls/${pr1.number}`);
    expect(last(apiRecords())).toMatchObject({ session: 's-1', source: 'cli' });
    expect(last(apiRecords()).cycle).toBeUndefined();
    await get(`/repos/${repo}/pulls/${pr1.number}`, {
      'x-fleetbench-session': 'mine',
      'x-fleetbench-source': 'agent',
    });
    expect(last(apiRecords())).toMatchObject({ session: 'mine', source: 'agent' });
  });

  it('a malformed escape in `head=`, `ref=` or a ref path is a name as sent, never a 500', async () => {
    const { get, apiRecords, repo } = setup();
    const pulls = await get(`/repos/${repo}/pulls?head=%E0`);
    expect(pulls.status).toBe(200);
    expect(last(apiRecords()).session).toBeUndefined();
    expect((await get(`/repos/${repo}/contents/README.md?ref=%E0`)).status).toBe(404);
    // A path parameter holding `%` once decoded (`%25`): not decoded again.
    expect((await get(`/repos/${repo}/git/ref/heads/a%25E0`)).status).toBe(404);
  });

  it('is off (no attribution, nothing recorded) until a session is registered', async () => {
    const { get, apiRecords } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 2, pullsPerRepo: 1 } });
    await get('/repos/fleetbench/repo-1/pulls/3');
    expect(last(apiRecords()).session).toBeUndefined();
  });
});
