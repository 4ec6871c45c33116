/**
 * GET /repos/{owner}/{repo}/commits (`repos.listCommits`): a branch's history as git log lists it,
 * newest first, each commit before its parents, with GitHub's filters and refusals
 * (docs/github-emulator.md, "What it serves"). Octokit against a served emulator; every answer
 * is checked against GitHub's OpenAPI description by the test setup. The order is held against
 * `git log` of a real clone.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import { describe, expect, it } from 'vitest';
import { inProcess, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const gitTool = systemTool('git', ['--version'], 'git');
// Asynchronously: the emulator serving the clone runs in this process.
const run = promisify(execFile);

const Octokit = Core.plugin(restEndpointMethods);
const owner = 'fleetbench';
const repo = 'repo-1';

async function setUp() {
  const world = inProcess({ fixtures: { repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 } });
  const server = await serve(world.emulator);
  const octokit = new Octokit({ baseUrl: server.url, auth: world.emulator.defaultToken });
  return { ...world, server, octokit };
}

describe('listing a branch’s commits', () => {
  it('newest first, each before its parents, paged, filtered by author and time; refusals as GitHub’s', async () => {
    const { octokit, advance, server } = await setUp();
    const main = await octokit.rest.repos.getBranch({ owner, repo, branch: 'main' });
    await octokit.rest.git.createRef({ owner, repo, ref: 'refs/heads/feat', sha: main.data.commit.sha });
    const made: string[] = [];
    for (let i = 1; i <= 3; i++) {
      await advance(60_000);
      const { data } = await octokit.rest.repos.createOrUpdateFileContents({
        owner,
        repo,
        branch: 'feat',
        path: `f${i}.txt`,
        message: `change ${i}`,
        content: Buffer.from(`${i}\n`).toString('base64'),
        ...(i === 3 ? { author: { name: 'Someone Else', email: 'else@example.com' } } : {}),
      });
      made.push(data.commit.sha as string);
    }
    const all = await octokit.rest.repos.listCommits({ owner, repo, sha: 'feat' });
    const shas = all.data.map((c) => c.sha);
    expect(shas.slice(0, 3)).toEqual([...made].reverse());
    expect(shas.at(-1)).toBe(main.data.commit.sha);
    for (const [i, commit] of all.data.entries())
      for (const parent of commit.parents) expect(shas.indexOf(parent.sha)).toBeGreaterThan(i);
    // git log of a real clone lists the same history in the same order.
    if (!gitTool.skip) {
      gitTool.require();
      const into = join(scratchDir('fleetbench-commits-'), 'clone');
      await run('git', ['clone', '--quiet', '--branch', 'feat', `${server.url}/${owner}/${repo}`, into]);
      const log = (await run('git', ['-C', into, 'log', '--format=%H'])).stdout.trim().split('\n');
      expect(shas).toEqual(log);
    }
    // The default branch when no sha is given: main's history, not feat's.
    const onMain = await octokit.rest.repos.listCommits({ owner, repo });
    expect(onMain.data[0]?.sha).toBe(main.data.commit.sha);
    // Paged, with GitHub's Link header.
    const first = await octokit.rest.repos.listCommits({ owner, repo, sha: 'feat', per_page: 2 });
    expect(first.data.map((c) => c.sha)).toEqual(shas.slice(0, 2));
    expect(first.headers.link).toMatch(/rel="next"/);
    // By author (an email, or a login), and by time.
    const byElse = await octokit.rest.repos.listCommits({
      owner,
      repo,
      sha: 'feat',
      author: 'else@example.com',
    });
    expect(byElse.data.map((c) => c.sha)).toEqual([made[2]]);
    const since = all.data[1]?.commit.committer?.date as string;
    const recent = await octokit.rest.repos.listCommits({ owner, repo, sha: 'feat', since });
    expect(recent.data.map((c) => c.sha)).toEqual(shas.slice(0, 2));
    const until = await octokit.rest.repos.listCommits({ owner, repo, sha: 'feat', until: since });
    expect(until.data.map((c) => c.sha)).toEqual(shas.slice(1));
    // A conditional GET of an unchanged list is a 304 (Octokit throws on it: a cache hit).
    await expect(
      octokit.rest.repos.listCommits({
        owner,
        repo,
        sha: 'feat',
        headers: { 'if-none-match': all.headers.etag },
      }),
    ).rejects.toMatchObject({ status: 304 });
    // Refusals.
    await expect(
      octokit.rest.repos.listCommits({ owner, repo, sha: 'no-such-branch' }),
    ).rejects.toMatchObject({
      status: 404,
    });
    await expect(
      octokit.rest.repos.listCommits({ owner, repo, sha: 'feat', path: 'f1.txt' }),
    ).rejects.toMatchObject({
      status: 400,
    });
    await expect(
      octokit.rest.repos.listCommits({ owner, repo, since: 'yesterday-ish' }),
    ).rejects.toMatchObject({
      status: 400,
    });
  });
});
