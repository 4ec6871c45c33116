/**
 * A rebase merge computed ahead makes the very commits the synchronous merge makes
 * (docs/limits.md, "Servers"; world/refs.ts `prepareRebase`): over random small repositories,
 * pushed with git to two served emulators alike, and random pull requests of one to four commits,
 * the rebase merge of one emulator computed ahead first and of the other not leaves the same
 * branches, the same commit SHAs, the same refusal and the same trees kept. Each step of the first
 * merge answers from what was computed ahead: git is out of its reach while it merges (a step that
 * still needed git would merge differently, or not at all). Real servers, a real git push. Needs
 * git (Debian package git): off CI its absence skips the suite with one line.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { VirtualClock } from '../src/clock/index.ts';
import {
  GitHubEmulator,
  GitHubStateError,
  type RunningGitHubServer,
  startGitHubServer,
} from '../src/github/index.ts';
import { rebaseAhead } from '../src/github/merge-ahead.ts';
import { gitTestEnv, runGit } from './helpers/git.ts';
import { watchForFile } from './helpers/openapi.ts';
import { importStream, randomCommits } from './helpers/random-repo.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const gitTool = systemTool('git', ['--version'], 'git');

const SHAPE = { paths: ['a.txt', 'd/b.txt', 'd/e/c.txt', 'd/e/f.txt', 'g/h.txt'], lines: 12 };

/** A served emulator under a virtual clock that never moves: two of them make the same SHAs. */
async function served(): Promise<{ emulator: GitHubEmulator; server: RunningGitHubServer }> {
  const emulator = new GitHubEmulator({
    clock: new VirtualClock(),
    rng: new Rng(3),
    fixtures: { repos: 1, issuesPerRepo: 0, pullsPerRepo: 0 },
    latency: false,
  });
  watchForFile(emulator);
  return { emulator, server: await startGitHubServer({ emulator }) };
}

const running: { emulator: GitHubEmulator; server: RunningGitHubServer }[] = [];
afterAll(async () => {
  for (const { emulator, server } of running.splice(0)) {
    await server.close();
    emulator.close();
  }
});

describe.skipIf(gitTool.skip)('a rebase merge computed ahead', () => {
  it('needs git', () => gitTool.require());

  it('makes the same branches and commits as the synchronous merge, each step answered from what was computed ahead', {
    timeout: 300_000,
  }, async () => {
    const dir = scratchDir('fleetbench-rebase-ahead-');
    let run = 0;
    /** Runs whose merge made later steps (two commits or more): what the property is about. */
    let laterSteps = 0;
    await fc.assert(
      fc.asyncProperty(randomCommits(SHAPE, 0, 2), randomCommits(SHAPE, 1, 4), async (main, topic) => {
        const pair = [await served(), await served()];
        running.push(...pair);
        try {
          const env = gitTestEnv(dir, {
            GIT_CONFIG_COUNT: '1',
            GIT_CONFIG_KEY_0: 'gc.auto',
            GIT_CONFIG_VALUE_0: '0',
          });
          const urls = pair.map(
            ({ emulator, server }) =>
              `${server.url.replace('://', `://x-access-token:${emulator.defaultToken}@`)}/fleetbench/repo-1.git`,
          );
          const work = `${dir}/work-${run++}`;
          await runGit(['clone', '--quiet', '--bare', urls[0]!, work], dir, env);
          const from = await runGit(['rev-parse', 'main'], work, env);
          await runGit(
            ['fast-import', '--quiet', '--force'],
            work,
            env,
            importStream(SHAPE, from, { base: 'refs/heads/main', topic: 'refs/heads/topic' }, main, topic),
          );
          for (const url of urls) await runGit(['push', '--quiet', url, 'main', 'topic'], work, env);

          const outcomes = [];
          for (const [i, { emulator }] of pair.entries()) {
            const state = emulator.state;
            const repo = state.findRepo('fleetbench', 'repo-1')!;
            const { number } = emulator.admin.openPullRequest({
              repo: 'fleetbench/repo-1',
              head: 'topic',
              title: 't',
            });
            const pull = repo.pulls.get(number)!;
            const ahead = i === 0 ? rebaseAhead(state, pull) : undefined;
            if (ahead !== undefined) await ahead;
            // The merge computed ahead reaches git no more: what it still needed would go wrong.
            const { treeMerger, treePicker } = state.refs;
            const { reader } = state.gitStore;
            if (ahead !== undefined) {
              state.refs.treeMerger = undefined;
              state.refs.treePicker = undefined;
              state.gitStore.reader = undefined;
            }
            let refused: string | undefined;
            try {
              state.mergePullRequest(pull, { method: 'rebase' });
            } catch (error) {
              if (!(error instanceof GitHubStateError)) throw error;
              refused = error.message;
            } finally {
              state.refs.treeMerger = treeMerger;
              state.refs.treePicker = treePicker;
              state.gitStore.reader = reader;
            }
            outcomes.push({
              refused,
              branches: Object.fromEntries(repo.branches),
              mergeCommit: pull.mergeCommitSha,
              commits: [...repo.commits.values()]
                .map((c) => `${c.sha} ${c.tree} ${c.parents.join(',')}`)
                .sort(),
              // The trees the merge made, kept as the synchronous merge keeps them.
              store: { bytes: state.gitStore.keptBytes(), objects: state.gitStore.objectCount() },
            });
          }
          expect(outcomes[0]).toEqual(outcomes[1]);
          if (outcomes[0]!.refused === undefined && topic.length >= 2) laterSteps++;
        } finally {
          for (const { emulator, server } of running.splice(0)) {
            await server.close();
            emulator.close();
          }
        }
      }),
      { numRuns: 20, endOnFailure: true },
    );
    expect(laterSteps).toBeGreaterThan(0);
  });
});
