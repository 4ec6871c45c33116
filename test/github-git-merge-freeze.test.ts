/**
 * A merge in a served repository does not hold the server (docs/limits.md, "Servers"): a pull
 * request of a 60,000-file repository whose two sides both changed a file in each of its 60
 * directories, and the same file, is merged entry by entry through 60 directories read from git
 * (`git cat-file`) and then by git's content merge (`git merge-tree`). That ran synchronously, on
 * the event loop: computing its mergeability held every other client 3.7 s, merging it as long.
 * Now the merge is computed ahead, off the event loop (src/github/merge-ahead.ts, world/refs.ts
 * `prepareMerge`), and another client's probe on a kept-open connection stays answered within
 * the freeze bound (2 s) while one pull request's mergeability is polled and it is merged (REST),
 * another is merged at once (GraphQL `mergePullRequest`), and a third is brought up to date with
 * its base (REST `update-branch`). The real `fleetbench github serve`
 * process, a real git push, fetch. Needs git (Debian package git): off CI its absence skips the
 * suite with one line.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import { gitTestEnv, runGit } from './helpers/git.ts';
import { serve } from './helpers/github.ts';
import { slowestAnswerDuring } from './helpers/probe.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const gitTool = systemTool('git', ['--version'], 'git');
afterAll(stopAll);

/** The repository: DIRS directories of FILES_PER_DIR files each (60,000 files). */
const DIRS = 60;
const FILES_PER_DIR = 1_000;
/** docs/limits.md's freeze bound: another client is answered within it. */
const FREEZE_BOUND_MS = 2_000;
const SHARED_LINES = Array.from({ length: 30 }, (_, i) => `line ${i}`);
/** The lines of shared.txt agent/five's eight commits change, one each. */
const FIVE_LINES = [3, 5, 9, 11, 13, 17, 19, 27];

/**
 * A `git fast-import` stream (no work tree: writing 60,000 files and checking them out took
 * longer than the rest of the test): the base with every file (a directory's files share one
 * content, so the push carries 60,000 tree entries but few blobs), then `main` changing the second
 * file of each directory and the first line of shared.txt, `agent/one` the first file and the
 * last line, `agent/two` the third file and the middle line, `agent/three` the fourth file and
 * the eighth line, `agent/four` in two commits the fifth file and line 22, then the sixth file and
 * line 25, and `agent/five` in eight commits the seventh file and FIVE_LINES' first line, and so
 * on. Each pair (and each step of a rebase) merges cleanly, but only through git's content merge
 * of shared.txt.
 */
function importStream(from: string): string {
  const parts: string[] = [];
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  const shared = (lines: string[]) => `M 100644 inline shared.txt\n${data(`${lines.join('\n')}\n`)}`;
  const commit = (ref: string, mark: number, parent: string, body: string) =>
    parts.push(
      `commit ${ref}\nmark :${mark}\ncommitter Agent <agent@example.com> 1700000000 +0000\n${data(ref)}from ${parent}\n${body}`,
    );
  const files: string[] = [];
  for (let d = 0; d < DIRS; d++)
    for (let f = 0; f < FILES_PER_DIR; f++) files.push(`M 100644 inline d${d}/f${f}.txt\n${data(`${d}`)}`);
  commit('refs/heads/main', 1, from, `${files.join('')}${shared(SHARED_LINES)}`);
  const change = (file: number, lines: string[]) => {
    const changed: string[] = [];
    for (let d = 0; d < DIRS; d++)
      changed.push(`M 100644 inline d${d}/f${file}.txt\n${data(`changed ${d}`)}`);
    return `${changed.join('')}${shared(lines)}`;
  };
  const replaced = (at: number, text: string) => SHARED_LINES.map((line, i) => (i === at ? text : line));
  commit('refs/heads/agent/one', 2, ':1', change(0, replaced(29, 'one')));
  commit('refs/heads/agent/two', 3, ':1', change(2, replaced(15, 'two')));
  commit('refs/heads/agent/three', 4, ':1', change(3, replaced(7, 'three')));
  // Two commits: the fifth file and line 22, then the sixth file and line 25 (line 22 kept).
  const four = replaced(22, 'four');
  commit('refs/heads/agent/four', 6, ':1', change(4, four));
  commit(
    'refs/heads/agent/four',
    7,
    ':6',
    change(
      5,
      four.map((line, i) => (i === 25 ? 'five' : line)),
    ),
  );
  // Eight commits, the k-th the (7+k)-th file and one line more (all kept after), none next to another.
  let five = [...SHARED_LINES];
  FIVE_LINES.forEach((line, k) => {
    five = five.map((text, i) => (i === line ? `five ${k}` : text));
    commit('refs/heads/agent/five', 8 + k, k === 0 ? ':1' : `:${7 + k}`, change(6 + k, five));
  });
  commit('refs/heads/main', 5, ':1', change(1, replaced(0, 'main')));
  return `${parts.join('')}done\n`;
}

/** A bare clone of the served repository at `pushUrl` with the stream's branches; main and `branches` pushed. */
async function pushLargeRepository(
  dir: string,
  pushUrl: string,
  branches = ['agent/one', 'agent/two', 'agent/three'],
) {
  // No gc left running in the background to race the scratch directory's removal.
  const env = gitTestEnv(dir, {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'gc.auto',
    GIT_CONFIG_VALUE_0: '0',
  });
  const work = join(dir, 'work');
  await runGit(['clone', '--quiet', '--bare', pushUrl, work], dir, env);
  const base = await runGit(['rev-parse', 'main'], work, env);
  await runGit(['fast-import', '--quiet', '--force'], work, env, importStream(base));
  await runGit(['push', '--quiet', pushUrl, 'main', ...branches], work, env);
  return { env, work };
}

/** `fleetbench github serve` of one repository, fleetbench/big, with `pushLargeRepository`'s branches pushed. */
async function servedLargeRepository(prefix: string, branches?: string[]) {
  const dir = scratchDir(prefix);
  const fixtures = join(dir, 'world.yaml');
  writeFileSync(fixtures, 'repos:\n  - owner: fleetbench\n    name: big\n    required_reviews: 0\n');
  const server = await startCliServer<{ url: string; token: string }>([
    'github',
    'serve',
    '--fixtures',
    fixtures,
  ]);
  const { url, token } = server.info;
  const pushUrl = `${url.replace('://', `://x-access-token:${token}@`)}/fleetbench/big.git`;
  return { server, url, token, pushUrl, ...(await pushLargeRepository(dir, pushUrl, branches)) };
}

describe.skipIf(gitTool.skip)('a merge of a large repository', () => {
  it('needs git', () => gitTool.require());

  it('holds no other client past the freeze bound: 60,000 files, mergeability polled and merged (REST), merged at once (GraphQL), a branch updated (REST)', {
    timeout: 120_000,
  }, async () => {
    const { server, url, token, pushUrl, env, work } = await servedLargeRepository(
      'fleetbench-git-merge-freeze-',
    );

    const headers = { authorization: `token ${token}`, 'content-type': 'application/json' };
    const api = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${url}${path}`, { ...init, headers });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const open = async (head: string) => {
      const created = await api('/repos/fleetbench/big/pulls', {
        method: 'POST',
        body: JSON.stringify({ head, base: 'main', title: head }),
      });
      expect(created.status).toBe(201);
      return created.body as { number: number; node_id: string };
    };
    const one = await open('agent/one');
    const two = await open('agent/two');
    const three = await open('agent/three');

    const slowest = await slowestAnswerDuring(
      `${url}/rate_limit`,
      async () => {
        // agent/two merged at once: its mergeability and merge computed in the request.
        const merged = await api('/graphql', {
          method: 'POST',
          body: JSON.stringify({
            query:
              'mutation($id: ID!) { mergePullRequest(input: {pullRequestId: $id}) { pullRequest { merged } } }',
            variables: { id: two.node_id },
          }),
        });
        expect(merged.body).toEqual({ data: { mergePullRequest: { pullRequest: { merged: true } } } });
        // agent/one: its mergeability job (null until done), then its merge.
        let mergeable: unknown = null;
        for (let poll = 0; poll < 100 && mergeable === null; poll++) {
          if (poll > 0) await new Promise((resolve) => setTimeout(resolve, 200));
          mergeable = (await api(`/repos/fleetbench/big/pulls/${one.number}`)).body.mergeable;
        }
        expect(mergeable).toBe(true);
        const put = await api(`/repos/fleetbench/big/pulls/${one.number}/merge`, {
          method: 'PUT',
          body: '{}',
        });
        expect(put.status).toBe(200);
        // agent/three brought up to date with main: main merged into it.
        const updated = await api(`/repos/fleetbench/big/pulls/${three.number}/update-branch`, {
          method: 'PUT',
          body: '{}',
        });
        expect(updated.status).toBe(202);
      },
      { headers },
      { serverPid: server.process.pid },
    );
    expect(slowest, `the slowest probe waited ${Math.round(slowest)} ms`).toBeLessThan(FREEZE_BOUND_MS);

    // Both merges are git's: every side's files and lines kept.
    await runGit(['fetch', '--quiet', pushUrl, '+main:refs/heads/merged'], work, env);
    const show = (path: string) => runGit(['show', `merged:${path}`], work, env);
    const shared = (await show('shared.txt')).split('\n');
    expect([shared[0], shared[15], shared[29]]).toEqual(['main', 'two', 'one']);
    expect([await show('d59/f0.txt'), await show('d59/f1.txt'), await show('d59/f2.txt')]).toEqual([
      'changed 59',
      'changed 59',
      'changed 59',
    ]);
    expect(await show('d59/f3.txt')).toBe('59');
    await runGit(['fetch', '--quiet', pushUrl, '+agent/three:refs/heads/updated'], work, env);
    const updated = (await runGit(['show', 'updated:shared.txt'], work, env)).split('\n');
    expect([updated[0], updated[7], updated[15], updated[29]]).toEqual(['main', 'three', 'two', 'one']);
    expect(await runGit(['show', 'updated:d59/f3.txt'], work, env)).toBe('changed 59');
  });

  it('holds no other client past the freeze bound: rebase merges of a two-commit and an eight-commit pull request, each step onto the one before (REST)', {
    timeout: 120_000,
  }, async () => {
    const { server, url, token, pushUrl, env, work } = await servedLargeRepository(
      'fleetbench-git-merge-freeze-rebase-',
      ['agent/four', 'agent/five'],
    );
    const headers = { authorization: `token ${token}`, 'content-type': 'application/json' };
    const open = async (head: string) => {
      const res = await fetch(`${url}/repos/fleetbench/big/pulls`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ head, base: 'main', title: head }),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { number: number }).number;
    };
    const four = await open('agent/four');
    const five = await open('agent/five');
    /** The slowest probe while the pull request is rebased onto main (and merged: 200). */
    const rebase = async (number: number) => {
      let merged: { status: number; body: unknown } | undefined;
      const slowest = await slowestAnswerDuring(
        `${url}/rate_limit`,
        async () => {
          const res = await fetch(`${url}/repos/fleetbench/big/pulls/${number}/merge`, {
            method: 'PUT',
            headers,
            body: JSON.stringify({ merge_method: 'rebase' }),
          });
          merged = { status: res.status, body: await res.json() };
        },
        { headers },
        { serverPid: server.process.pid },
      );
      expect(merged?.status, JSON.stringify(merged?.body)).toBe(200);
      return slowest;
    };
    const slowestFour = await rebase(four);
    expect(slowestFour, `the slowest probe waited ${Math.round(slowestFour)} ms`).toBeLessThan(
      FREEZE_BOUND_MS,
    );
    const slowestFive = await rebase(five);
    expect(slowestFive, `the slowest probe waited ${Math.round(slowestFive)} ms`).toBeLessThan(
      FREEZE_BOUND_MS,
    );

    // Ten commits on main, each step git's merge: every side's files and lines kept.
    await runGit(['fetch', '--quiet', pushUrl, '+main:refs/heads/rebased'], work, env);
    const subjects = (await runGit(['log', '--format=%s', '-11', 'rebased'], work, env)).split('\n');
    expect(subjects).toEqual([
      ...Array.from({ length: 8 }, () => 'refs/heads/agent/five'),
      'refs/heads/agent/four',
      'refs/heads/agent/four',
      'refs/heads/main',
    ]);
    const sharedAt = async (rev: string) =>
      (await runGit(['show', `${rev}:shared.txt`], work, env)).split('\n');
    const afterFour = await sharedAt('rebased~8');
    expect([afterFour[0], afterFour[22], afterFour[25], afterFour[3]]).toEqual([
      'main',
      'four',
      'five',
      'line 3',
    ]);
    const firstStep = await sharedAt('rebased~9');
    expect([firstStep[0], firstStep[22], firstStep[25]]).toEqual(['main', 'four', 'line 25']);
    const last = await sharedAt('rebased');
    expect(FIVE_LINES.map((line) => last[line])).toEqual(FIVE_LINES.map((_, k) => `five ${k}`));
    expect([last[0], last[22], last[25]]).toEqual(['main', 'four', 'five']);
    const show = (path: string) => runGit(['show', `rebased:${path}`], work, env);
    for (const file of [1, 4, 5, 6, 13]) expect(await show(`d59/f${file}.txt`)).toBe('changed 59');
    expect(await show('d59/f14.txt')).toBe('59');
  });

  it('in process, the admin API merges it after computing it ahead (what a run’s workload does): the event loop is never held past the bound', {
    timeout: 120_000,
  }, async () => {
    const emulator = new GitHubEmulator({
      clock: new RealClock(),
      rng: new Rng(7),
      fixtures: { repos: 1, issuesPerRepo: 1 },
      latency: false,
    });
    const server = await serve(emulator);
    const dir = scratchDir('fleetbench-git-merge-freeze-admin-');
    const pushUrl = `${server.url.replace('://', `://x-access-token:${emulator.defaultToken}@`)}/fleetbench/repo-1.git`;
    await pushLargeRepository(dir, pushUrl, ['agent/one']);
    const admin = emulator.admin;
    const { number } = admin.openPullRequest({ repo: 'fleetbench/repo-1', head: 'agent/one', title: 'one' });
    // The loop's longest turn, as a timer every 10 ms sees it, while the workload's merge runs.
    let heldMs = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      heldMs = Math.max(heldMs, now - last);
      last = now;
    }, 10);
    try {
      const ahead = admin.mergeAhead({ repo: 'fleetbench/repo-1', number });
      expect(ahead).toBeDefined();
      await ahead;
      expect(admin.mergePullRequest({ repo: 'fleetbench/repo-1', number }).state).toBe('merged');
      // One more turn of the timer, so that a merge that held the loop just now is seen.
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      clearInterval(timer);
    }
    expect(heldMs, `the event loop was held ${Math.round(heldMs)} ms`).toBeLessThan(FREEZE_BOUND_MS);
  });
});
