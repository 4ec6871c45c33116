/**
 * What a control plane reads of a repository as a whole and of an organization
 * (docs/github-emulator.md, "What it serves"): every pull request's review comments and every
 * issue's events in one list, an organization, contributors, languages, topics, and the default
 * branch's protection. Octokit against a served emulator; every answer is checked against
 * GitHub's OpenAPI description by the test setup.
 */
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inProcess, serve, servedOrg } from './helpers/github.ts';

const Octokit = Core.plugin(restEndpointMethods);
type Client = InstanceType<typeof Octokit>;
const owner = 'fleetbench';
const repo = 'repo-1';

async function setUp() {
  const world = inProcess({ fixtures: { repos: 1, issuesPerRepo: 4, pullsPerRepo: 2 } });
  const server = await serve(world.emulator);
  const octokit = new Octokit({ baseUrl: server.url, auth: world.emulator.defaultToken });
  const pulls = (await octokit.rest.pulls.list({ owner, repo })).data.map((p) => ({
    number: p.number,
    sha: p.head.sha,
  }));
  return { ...world, server, octokit, pulls };
}

/** Every page of a list, following `page` until a short one, at most 200 pages. */
async function allPages<T>(
  fetchPage: (page: number) => Promise<{ data: T[] }>,
  perPage: number,
): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; page <= 200; page++) {
    const { data } = await fetchPage(page);
    out.push(...data);
    if (data.length < perPage) return out;
  }
  throw new Error('more than 200 pages');
}

async function comment(octokit: Client, pull: { number: number; sha: string }, body: string) {
  const { data } = await octokit.rest.pulls.createReviewComment({
    owner,
    repo,
    pull_number: pull.number,
    commit_id: pull.sha,
    path: 'src/index.ts',
    line: 1,
    body,
  });
  return Number(data.id);
}

describe('repository-wide review comments and issue events', () => {
  it('lists every pull request’s review comments: by id, sorted, since, paged, conditional, charged and traced', async () => {
    const { octokit, pulls, advance, apiRecords } = await setUp();
    const made: number[] = [];
    for (let i = 0; i < 5; i++) {
      await advance(60_000);
      made.push(await comment(octokit, pulls[i % 2]!, `note ${i}`));
    }
    const list = await octokit.rest.pulls.listReviewCommentsForRepo({ owner, repo });
    expect(list.data.map((c) => c.id)).toEqual(made);
    expect(new Set(list.data.map((c) => c.pull_request_url.split('/').at(-1)))).toEqual(
      new Set(pulls.map((p) => String(p.number))),
    );
    const desc = await octokit.rest.pulls.listReviewCommentsForRepo({
      owner,
      repo,
      sort: 'updated',
      direction: 'desc',
    });
    expect(desc.data.map((c) => c.id)).toEqual([...made].reverse());
    // Since the third comment's time: it and the later ones.
    const since = list.data[2]!.updated_at;
    const recent = await octokit.rest.pulls.listReviewCommentsForRepo({ owner, repo, since });
    expect(recent.data.map((c) => c.id)).toEqual(made.slice(2));
    // Paged: two a page, each once, in order; the Link header names the next.
    const first = await octokit.rest.pulls.listReviewCommentsForRepo({ owner, repo, per_page: 2 });
    expect(first.headers.link).toMatch(/rel="next"/);
    const paged = await allPages(
      (page) => octokit.rest.pulls.listReviewCommentsForRepo({ owner, repo, per_page: 2, page }),
      2,
    );
    expect(paged.map((c) => c.id)).toEqual(made);
    // Conditional: 304 until a comment is added anywhere in the repository.
    const etag = list.headers.etag!;
    await expect(
      octokit.rest.pulls.listReviewCommentsForRepo({ owner, repo, headers: { 'if-none-match': etag } }),
    ).rejects.toMatchObject({ status: 304 });
    made.push(await comment(octokit, pulls[1]!, 'one more'));
    const after = await octokit.rest.pulls.listReviewCommentsForRepo({
      owner,
      repo,
      headers: { 'if-none-match': etag },
    });
    expect(after.data.map((c) => c.id)).toEqual(made);
    const records = apiRecords().filter((r) => r.route === '/repos/{owner}/{repo}/pulls/comments');
    expect(records.length).toBeGreaterThanOrEqual(8);
    expect(records.every((r) => r.repo === `${owner}/${repo}` && r.resource === 'core')).toBe(true);
    expect(records.some((r) => r.status === 200 && r.cost === 1)).toBe(true);
    await expect(
      octokit.rest.pulls.listReviewCommentsForRepo({ owner, repo: 'no-such-repo' }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('lists every issue’s events newest first, each with its issue, and reads one by id', async () => {
    const { octokit, advance, pulls } = await setUp();
    await advance(60_000);
    await octokit.rest.issues.addLabels({ owner, repo, issue_number: 1, labels: ['agent:working'] });
    await advance(60_000);
    await octokit.rest.issues.update({ owner, repo, issue_number: 2, state: 'closed' });
    await advance(60_000);
    await octokit.rest.issues.update({ owner, repo, issue_number: pulls[0]!.number, title: 'Renamed' });
    const { data } = await octokit.rest.issues.listEventsForRepo({ owner, repo, per_page: 100 });
    expect(data.slice(0, 3).map((e) => [e.event, e.issue?.number])).toEqual([
      ['renamed', pulls[0]!.number],
      ['closed', 2],
      ['labeled', 1],
    ]);
    // The union of the issues' own lists, newest first.
    const perIssue: (number | bigint)[] = [];
    for (let n = 1; n <= 6; n++)
      perIssue.push(
        ...(await octokit.rest.issues.listEvents({ owner, repo, issue_number: n, per_page: 100 })).data.map(
          (e) => e.id,
        ),
      );
    expect(new Set(data.map((e) => e.id))).toEqual(new Set(perIssue));
    for (let i = 1; i < data.length; i++)
      expect(Date.parse(data[i - 1]!.created_at)).toBeGreaterThanOrEqual(Date.parse(data[i]!.created_at));
    const one = await octokit.rest.issues.getEvent({ owner, repo, event_id: Number(data[1]!.id) });
    expect(one.data).toEqual(data[1]);
    await expect(octokit.rest.issues.getEvent({ owner, repo, event_id: 999_999_999 })).rejects.toMatchObject({
      status: 404,
    });
    // Conditional: 304 until an issue changes.
    const listed = await octokit.rest.issues.listEventsForRepo({ owner, repo });
    await expect(
      octokit.rest.issues.listEventsForRepo({
        owner,
        repo,
        headers: { 'if-none-match': listed.headers.etag },
      }),
    ).rejects.toMatchObject({ status: 304 });
    await octokit.rest.issues.update({ owner, repo, issue_number: 2, state: 'open' });
    const moved = await octokit.rest.issues.listEventsForRepo({
      owner,
      repo,
      headers: { 'if-none-match': listed.headers.etag },
    });
    expect(moved.data[0]).toMatchObject({ event: 'reopened', issue: { number: 2 } });
  });

  it('paging either list covers each item once, in the unpaged order, whatever the page size (property)', async () => {
    const { octokit, pulls } = await setUp();
    let note = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 4 })), { minLength: 0, maxLength: 4 }),
        fc.integer({ min: 1, max: 7 }),
        async (writes, perPage) => {
          for (const [onPull, issue] of writes)
            if (onPull) await comment(octokit, pulls[issue % 2]!, `note ${note++}`);
            else
              await octokit.rest.issues.addLabels({
                owner,
                repo,
                issue_number: issue,
                labels: [`l${note++}`],
              });
          const comments = (
            await octokit.rest.pulls.listReviewCommentsForRepo({ owner, repo, per_page: 100 })
          ).data;
          const pagedComments = await allPages(
            (page) => octokit.rest.pulls.listReviewCommentsForRepo({ owner, repo, per_page: perPage, page }),
            perPage,
          );
          expect(pagedComments.map((c) => c.id)).toEqual(comments.map((c) => c.id));
          const events = (await octokit.rest.issues.listEventsForRepo({ owner, repo, per_page: 100 })).data;
          const pagedEvents = await allPages(
            (page) => octokit.rest.issues.listEventsForRepo({ owner, repo, per_page: perPage, page }),
            perPage,
          );
          expect(pagedEvents.map((e) => e.id)).toEqual(events.map((e) => e.id));
          expect(new Set(pagedEvents.map((e) => e.id)).size).toBe(pagedEvents.length);
        },
      ),
      { numRuns: 12 },
    );
  }, 60_000);
});

describe('an organization, contributors, languages and topics', () => {
  it('GET /orgs/{org}: the public fields to anyone, the owner’s to its members; 404 for a user or no one', async () => {
    const { alice, mallory } = await servedOrg([
      { owner: 'acme', name: 'app' },
      { owner: 'acme', name: 'secret', private: true },
    ]);
    const seen = (await alice.rest.orgs.get({ org: 'acme' })).data;
    expect(seen).toMatchObject({
      login: 'acme',
      type: 'Organization',
      public_repos: 1,
      total_private_repos: 1,
    });
    const outside = (await mallory.rest.orgs.get({ org: 'acme' })).data;
    expect(outside).toMatchObject({ login: 'acme', public_repos: 1 });
    expect(outside).not.toHaveProperty('total_private_repos');
    await expect(alice.rest.orgs.get({ org: 'alice' })).rejects.toMatchObject({ status: 404 });
    await expect(alice.rest.orgs.get({ org: 'nobody-here' })).rejects.toMatchObject({ status: 404 });
  });

  it('contributors from the default branch’s authors, languages from its files, topics stored and validated', async () => {
    const { octokit, advance } = await setUp();
    const write = async (path: string, content: string, author?: { name: string; email: string }) => {
      await advance(60_000);
      await octokit.rest.repos.createOrUpdateFileContents({
        owner,
        repo,
        path,
        message: `add ${path}`,
        content: Buffer.from(content).toString('base64'),
        ...(author ? { author, committer: author } : {}),
      });
    };
    // A README alone: no language GitHub counts.
    expect((await octokit.rest.repos.listLanguages({ owner, repo })).data).toEqual({});
    const before = (await octokit.rest.repos.listContributors({ owner, repo })).data;
    await write('src/a.ts', 'x'.repeat(300));
    await write('src/b.ts', 'y'.repeat(100));
    await write('tool.py', 'z'.repeat(50), { name: 'Someone Else', email: 'else@example.com' });
    await write('notes.md', 'prose');
    expect((await octokit.rest.repos.listLanguages({ owner, repo })).data).toEqual({
      TypeScript: 400,
      Python: 50,
    });
    const contributors = (await octokit.rest.repos.listContributors({ owner, repo })).data;
    const agent = contributors.find((c) => c.login === 'fleet-agent');
    const agentBefore = before.find((c) => c.login === 'fleet-agent')?.contributions ?? 0;
    expect(agent?.contributions).toBe(agentBefore + 3);
    expect(contributors.some((c) => c.type === 'Anonymous')).toBe(false);
    for (let i = 1; i < contributors.length; i++)
      expect(contributors[i - 1]!.contributions).toBeGreaterThanOrEqual(contributors[i]!.contributions);
    const anon = (await octokit.rest.repos.listContributors({ owner, repo, anon: '1' })).data;
    expect(anon.find((c) => c.type === 'Anonymous')).toMatchObject({
      email: 'else@example.com',
      name: 'Someone Else',
      contributions: 1,
    });

    expect((await octokit.rest.repos.getAllTopics({ owner, repo })).data).toEqual({ names: [] });
    const set = await octokit.rest.repos.replaceAllTopics({
      owner,
      repo,
      names: ['Agents', 'ci', 'ci', 'go-1'],
    });
    expect(set.data.names).toEqual(['agents', 'ci', 'go-1']);
    expect((await octokit.rest.repos.getAllTopics({ owner, repo })).data.names).toEqual([
      'agents',
      'ci',
      'go-1',
    ]);
    expect((await octokit.rest.repos.get({ owner, repo })).data.topics).toEqual(['agents', 'ci', 'go-1']);
    for (const names of [
      ['has space'],
      ['-leading'],
      ['x'.repeat(51)],
      Array.from({ length: 21 }, (_, i) => `t${i}`),
    ])
      await expect(octokit.rest.repos.replaceAllTopics({ owner, repo, names })).rejects.toMatchObject({
        status: 422,
      });
    await expect(
      octokit.request('PUT /repos/{owner}/{repo}/topics', { owner, repo, names: 'ci' as never }),
    ).rejects.toMatchObject({ status: 422 });
    // Nothing refused was written; an empty list clears them.
    expect((await octokit.rest.repos.getAllTopics({ owner, repo })).data.names).toEqual([
      'agents',
      'ci',
      'go-1',
    ]);
    expect((await octokit.rest.repos.replaceAllTopics({ owner, repo, names: [] })).data.names).toEqual([]);
  });
});

describe('branch protection', () => {
  it('the default branch requires approving reviews: its protection to admins, `protected` on the branch, no rulesets', async () => {
    const { emulator } = inProcess({
      fixtures: {
        default_user: 'alice',
        users: [{ login: 'alice' }, { login: 'mallory' }],
        repos: [
          {
            owner: 'acme',
            name: 'app',
            required_reviews: 2,
            collaborators: [
              { login: 'alice', role_name: 'admin' },
              { login: 'mallory', role_name: 'write' },
            ],
          },
          {
            owner: 'acme',
            name: 'loose',
            required_reviews: 0,
            collaborators: [{ login: 'alice', role_name: 'admin' }],
          },
        ],
      },
    });
    const server = await serve(emulator);
    const alice = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
    const mallory = new Octokit({
      baseUrl: server.url,
      auth: emulator.tokens.mint({ user: 'mallory' }).token,
    });
    const at = { owner: 'acme', repo: 'app' };
    const main = await alice.rest.repos.getBranch({ ...at, branch: 'main' });
    expect(main.data).toMatchObject({ protected: true, protection: { enabled: true } });
    for (const branch of ['feat', 'x/protection'])
      await alice.rest.git.createRef({ ...at, ref: `refs/heads/${branch}`, sha: main.data.commit.sha });
    const protection = await alice.rest.repos.getBranchProtection({ ...at, branch: 'main' });
    expect(protection.data.required_pull_request_reviews?.required_approving_review_count).toBe(2);
    expect(protection.data.required_status_checks).toBeUndefined();
    expect(protection.data.enforce_admins?.enabled).toBe(false);
    await expect(alice.rest.repos.getBranchProtection({ ...at, branch: 'feat' })).rejects.toMatchObject({
      status: 404,
      response: { data: { message: 'Branch not protected' } },
    });
    await expect(alice.rest.repos.getBranchProtection({ ...at, branch: 'nope' })).rejects.toMatchObject({
      status: 404,
      response: { data: { message: 'Branch not found' } },
    });
    // Not an admin: as GitHub answers what a token may not see.
    await expect(mallory.rest.repos.getBranchProtection({ ...at, branch: 'main' })).rejects.toMatchObject({
      status: 404,
      response: { data: { message: 'Not Found' } },
    });
    // A branch whose name ends in /protection is still a branch (its slash encoded, as Octokit sends it).
    expect((await alice.rest.repos.getBranch({ ...at, branch: 'x/protection' })).data).toMatchObject({
      name: 'x/protection',
      protected: false,
    });
    expect((await alice.rest.repos.getBranch({ ...at, branch: 'feat' })).data.protected).toBe(false);
    const listed = (await alice.rest.repos.listBranches(at)).data;
    expect(listed.map((b) => [b.name, b.protected])).toEqual([
      ['feat', false],
      ['main', true],
      ['x/protection', false],
    ]);
    // Without required reviews nothing is protected.
    const loose = { owner: 'acme', repo: 'loose' };
    expect((await alice.rest.repos.getBranch({ ...loose, branch: 'main' })).data.protected).toBe(false);
    await expect(alice.rest.repos.getBranchProtection({ ...loose, branch: 'main' })).rejects.toMatchObject({
      status: 404,
      response: { data: { message: 'Branch not protected' } },
    });
    // Rulesets: none, for any branch name.
    expect((await alice.rest.repos.getBranchRules({ ...at, branch: 'main' })).data).toEqual([]);
    expect((await alice.rest.repos.getBranchRules({ ...at, branch: 'never/made' })).data).toEqual([]);
  });
});
