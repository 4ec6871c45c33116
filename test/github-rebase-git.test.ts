/**
 * A rebase merge replays each of the pull request's commits as `git rebase` does
 * (docs/github-emulator.md, "git over HTTP"): each commit's own change, from its parent to it, applied
 * onto the commit the step before made (a cherry-pick), not the whole branch's change since the
 * merge base. The oracle is real git: over random small repositories and pull requests of two to
 * four commits (a later commit often setting again a line an earlier one set, the base often
 * changing the lines the pull request changes), pushed with git to a served emulator and rebase
 * merged through Octokit (REST `merge_method: rebase`), the emulator refuses exactly when `git
 * cherry-pick` of the commits in order onto the base stops at a conflict (`This branch can't be
 * rebased`) or git's merge of the two tips does (`Pull Request has merge conflicts`: GitHub
 * refuses every merge method then), and otherwise makes
 * one commit per commit on the base, one parent each, with the tree, message and author git's
 * cherry-pick gives it. Needs git (Debian package git): off CI its absence skips the suite.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { VirtualClock } from '../src/clock/index.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import { gitTestEnv, runGit } from './helpers/git.ts';
import { serve } from './helpers/github.ts';
import { importStream, randomCommits, setsAgain } from './helpers/random-repo.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const gitTool = systemTool('git', ['--version'], 'git');
const Octokit = Core.plugin(restEndpointMethods);

const SHAPE = { paths: ['a.txt', 'd/b.txt', 'd/e/c.txt'], lines: 8 };

/** A base's commits and a pull request's: random, two to four of the pull request's. */
const random = fc.record({ main: randomCommits(SHAPE, 0, 2), topic: randomCommits(SHAPE, 2, 4) });
/**
 * A pull request that sets a line the base set, to another word, then to the base's: the two tips
 * merge cleanly, but its first commit, picked onto the base, conflicts (rare among random ones).
 */
const undone = fc
  .record({
    path: fc.nat(SHAPE.paths.length - 1),
    line: fc.nat(SHAPE.lines - 1),
    main: randomCommits(SHAPE, 0, 1),
    topic: randomCommits(SHAPE, 0, 2),
  })
  .map(({ path, line, main, topic }) => ({
    main: [...main, [{ path, line, word: 'x' }]],
    topic: [[{ path, line, word: 'y' }], ...topic, [{ path, line, word: 'x' }]],
  }));
/** A pull request that sets a line, then sets it again: what its rebase merge once refused. */
const again = fc
  .record({
    path: fc.nat(SHAPE.paths.length - 1),
    line: fc.nat(SHAPE.lines - 1),
    main: randomCommits(SHAPE, 0, 2),
    topic: randomCommits(SHAPE, 0, 2),
  })
  .map(({ path, line, main, topic }) => ({
    main,
    topic: [[{ path, line, word: 'y' }], ...topic, [{ path, line, word: 'z' }]],
  }));

/** The commits after `from` up to `to`, oldest first: tree, parents' count, author, date and message. */
async function replayed(work: string, env: NodeJS.ProcessEnv, from: string, to: string): Promise<string[]> {
  const log = await runGit(
    ['log', '--reverse', '--date=raw', '--format=%T %P%x1f%an <%ae> %ad%x1f%B%x1e', `${from}..${to}`],
    work,
    env,
  );
  return log
    .split('\x1e')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [ids, author, message] = entry.split('\x1f');
      const [tree, ...parents] = ids!.split(' ');
      return `${tree} parents:${parents.length} ${author} ${JSON.stringify(message!.trim())}`;
    });
}

describe.skipIf(gitTool.skip)('a rebase merge', () => {
  it('needs git', () => gitTool.require());

  it('replays each commit as git cherry-picks it: the same refusal, else the same trees, messages and authors', {
    timeout: 300_000,
  }, async () => {
    const emulator = new GitHubEmulator({
      clock: new VirtualClock(),
      rng: new Rng(5),
      fixtures: { repos: 1, issuesPerRepo: 0, pullsPerRepo: 0 },
      latency: false,
    });
    emulator.state.repo('fleetbench/repo-1').requiredReviews = 0; // merges need no review here
    const server = await serve(emulator);
    const octokit = new Octokit({ auth: emulator.defaultToken, baseUrl: server.url });
    const dir = scratchDir('fleetbench-rebase-git-');
    const env = gitTestEnv(dir, {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'gc.auto',
      GIT_CONFIG_VALUE_0: '0',
    });
    const url = `${server.url.replace('://', `://x-access-token:${emulator.defaultToken}@`)}/fleetbench/repo-1.git`;
    const work = join(dir, 'work');
    await runGit(['clone', '--quiet', url, work], dir, env);
    const from = await runGit(['rev-parse', 'HEAD'], work, env);

    let run = 0;
    /** What the runs covered: merges whose later commit set a line again, and refusals. */
    const seen = { setAgain: 0, conflicts: 0, refused: 0, rebased: 0 };
    await fc.assert(
      fc.asyncProperty(fc.oneof({ weight: 3, arbitrary: random }, undone, again), async ({ main, topic }) => {
        run++;
        const base = `base-${run}`;
        const head = `topic-${run}`;
        await runGit(
          ['fast-import', '--quiet'],
          work,
          env,
          importStream(
            SHAPE,
            from,
            { base: `refs/heads/${base}`, topic: `refs/heads/${head}` },
            main,
            topic,
            1000 * run,
          ),
        );
        await runGit(['push', '--quiet', url, base, head], work, env);

        // GitHub refuses any merge of a pull request whose head conflicts with its base.
        const conflicts = await runGit(['merge-tree', '--write-tree', base, head], work, env).then(
          () => false,
          () => true,
        );
        // git's answer: each commit of the pull request cherry-picked in order onto the base.
        await runGit(['checkout', '--quiet', '--force', '--detach', base], work, env);
        let gitRefused = false;
        try {
          await runGit(['cherry-pick', '--keep-redundant-commits', `${base}..${head}`], work, env);
        } catch (error) {
          // Stopped at a conflict (anything else is the test's own failure).
          if (!existsSync(join(work, '.git', 'CHERRY_PICK_HEAD'))) throw error;
          gitRefused = true;
          await runGit(['cherry-pick', '--abort'], work, env);
        }
        const expected = gitRefused ? [] : await replayed(work, env, base, 'HEAD');

        const { data: pull } = await octokit.rest.pulls.create({
          owner: 'fleetbench',
          repo: 'repo-1',
          head,
          base,
          title: `rebase ${run}`,
        });
        const merged = await octokit.rest.pulls
          .merge({ owner: 'fleetbench', repo: 'repo-1', pull_number: pull.number, merge_method: 'rebase' })
          .then(
            (res) => ({ status: res.status, sha: res.data.sha, message: res.data.message }),
            (error: { status?: number; response?: { data?: { message?: string } } }) => ({
              status: error.status,
              sha: undefined,
              message: error.response?.data?.message,
            }),
          );
        await runGit(['fetch', '--quiet', url, `+${base}:refs/emulated/${run}`], work, env);
        const made = await replayed(work, env, base, `refs/emulated/${run}`);
        const context = JSON.stringify({ main, topic, merged, expected, made });
        if (conflicts || gitRefused) {
          const message = conflicts ? 'Pull Request has merge conflicts' : "This branch can't be rebased";
          expect(merged, context).toEqual({ status: 405, sha: undefined, message });
          expect(made, context).toEqual([]);
          if (conflicts) seen.conflicts++;
          else seen.refused++;
        } else {
          expect(merged.status, context).toBe(200);
          expect(merged.sha, context).toBe(await runGit(['rev-parse', `refs/emulated/${run}`], work, env));
          expect(made, context).toEqual(expected);
          seen.rebased++;
          if (setsAgain(topic)) seen.setAgain++;
        }
      }),
      { numRuns: 30, endOnFailure: true },
    );
    // Every answer was searched (a pick's conflict where the two tips merge cleanly among the
    // refusals), and the case that used to be refused was among those merged.
    expect(seen.conflicts, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.refused, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.setAgain, JSON.stringify(seen)).toBeGreaterThan(0);
  });
});
