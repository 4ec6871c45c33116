/**
 * Releases, a repository's README, and GitHub's meta and zen (docs/github-emulator.md,
 * "Releases" and "What it serves"): what a control plane reads and writes to publish its work.
 * Octokit against a served emulator on 127.0.0.1; every answer is checked against GitHub's
 * OpenAPI description by the test setup. A release's tag is held against `git ls-remote` of the
 * served repository.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inProcess, serve } from './helpers/github.ts';
import { systemTool } from './helpers/tools.ts';

const gitTool = systemTool('git', ['--version'], 'git');
// Asynchronously: the emulator serving the repository runs in this process.
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

const text = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');

describe("a repository's README", () => {
  it('the root’s by default, any case and extension, at a ref, in a directory; 404 when there is none', async () => {
    const { octokit, emulator } = await setUp();
    // The repository's first commit has README.md.
    const root = await octokit.rest.repos.getReadme({ owner, repo });
    expect(root.data.name).toBe('README.md');
    expect(root.data.path).toBe('README.md');
    expect(text(root.data.content)).toBe(emulator.state.repo(`${owner}/${repo}`).readme);
    // A branch where the README is `docs/readme.markdown` and the root's is gone.
    const main = await octokit.rest.repos.getBranch({ owner, repo, branch: 'main' });
    await octokit.rest.git.createRef({ owner, repo, ref: 'refs/heads/docs', sha: main.data.commit.sha });
    await octokit.rest.repos.createOrUpdateFileContents({
      owner,
      repo,
      branch: 'docs',
      path: 'docs/readme.markdown',
      message: 'Docs readme',
      content: Buffer.from('in docs\n').toString('base64'),
    });
    await octokit.rest.repos.createOrUpdateFileContents({
      owner,
      repo,
      branch: 'docs',
      path: 'docs/READMEish.txt',
      message: 'Not a readme',
      content: Buffer.from('no\n').toString('base64'),
    });
    const inDir = await octokit.rest.repos.getReadmeInDirectory({ owner, repo, dir: 'docs', ref: 'docs' });
    expect(inDir.data.path).toBe('docs/readme.markdown');
    expect(text(inDir.data.content)).toBe('in docs\n');
    // The same answer the contents route gives for that path.
    const viaContents = await octokit.rest.repos.getContent({
      owner,
      repo,
      path: 'docs/readme.markdown',
      ref: 'docs',
    });
    expect(viaContents.data).toEqual(inDir.data);
    const readme = await octokit.rest.repos.getContent({ owner, repo, path: 'README.md', ref: 'docs' });
    await octokit.rest.repos.deleteFile({
      owner,
      repo,
      branch: 'docs',
      path: 'README.md',
      message: 'No root readme',
      sha: (readme.data as { sha: string }).sha,
    });
    await expect(octokit.rest.repos.getReadme({ owner, repo, ref: 'docs' })).rejects.toMatchObject({
      status: 404,
    });
    // Main still has its own.
    expect((await octokit.rest.repos.getReadme({ owner, repo, ref: 'main' })).data.name).toBe('README.md');
    await expect(
      octokit.rest.repos.getReadmeInDirectory({ owner, repo, dir: 'nowhere', ref: 'docs' }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(octokit.rest.repos.getReadme({ owner, repo, ref: 'no-such-ref' })).rejects.toMatchObject({
      status: 404,
    });
    // A conditional GET of an unchanged README is a 304.
    await expect(
      octokit.rest.repos.getReadme({ owner, repo, headers: { 'if-none-match': root.headers.etag } }),
    ).rejects.toMatchObject({ status: 304 });
  });
});

describe('releases', () => {
  it('made with their tag, listed newest first, the latest, by tag, edited, deleted; GitHub’s refusals', async () => {
    const { octokit, emulator, server, apiRecords } = await setUp();
    const state = emulator.state.repo(`${owner}/${repo}`);
    const main = state.branches.get('main')!;
    // A release of a tag that does not exist makes it, at the default branch.
    const first = await octokit.rest.repos.createRelease({
      owner,
      repo,
      tag_name: 'v1.0.0',
      name: 'One',
      body: 'First release',
    });
    expect(first.status).toBe(201);
    expect(first.headers.location).toBe(first.data.url);
    expect(first.data).toMatchObject({ tag_name: 'v1.0.0', target_commitish: 'main', draft: false });
    expect(first.data.published_at).not.toBeNull();
    expect(state.tags.get('v1.0.0')).toBe(main);
    // At a target_commitish given as a branch.
    const feat = await octokit.rest.repos.createOrUpdateFileContents({
      owner,
      repo,
      path: 'feature.txt',
      message: 'Feature',
      content: Buffer.from('f\n').toString('base64'),
    });
    const second = await octokit.rest.repos.createRelease({
      owner,
      repo,
      tag_name: 'v1.1.0-rc.1',
      target_commitish: 'main',
      prerelease: true,
    });
    expect(state.tags.get('v1.1.0-rc.1')).toBe(feat.data.commit.sha);
    // A draft makes no tag until it is published.
    const draft = await octokit.rest.repos.createRelease({ owner, repo, tag_name: 'v2.0.0', draft: true });
    expect(draft.data.published_at).toBeNull();
    expect(state.tags.has('v2.0.0')).toBe(false);
    // Someone without push access sees no draft.
    emulator.state.ensureUser('outsider');
    const outsider = new Octokit({
      baseUrl: server.url,
      auth: emulator.tokens.mint({ user: 'outsider' }).token,
    });
    expect((await outsider.rest.repos.listReleases({ owner, repo })).data.map((r) => r.tag_name)).toEqual([
      'v1.1.0-rc.1',
      'v1.0.0',
    ]);
    await expect(
      outsider.rest.repos.getRelease({ owner, repo, release_id: draft.data.id }),
    ).rejects.toMatchObject({ status: 404 });
    // Newest first, for those who may push.
    const listed = await octokit.rest.repos.listReleases({ owner, repo });
    expect(listed.data.map((r) => r.id)).toEqual([draft.data.id, second.data.id, first.data.id]);
    // The latest: neither draft nor prerelease.
    expect((await octokit.rest.repos.getLatestRelease({ owner, repo })).data.id).toBe(first.data.id);
    expect((await octokit.rest.repos.getReleaseByTag({ owner, repo, tag: 'v1.0.0' })).data.id).toBe(
      first.data.id,
    );
    await expect(octokit.rest.repos.getReleaseByTag({ owner, repo, tag: 'v2.0.0' })).rejects.toMatchObject({
      status: 404,
    });
    // Published: its tag made, and it is the latest now.
    const published = await octokit.rest.repos.updateRelease({
      owner,
      repo,
      release_id: draft.data.id,
      draft: false,
      name: 'Two',
    });
    expect(published.data).toMatchObject({ draft: false, name: 'Two' });
    expect(published.data.published_at).not.toBeNull();
    expect(state.tags.get('v2.0.0')).toBe(feat.data.commit.sha);
    expect((await octokit.rest.repos.getLatestRelease({ owner, repo })).data.id).toBe(draft.data.id);
    // The tag is in the served repository, for git.
    if (!gitTool.skip) {
      gitTool.require();
      const { stdout } = await run('git', ['ls-remote', '--tags', `${server.url}/${owner}/${repo}`]);
      expect(stdout).toContain(`${feat.data.commit.sha}\trefs/tags/v2.0.0`);
      expect(stdout).toContain(`${main}\trefs/tags/v1.0.0`);
    }
    // A conditional GET of an unchanged release is a 304.
    const got = await octokit.rest.repos.getRelease({ owner, repo, release_id: first.data.id });
    await expect(
      octokit.rest.repos.getRelease({
        owner,
        repo,
        release_id: first.data.id,
        headers: { 'if-none-match': got.headers.etag },
      }),
    ).rejects.toMatchObject({ status: 304 });
    // Refusals: one release a tag, a tag name git refuses, a target that is nothing, a missing tag.
    await expect(octokit.rest.repos.createRelease({ owner, repo, tag_name: 'v1.0.0' })).rejects.toMatchObject(
      {
        status: 422,
        response: { data: { errors: [{ resource: 'Release', code: 'already_exists', field: 'tag_name' }] } },
      },
    );
    await expect(
      octokit.rest.repos.updateRelease({ owner, repo, release_id: second.data.id, tag_name: 'v1.0.0' }),
    ).rejects.toMatchObject({ status: 422 });
    await expect(
      octokit.rest.repos.createRelease({ owner, repo, tag_name: 'bad..name' }),
    ).rejects.toMatchObject({
      status: 422,
    });
    await expect(
      octokit.rest.repos.createRelease({ owner, repo, tag_name: 'v9', target_commitish: 'no-such-branch' }),
    ).rejects.toMatchObject({ status: 422 });
    expect(state.tags.has('v9')).toBe(false);
    await expect(
      // Outside the documented body on purpose: what GitHub's schema check refuses.
      octokit.request('POST /repos/{owner}/{repo}/releases', { owner, repo, name: 'no tag' } as never),
    ).rejects.toMatchObject({ status: 422 });
    await expect(
      octokit.rest.repos.createRelease({ owner, repo, tag_name: 'v9', body: 'x'.repeat(125_001) }),
    ).rejects.toMatchObject({ status: 422 });
    await expect(
      octokit.request('POST /repos/{owner}/{repo}/releases', {
        owner,
        repo,
        tag_name: 'v9',
        draft: 'yes',
      } as never),
    ).rejects.toMatchObject({ status: 422 });
    // Deleted: gone, its tag kept; then no latest at all once every full release is gone.
    expect((await octokit.rest.repos.deleteRelease({ owner, repo, release_id: draft.data.id })).status).toBe(
      204,
    );
    await expect(
      octokit.rest.repos.getRelease({ owner, repo, release_id: draft.data.id }),
    ).rejects.toMatchObject({ status: 404 });
    expect(state.tags.has('v2.0.0')).toBe(true);
    await octokit.rest.repos.deleteRelease({ owner, repo, release_id: first.data.id });
    await expect(octokit.rest.repos.getLatestRelease({ owner, repo })).rejects.toMatchObject({ status: 404 });
    // Charged and traced as every route: one core point each, under the route's template.
    const routes = new Set(apiRecords().map((r) => `${r.method} ${r.route}`));
    for (const route of [
      'POST /repos/{owner}/{repo}/releases',
      'GET /repos/{owner}/{repo}/releases',
      'GET /repos/{owner}/{repo}/releases/latest',
      'GET /repos/{owner}/{repo}/releases/tags/{tag}',
      'GET /repos/{owner}/{repo}/releases/{release_id}',
      'PATCH /repos/{owner}/{repo}/releases/{release_id}',
      'DELETE /repos/{owner}/{repo}/releases/{release_id}',
    ])
      expect(routes).toContain(route);
  });

  it('property: the pages of the list hold each release once, newest first, whatever the page size', async () => {
    const { emulator, octokit, advance } = await setUp();
    const state = emulator.state.repo(`${owner}/${repo}`);
    let made = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 7 }),
        fc.integer({ min: 1, max: 10 }),
        async (more, perPage) => {
          // A minute on: GitHub's 80 content-creating requests a minute are not what is held here.
          await advance(61_000);
          for (let i = 0; i < more; i++) {
            made++;
            await octokit.rest.repos.createRelease({
              owner,
              repo,
              tag_name: `p${made}`,
              draft: made % 3 === 0,
            });
          }
          const seen: number[] = [];
          const last = Math.ceil(state.releases.size / perPage);
          for (let page = 1; page <= last + 1; page++) {
            const { data } = await octokit.rest.repos.listReleases({ owner, repo, per_page: perPage, page });
            if (page <= last)
              expect(data.length).toBe(Math.min(perPage, state.releases.size - (page - 1) * perPage));
            else expect(data).toEqual([]);
            seen.push(...data.map((r) => r.id));
          }
          expect(new Set(seen).size).toBe(seen.length);
          expect(seen.length).toBe(state.releases.size);
          // Newest first: made later, listed earlier (ids grow with time).
          expect(seen).toEqual([...seen].sort((a, b) => b - a));
        },
      ),
      { seed: 7, numRuns: 25 },
    );
  });
});

describe('GitHub’s meta information and zen', () => {
  it('GET /meta in its schema; GET /zen as text/plain, a saying each call', async () => {
    const { octokit } = await setUp();
    const meta = await octokit.rest.meta.get();
    expect(meta.data.verifiable_password_authentication).toBe(false);
    expect(meta.data.api).toContain('127.0.0.1/32');
    const zen = await octokit.rest.meta.getZen();
    expect(zen.headers['content-type']).toMatch(/^text\/plain/);
    expect(typeof zen.data).toBe('string');
    expect(zen.data).toMatch(/\.$/);
    const again = await octokit.rest.meta.getZen();
    expect(again.data).not.toBe(zen.data);
  });
});
