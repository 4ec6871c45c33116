/**
 * Milestones (docs/github-emulator.md, "What it serves"): made, listed, read, edited and deleted
 * with Octokit against a served emulator on 127.0.0.1, issues put in them with `milestone` on
 * their create and edit, the counts in every answer that embeds one. Every answer is checked
 * against GitHub's OpenAPI description by the test setup.
 */
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inProcess, serve } from './helpers/github.ts';

const Octokit = Core.plugin(restEndpointMethods);
const owner = 'fleetbench';
const repo = 'repo-1';

async function setUp() {
  const world = inProcess({ fixtures: { repos: 1, issuesPerRepo: 4, pullsPerRepo: 0 } });
  const server = await serve(world.emulator);
  const octokit = new Octokit({ baseUrl: server.url, auth: world.emulator.defaultToken });
  return { ...world, server, octokit };
}

describe('milestones', () => {
  it('made, listed by state and due date, issues put in them with their counts, edited, deleted; GitHub’s refusals', async () => {
    const { octokit, apiRecords } = await setUp();
    const later = await octokit.rest.issues.createMilestone({
      owner,
      repo,
      title: 'v2',
      due_on: '2031-01-01T00:00:00Z',
    });
    expect(later.status).toBe(201);
    expect(later.headers.location).toBe(later.data.url);
    const sooner = await octokit.rest.issues.createMilestone({
      owner,
      repo,
      title: 'v1',
      description: 'First',
      due_on: '2030-01-01T00:00:00Z',
    });
    expect([later.data.number, sooner.data.number]).toEqual([1, 2]);
    // By due date, ascending by default.
    const listed = await octokit.rest.issues.listMilestones({ owner, repo });
    expect(listed.data.map((m) => m.title)).toEqual(['v1', 'v2']);
    // An issue made in one, another put in it, one closed: the counts follow everywhere.
    const made = await octokit.rest.issues.create({
      owner,
      repo,
      title: 'In v1',
      milestone: sooner.data.number,
    });
    expect(made.data.milestone).toMatchObject({ number: 2, open_issues: 1, closed_issues: 0 });
    const before = await octokit.rest.issues.get({ owner, repo, issue_number: 1 });
    expect(before.data.milestone).toBeNull();
    await octokit.rest.issues.update({ owner, repo, issue_number: 1, milestone: sooner.data.number });
    await octokit.rest.issues.update({ owner, repo, issue_number: 1, state: 'closed' });
    const m = await octokit.rest.issues.getMilestone({ owner, repo, milestone_number: 2 });
    expect(m.data).toMatchObject({ open_issues: 1, closed_issues: 1, description: 'First' });
    // The other issue's answer changed with the counts: a conditional GET is no 304.
    const other = await octokit.rest.issues.get({ owner, repo, issue_number: made.data.number });
    expect(other.data.milestone).toMatchObject({ open_issues: 1, closed_issues: 1 });
    expect(other.headers.etag).not.toBe(made.headers.etag);
    await expect(
      octokit.rest.issues.get({
        owner,
        repo,
        issue_number: made.data.number,
        headers: { 'if-none-match': other.headers.etag },
      }),
    ).rejects.toMatchObject({ status: 304 });
    // By completeness; closed ones by state.
    const complete = await octokit.rest.issues.listMilestones({
      owner,
      repo,
      sort: 'completeness',
      direction: 'desc',
    });
    expect(complete.data.map((x) => x.title)).toEqual(['v1', 'v2']);
    await octokit.rest.issues.updateMilestone({
      owner,
      repo,
      milestone_number: 1,
      state: 'closed',
      title: 'v2.0',
    });
    expect((await octokit.rest.issues.listMilestones({ owner, repo })).data.map((x) => x.title)).toEqual([
      'v1',
    ]);
    const closed = await octokit.rest.issues.listMilestones({ owner, repo, state: 'closed' });
    expect(closed.data).toMatchObject([{ title: 'v2.0', state: 'closed' }]);
    expect(closed.data[0]?.closed_at).not.toBeNull();
    // Taken out of it with null.
    const out = await octokit.rest.issues.update({ owner, repo, issue_number: 1, milestone: null });
    expect(out.data.milestone).toBeNull();
    // Refusals: a taken title, no title, a milestone that is not there.
    await expect(octokit.rest.issues.createMilestone({ owner, repo, title: 'v1' })).rejects.toMatchObject({
      status: 422,
      response: { data: { errors: [{ resource: 'Milestone', code: 'already_exists', field: 'title' }] } },
    });
    await expect(
      octokit.request('POST /repos/{owner}/{repo}/milestones', { owner, repo } as never),
    ).rejects.toMatchObject({ status: 422 });
    await expect(
      octokit.rest.issues.create({ owner, repo, title: 'Nowhere', milestone: 99 }),
    ).rejects.toMatchObject({
      status: 422,
      response: { data: { errors: [{ resource: 'Issue', code: 'invalid', field: 'milestone' }] } },
    });
    await expect(
      octokit.rest.issues.createMilestone({ owner, repo, title: 'x'.repeat(256) }),
    ).rejects.toMatchObject({ status: 422 });
    // Deleted: its issues are in none.
    expect((await octokit.rest.issues.deleteMilestone({ owner, repo, milestone_number: 2 })).status).toBe(
      204,
    );
    await expect(
      octokit.rest.issues.getMilestone({ owner, repo, milestone_number: 2 }),
    ).rejects.toMatchObject({
      status: 404,
    });
    expect(
      (await octokit.rest.issues.get({ owner, repo, issue_number: made.data.number })).data.milestone,
    ).toBeNull();
    const routes = new Set(apiRecords().map((r) => `${r.method} ${r.route}`));
    for (const route of [
      'POST /repos/{owner}/{repo}/milestones',
      'GET /repos/{owner}/{repo}/milestones',
      'GET /repos/{owner}/{repo}/milestones/{milestone_number}',
      'PATCH /repos/{owner}/{repo}/milestones/{milestone_number}',
      'DELETE /repos/{owner}/{repo}/milestones/{milestone_number}',
    ])
      expect(routes).toContain(route);
  });

  it('property: every answer’s counts are the issues in the milestone by state, after any writes', async () => {
    const { transport, emulator } = inProcess({ fixtures: { repos: 1, issuesPerRepo: 4, pullsPerRepo: 0 } });
    const base = '/repos/fleetbench/repo-1';
    const send = async (method: string, path: string, body?: unknown) => {
      const res = await transport.request({
        method,
        path: `${base}${path}`,
        headers: {},
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect([200, 201, 204, 404, 422]).toContain(res.status);
      return res;
    };
    await send('POST', '/milestones', { title: 'a' });
    await send('POST', '/milestones', { title: 'b' });
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('put' as const),
        issue: fc.integer({ min: 1, max: 4 }),
        m: fc.constantFrom(1, 2, null),
      }),
      fc.record({
        kind: fc.constant('state' as const),
        issue: fc.integer({ min: 1, max: 4 }),
        open: fc.boolean(),
      }),
      fc.record({
        kind: fc.constant('rename' as const),
        m: fc.constantFrom(1, 2),
        title: fc.constantFrom('a', 'b', 'c'),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 10 }), async (ops) => {
        for (const o of ops) {
          if (o.kind === 'put') await send('PATCH', `/issues/${o.issue}`, { milestone: o.m });
          else if (o.kind === 'state')
            await send('PATCH', `/issues/${o.issue}`, { state: o.open ? 'open' : 'closed' });
          else await send('PATCH', `/milestones/${o.m}`, { title: o.title });
          const issues = await Promise.all(
            [1, 2, 3, 4].map(async (n) => JSON.parse((await send('GET', `/issues/${n}`)).body)),
          );
          const listed = JSON.parse((await send('GET', '/milestones?state=all')).body) as {
            number: number;
            title: string;
            open_issues: number;
            closed_issues: number;
          }[];
          expect(listed.map((m) => m.number)).toEqual([1, 2]);
          for (const m of listed) {
            const inIt = issues.filter((i) => i.milestone?.number === m.number);
            const counts = {
              open_issues: inIt.filter((i) => i.state === 'open').length,
              closed_issues: inIt.filter((i) => i.state === 'closed').length,
            };
            expect(m).toMatchObject(counts);
            for (const i of inIt) expect(i.milestone).toMatchObject({ ...counts, title: m.title });
          }
        }
      }),
      { seed: 11, numRuns: 40 },
    );
    emulator.close();
  });
});
