import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { runGit } from './helpers/git.ts';
import { serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const Octokit = Core.plugin(restEndpointMethods);
const dir = scratchDir('fleetbench-graphql-git-');
const gitTool = systemTool('git', ['--version'], 'git');
const b64 = (text: string) => Buffer.from(text).toString('base64');

const git = (args: string[]) =>
  runGit(args, dir, {
    PATH: process.env.PATH,
    HOME: dir,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
  });

describe.skipIf(gitTool.skip)('GraphQL createRef, createCommitOnBranch, updateRef, deleteRef', () => {
  it('a bot that writes through GraphQL: branch, commit of files, pull request follows, clone has them; refusals in GitHub words', async () => {
    gitTool.require();
    const emulator = new GitHubEmulator({
      clock: new RealClock(),
      rng: new Rng(9),
      trace: new MemorySink(),
      fixtures: { repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 },
      latency: false,
    });
    const server = await serve(emulator);
    try {
      const octokit = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
      const { repository } = await octokit.graphql<{
        repository: { id: string; defaultBranchRef: { target: { oid: string } } };
      }>('{ repository(owner: "fleetbench", name: "repo-1") { id defaultBranchRef { target { oid } } } }');
      const main = repository.defaultBranchRef.target.oid;
      const made = await octokit.graphql<{
        createRef: { ref: { id: string; name: string; target: { oid: string } } };
      }>('mutation($i: CreateRefInput!) { createRef(input: $i) { ref { id name target { oid } } } }', {
        i: { repositoryId: repository.id, name: 'refs/heads/bot/fix-1', oid: main },
      });
      expect(made.createRef.ref).toMatchObject({ name: 'bot/fix-1', target: { oid: main } });
      // A taken name, in GitHub's words.
      await expect(
        octokit.graphql('mutation($i: CreateRefInput!) { createRef(input: $i) { ref { name } } }', {
          i: { repositoryId: repository.id, name: 'refs/heads/bot/fix-1', oid: main },
        }),
      ).rejects.toThrow(/Reference already exists/);
      // A pull request open on the branch before the commit: it must take the commit.
      const commitMutation =
        'mutation($i: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $i) { commit { oid } ref { name target { oid } } } }';
      const committed = await octokit.graphql<{ createCommitOnBranch: { commit: { oid: string } } }>(
        commitMutation,
        {
          i: {
            branch: { repositoryNameWithOwner: 'fleetbench/repo-1', branchName: 'bot/fix-1' },
            expectedHeadOid: main,
            message: { headline: 'Fix #1', body: 'Closes #1' },
            fileChanges: {
              additions: [
                { path: 'docs/fix.md', contents: b64('fixed\n') },
                { path: 'a.txt', contents: b64('a\n') },
              ],
            },
          },
        },
      );
      const first = committed.createCommitOnBranch.commit.oid;
      expect(first).toMatch(/^[0-9a-f]{40}$/);
      const pull = await octokit.rest.pulls.create({
        owner: 'fleetbench',
        repo: 'repo-1',
        head: 'bot/fix-1',
        base: 'main',
        title: 'Fix #1',
      });
      // The same expectedHeadOid again: the branch moved since, refused.
      await expect(
        octokit.graphql(commitMutation, {
          i: {
            branch: { id: made.createRef.ref.id },
            expectedHeadOid: main,
            message: { headline: 'stale' },
            fileChanges: { additions: [{ path: 'b.txt', contents: b64('b') }] },
          },
        }),
      ).rejects.toThrow(/Expected branch to point to/);
      // By the ref's id, a deletion and an addition: the open pull request takes the commit.
      const second = await octokit.graphql<{ createCommitOnBranch: { commit: { oid: string } } }>(
        commitMutation,
        {
          i: {
            branch: { id: made.createRef.ref.id },
            expectedHeadOid: first,
            message: { headline: 'Second' },
            fileChanges: {
              deletions: [{ path: 'a.txt' }],
              additions: [{ path: 'b.txt', contents: b64('b\n') }],
            },
          },
        },
      );
      const head = second.createCommitOnBranch.commit.oid;
      expect(
        (await octokit.rest.pulls.get({ owner: 'fleetbench', repo: 'repo-1', pull_number: pull.data.number }))
          .data.head.sha,
      ).toBe(head);
      const file = await octokit.rest.repos.getContent({
        owner: 'fleetbench',
        repo: 'repo-1',
        path: 'docs/fix.md',
        ref: 'bot/fix-1',
      });
      expect(Buffer.from((file.data as { content: string }).content, 'base64').toString()).toBe('fixed\n');
      // git sees what GraphQL committed.
      const into = join(dir, 'clone');
      await git(['clone', '--quiet', '--branch', 'bot/fix-1', `${server.url}/fleetbench/repo-1`, into]);
      expect(readFileSync(join(into, 'docs', 'fix.md'), 'utf8')).toBe('fixed\n');
      expect(readFileSync(join(into, 'b.txt'), 'utf8')).toBe('b\n');
      expect(() => readFileSync(join(into, 'a.txt'))).toThrow();
      expect(await git(['-C', into, 'log', '-1', '--format=%s%n%b'])).toBe('Second');
      // updateRef back to the first commit: not a fast forward unless forced.
      const update = 'mutation($i: UpdateRefInput!) { updateRef(input: $i) { ref { target { oid } } } }';
      await expect(
        octokit.graphql(update, { i: { refId: made.createRef.ref.id, oid: first } }),
      ).rejects.toThrow(/Update is not a fast forward/);
      const forced = await octokit.graphql<{ updateRef: { ref: { target: { oid: string } } } }>(update, {
        i: { refId: made.createRef.ref.id, oid: first, force: true },
      });
      expect(forced.updateRef.ref.target.oid).toBe(first);
      await octokit.graphql('mutation($i: DeleteRefInput!) { deleteRef(input: $i) { clientMutationId } }', {
        i: { refId: made.createRef.ref.id },
      });
      expect(emulator.state.repo('fleetbench/repo-1').branches.has('bot/fix-1')).toBe(false);
      await expect(
        octokit.graphql('mutation($i: DeleteRefInput!) { deleteRef(input: $i) { clientMutationId } }', {
          i: { refId: made.createRef.ref.id },
        }),
      ).rejects.toThrow(/Could not resolve to a node/);
      // A malformed path is refused before anything is written; the contents API's bounds hold
      // here too (docs/limits.md): a path over 4,096 bytes, a `.GIT` component, content that is
      // not Base64.
      for (const [path, contents, refusal] of [
        ['../x', b64('x'), /malformed path component/],
        ['a/'.repeat(2100), b64('x'), /longer than 4096 bytes/],
        ['x/.GIT/config', b64('x'), /malformed path component/],
        ['ok.txt', 'not base64!', /not valid Base64/],
      ] as const)
        await expect(
          octokit.graphql(commitMutation, {
            i: {
              branch: { repositoryNameWithOwner: 'fleetbench/repo-1', branchName: 'main' },
              expectedHeadOid: main,
              message: { headline: 'x' },
              fileChanges: { additions: [{ path, contents }] },
            },
          }),
        ).rejects.toThrow(refusal);
      expect(emulator.state.repo('fleetbench/repo-1').branches.get('main')).toBe(main);
    } finally {
      await server.close();
    }
  }, 120_000);
});
