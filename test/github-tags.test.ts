/**
 * Tags (docs/github-emulator.md, "Tags"): what a release bot does. Tags pushed with git are read
 * through Octokit's `repos.listTags`, `git.getRef` and `git.getTag`; an annotated tag made through
 * `git.createTag` and `git.createRef` is in a `git clone` with git's own SHA; tags move and go
 * both ways. A fast-check property holds that the tag objects the emulator writes are ones `git
 * mktag` takes, with the same SHA, and that reading them back gives what was written.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { parseTagBody } from '../src/github/git/repos.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import { objectSha, tagBody } from '../src/github/world/git-objects.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { gitTestEnv, runGit } from './helpers/git.ts';
import { inProcess, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const Octokit = Core.plugin(restEndpointMethods);
const dir = scratchDir('fleetbench-tags-');
const gitTool = systemTool('git', ['--version'], 'git');
let clones = 0;

const gitEnv = gitTestEnv(dir, {
  GIT_COMMITTER_NAME: 'Release Bot',
  GIT_COMMITTER_EMAIL: 'release@example.com',
});

const git = (args: string[], cwd = dir, input?: string) => runGit(args, cwd, gitEnv, input);

const at = { owner: 'fleetbench', repo: 'repo-1' };

async function world() {
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(9),
    trace: new MemorySink(),
    fixtures: { repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 },
    latency: false,
  });
  const server = await serve(emulator);
  const octokit = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
  const clone = async () => {
    const into = join(dir, `clone-${++clones}`);
    await git(['clone', '--quiet', `${server.url}/fleetbench/repo-1`, into]);
    return into;
  };
  const pushUrl = `${server.url.replace('://', `://x-access-token:${emulator.defaultToken}@`)}/fleetbench/repo-1.git`;
  return { emulator, octokit, clone, pushUrl };
}

const refusal = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return undefined;
  } catch (error) {
    const e = error as { status: number; response?: { data?: { message?: string } } };
    return { status: e.status, message: e.response?.data?.message };
  }
};

describe.skipIf(gitTool.skip)('tags, with git', () => {
  beforeAll(() => gitTool.require());

  it('tags pushed with git: listed with their commits, an annotated one read as git wrote it, usable as a ref', async () => {
    const { octokit, clone, pushUrl } = await world();
    const work = await clone();
    await git(['tag', '-a', 'v1.0.0', '-m', 'First release\n\nWith notes.'], work);
    await git(['commit', '--quiet', '--allow-empty', '-m', 'After the release'], work);
    await git(['tag', 'v1.1.0'], work);
    // A tag on a commit no branch holds: its commit comes with the tag.
    await git(['checkout', '--quiet', '--detach'], work);
    await git(['commit', '--quiet', '--allow-empty', '-m', 'Only on a tag'], work);
    await git(['tag', 'detached'], work);
    await git(['push', '--quiet', pushUrl, 'v1.0.0', 'v1.1.0', 'detached'], work);
    const sha = async (rev: string) => git(['rev-parse', rev], work);

    const tags = await octokit.rest.repos.listTags(at);
    expect(tags.data.map((t) => [t.name, t.commit.sha])).toEqual([
      ['v1.1.0', await sha('v1.1.0')],
      ['v1.0.0', await sha('v1.0.0^{commit}')],
      ['detached', await sha('detached')],
    ]);
    const annotated = await octokit.rest.git.getRef({ ...at, ref: 'tags/v1.0.0' });
    expect(annotated.data.object).toMatchObject({ type: 'tag', sha: await sha('v1.0.0') });
    const light = await octokit.rest.git.getRef({ ...at, ref: 'tags/v1.1.0' });
    expect(light.data.object).toMatchObject({ type: 'commit', sha: await sha('v1.1.0') });
    const tag = await octokit.rest.git.getTag({ ...at, tag_sha: annotated.data.object.sha });
    expect(tag.data).toMatchObject({
      tag: 'v1.0.0',
      sha: await sha('v1.0.0'),
      message: 'First release\n\nWith notes.',
      tagger: { name: 'Release Bot', email: 'release@example.com' },
      object: { type: 'commit', sha: await sha('v1.0.0^{commit}') },
      verification: { verified: false, reason: 'unsigned' },
    });
    // The commit only a tag holds is the world's too.
    const detached = await octokit.rest.git.getCommit({ ...at, commit_sha: await sha('detached') });
    expect(detached.data.message).toBe('Only on a tag');
    // A tag names a commit wherever a ref does.
    const compared = await octokit.rest.repos.compareCommits({ ...at, base: 'v1.0.0', head: 'v1.1.0' });
    expect(compared.data.commits.map((c) => c.commit.message)).toEqual(['After the release']);
    const readme = await octokit.rest.repos.getContent({ ...at, path: 'README.md', ref: 'tags/v1.0.0' });
    expect((readme.data as { name: string }).name).toBe('README.md');
    const matching = await octokit.rest.git.listMatchingRefs({ ...at, ref: 'tags/v1.' });
    expect(matching.data.map((r) => r.ref)).toEqual(['refs/tags/v1.0.0', 'refs/tags/v1.1.0']);
    const all = await octokit.rest.git.listMatchingRefs({ ...at, ref: '' });
    expect(all.data.map((r) => r.ref)).toEqual([
      'refs/heads/main',
      'refs/tags/detached',
      'refs/tags/v1.0.0',
      'refs/tags/v1.1.0',
    ]);

    // Deleted by a push: gone from the API.
    await git(['push', '--quiet', pushUrl, '--delete', 'v1.1.0'], work);
    expect(await refusal(octokit.rest.git.getRef({ ...at, ref: 'tags/v1.1.0' }))).toMatchObject({
      status: 404,
    });
    expect((await octokit.rest.repos.listTags(at)).data.map((t) => t.name)).toEqual(['v1.0.0', 'detached']);
  });

  it('a release made through the API: git.createTag and git.createRef, in a clone with git’s own SHA, fsck clean', async () => {
    const { octokit, clone } = await world();
    const main = (await octokit.rest.git.getRef({ ...at, ref: 'heads/main' })).data.object.sha;
    const made = await octokit.rest.git.createTag({
      ...at,
      tag: 'v2.0.0',
      message: 'Second release',
      object: main,
      type: 'commit',
      tagger: { name: 'Release Bot', email: 'release@example.com', date: '2026-03-04T05:06:07Z' },
    });
    expect(made.status).toBe(201);
    expect(made.headers.location).toBe(made.data.url);
    expect(made.data.tagger.date).toBe('2026-03-04T05:06:07Z');
    // A tag object is no tag until its ref is made (GitHub's docs).
    expect((await octokit.rest.repos.listTags(at)).data).toEqual([]);
    const ref = await octokit.rest.git.createRef({ ...at, ref: 'refs/tags/v2.0.0', sha: made.data.sha });
    expect(ref.data.object).toMatchObject({ type: 'tag', sha: made.data.sha });
    await octokit.rest.git.createRef({ ...at, ref: 'refs/tags/nightly', sha: main });
    // Without a tagger: the token's user, now.
    const plain = await octokit.rest.git.createTag({
      ...at,
      tag: 'plain',
      message: '',
      object: main,
      type: 'commit',
    });
    expect(plain.data.tagger.name).toMatch(/\S/);
    await octokit.rest.git.createRef({ ...at, ref: 'refs/tags/plain', sha: plain.data.sha });

    const work = await clone();
    expect((await git(['tag'], work)).split('\n')).toEqual(['nightly', 'plain', 'v2.0.0']);
    expect(await git(['rev-parse', 'v2.0.0'], work)).toBe(made.data.sha);
    expect(await git(['rev-parse', 'plain'], work)).toBe(plain.data.sha);
    expect(await git(['cat-file', '-t', 'v2.0.0'], work)).toBe('tag');
    expect(
      await git(
        ['for-each-ref', '--format=%(taggername) %(taggeremail) %(contents:subject)', 'refs/tags/v2.0.0'],
        work,
      ),
    ).toBe('Release Bot <release@example.com> Second release');
    await git(['fsck', '--strict', '--no-dangling'], work);

    // Moved only forward unless forced, deleted: the next clone follows.
    const later = await octokit.rest.git.createCommit({
      ...at,
      message: 'Later',
      tree: (await octokit.rest.git.getCommit({ ...at, commit_sha: main })).data.tree.sha,
      parents: [main],
    });
    await octokit.rest.git.updateRef({ ...at, ref: 'tags/nightly', sha: later.data.sha });
    expect(await refusal(octokit.rest.git.updateRef({ ...at, ref: 'tags/nightly', sha: main }))).toEqual({
      status: 422,
      message: 'Update is not a fast forward',
    });
    await octokit.rest.git.updateRef({ ...at, ref: 'tags/nightly', sha: main, force: true });
    await octokit.rest.git.deleteRef({ ...at, ref: 'tags/v2.0.0' });
    const again = await clone();
    expect((await git(['tag'], again)).split('\n')).toEqual(['nightly', 'plain']);
    expect(await git(['rev-parse', 'nightly'], again)).toBe(main);
  });
});

describe('tags: GitHub’s refusals', () => {
  it('refuses what GitHub refuses, in its words, and makes nothing', async () => {
    const h = inProcess();
    const repo = h.emulator.state.repo('fleetbench/repo-1');
    const main = repo.branches.get(repo.defaultBranch)!;
    const messageOf = (answer: { body: string }) => (JSON.parse(answer.body) as { message: string }).message;
    const post = (path: string, body: unknown) => h.post(`/repos/fleetbench/repo-1/${path}`, body);
    const tag = { tag: 'v1', message: 'm', object: main, type: 'commit' };
    const cases: [string, unknown, number, string][] = [
      ['git/tags', { ...tag, object: 'f'.repeat(40) }, 422, 'Object does not exist'],
      ['git/tags', { ...tag, type: 'tree' }, 422, 'Object does not exist'],
      [
        'git/tags',
        { ...tag, type: 'tag' },
        422,
        `For 'properties/type', "tag" is not one of ["commit", "tree", "blob"].`,
      ],
      ['git/tags', { ...tag, tag: undefined }, 422, '"tag" wasn\'t supplied.'],
      ['git/tags', { ...tag, message: 'a\0b' }, 422, '"message" contains a NUL character.'],
      [
        'git/tags',
        { ...tag, tagger: { name: 'x\0', email: 'y' } },
        422,
        '"tagger.name" contains a NUL character.',
      ],
      [
        'git/tags',
        { ...tag, tagger: { name: 'x', email: 'y', date: '1969-12-31T00:00:00Z' } },
        422,
        'is not a date',
      ],
      ['git/tags', { ...tag, tag: 'a..b' }, 422, 'a..b is not a valid tag name.'],
      ['git/tags', { ...tag, tagger: { name: 'x' } }, 422, '"email" wasn\'t supplied.'],
      ['git/tags', { ...tag, tagger: { name: 'x', email: 'y', date: 'yesterday' } }, 422, 'is not a date'],
      ['git/refs', { ref: 'refs/tags/v1', sha: 'f'.repeat(40) }, 422, 'Object does not exist'],
      [
        'git/refs',
        { ref: 'refs/tags/bad..name', sha: main },
        422,
        'refs/tags/bad..name is not a valid ref name.',
      ],
      ['git/refs', { ref: 'refs/notes/x', sha: main }, 422, 'branches and tags only'],
    ];
    for (const [path, body, status, message] of cases) {
      const answer = await post(path, body);
      expect([answer.status, messageOf(answer)], JSON.stringify(body)).toEqual([
        status,
        expect.stringContaining(message),
      ]);
    }
    expect(repo.tags.size).toBe(0);
    expect(repo.tagObjects.size).toBe(0);
    expect((await post('git/refs', { ref: 'refs/tags/v1', sha: main })).status).toBe(201);
    const twice = await post('git/refs', { ref: 'refs/tags/v1', sha: main });
    expect([twice.status, messageOf(twice)]).toEqual([422, 'Reference already exists']);
    const gone = await h.transport.request({
      method: 'DELETE',
      path: '/repos/fleetbench/repo-1/git/refs/tags/nothing',
      headers: {},
    });
    expect([gone.status, messageOf(gone)]).toEqual([422, 'Reference does not exist']);
    expect((await h.get(`/repos/fleetbench/repo-1/git/tags/${main}`)).status).toBe(404);
  });
});

describe.skipIf(gitTool.skip)('tag objects: the emulator’s bytes are git’s', () => {
  it('property: git mktag takes every tag object the emulator makes, with its SHA, and it reads back as made', () => {
    gitTool.require();
    const repo = join(dir, 'mktag');
    execFileSync('git', ['init', '--quiet', repo], { env: gitEnv });
    execFileSync('git', ['commit', '--quiet', '--allow-empty', '-m', 'base'], { cwd: repo, env: gitEnv });
    const base = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo, env: gitEnv }).toString().trim();
    const component = fc
      .stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}$/)
      .filter((c) => !c.endsWith('.') && !c.endsWith('.lock') && !c.includes('..'));
    const nameText = fc
      .string({ minLength: 1, maxLength: 30 })
      .filter((s) => !/[<>\n\0]/.test(s) && s.trim() === s && s !== '');
    fc.assert(
      fc.property(
        fc.array(component, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/')),
        fc.string({ maxLength: 200 }).filter((m) => !m.includes('\0') && !m.endsWith('\n')),
        nameText,
        fc.stringMatching(/^[a-z0-9.]{1,12}@[a-z0-9.]{1,12}$/),
        fc.integer({ min: 0, max: 4_000_000_000 }),
        (tag, message, name, email, seconds) => {
          const content = {
            object: base,
            type: 'commit' as const,
            tag,
            tagger: { name, email, seconds },
            message,
          };
          const body = tagBody(content);
          const made = execFileSync('git', ['mktag'], { cwd: repo, env: gitEnv, input: body })
            .toString()
            .trim();
          expect(made).toBe(objectSha('tag', body));
          expect(parseTagBody(body)).toEqual(content);
        },
      ),
      { numRuns: 40 },
    );
  });
});
