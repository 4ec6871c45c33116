/**
 * What one git push may do (docs/limits.md, "git over HTTP"): at most 1,000 branches and tags
 * updated, and no more branches or tags in the repository than the API lets it hold. A push is a
 * body a client writes by hand as easily as git does: 20,000 new branches in one push took git
 * 44 s on the served repository and made 20,000 branches in the world, with nothing to stop the
 * next push. The receive-pack body is written here (pkt-lines and an empty pack), the emulator's
 * server real, and the hook that holds the bounds is run by sh and git against a model of them.
 * Needs git (Debian package git): off CI its absence skips the suite with one line.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { PUSH_BOUNDS, preReceiveHook } from '../src/github/git/repos.ts';
import { GitHubEmulator, type RunningGitHubServer } from '../src/github/index.ts';
import { gitTestEnv, runGit } from './helpers/git.ts';
import { serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const gitTool = systemTool('git', ['--version'], 'git');
const dir = scratchDir('fleetbench-git-push-bounds-');
const env = gitTestEnv(dir);
const ZERO = '0'.repeat(40);
const servers: RunningGitHubServer[] = [];

afterAll(async () => {
  for (const server of servers) await server.close();
});

const pkt = (text: string) => {
  const body = Buffer.from(text);
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0')), body]);
};

/** A receive-pack request creating each of `branches` at `sha`, with an empty pack (git's own shape). */
function pushBody(sha: string, branches: readonly string[]): Buffer {
  const header = Buffer.from([0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2, 0, 0, 0, 0]);
  const pack = Buffer.concat([header, createHash('sha1').update(header).digest()]);
  const commands = branches.map((name, i) =>
    pkt(`${ZERO} ${sha} refs/heads/${name}${i === 0 ? '\0report-status' : ''}\n`),
  );
  return Buffer.concat([...commands, Buffer.from('0000'), pack]);
}

describe.skipIf(gitTool.skip)('a git push’s bounds', () => {
  it('needs git', () => gitTool.require());

  it('refuses a push of 1,001 new branches whole, before any moves (it made them all), and takes 1,000', {
    timeout: 120_000,
  }, async () => {
    const emulator = new GitHubEmulator({
      clock: new RealClock(),
      rng: new Rng(5),
      fixtures: { repos: 1, issuesPerRepo: 1 },
      latency: false,
    });
    const server = await serve(emulator);
    servers.push(server);
    const repo = emulator.state.repo('fleetbench/repo-1');
    const head = repo.branches.get('main') as string;
    const push = async (branches: string[]) => {
      const res = await fetch(`${server.url}/fleetbench/repo-1.git/git-receive-pack`, {
        method: 'POST',
        body: pushBody(head, branches),
        headers: {
          'content-type': 'application/x-git-receive-pack-request',
          authorization: `Basic ${Buffer.from(`x:${emulator.defaultToken}`).toString('base64')}`,
        },
      });
      return { status: res.status, text: await res.text() };
    };
    const over = Array.from({ length: PUSH_BOUNDS.maxRefUpdates + 1 }, (_, i) => `many/${i}`);
    const refused = await push(over);
    expect(refused.status).toBe(200);
    expect(refused.text).toContain('ng refs/heads/many/0 pre-receive hook declined');
    expect([...repo.branches.keys()].filter((b) => b.startsWith('many/'))).toEqual([]);
    const taken = await push(over.slice(1));
    expect(taken.text).toContain('ok refs/heads/many/1000');
    expect([...repo.branches.keys()].filter((b) => b.startsWith('many/')).length).toBe(
      PUSH_BOUNDS.maxRefUpdates,
    );
    // git clone still sees the repository whole, the new branches with it.
    const into = join(dir, 'clone');
    await runGit(['clone', '--quiet', '--mirror', `${server.url}/fleetbench/repo-1.git`, into], dir, env);
    const refs = await runGit(['for-each-ref', '--format=%(refname)', 'refs/heads/many'], into, env);
    expect(refs.split('\n').length).toBe(PUSH_BOUNDS.maxRefUpdates);
  });

  it('property: the hook takes a push exactly when it updates few enough refs and leaves few enough branches and tags', {
    timeout: 120_000,
  }, async () => {
    const bare = join(dir, 'hook.git');
    await runGit(['init', '--bare', '--quiet', bare], dir, env);
    const sha = await runGit(
      ['hash-object', '-t', 'commit', '-w', '--stdin'],
      bare,
      env,
      'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n\nx\n',
    );
    const bounds = { maxRefUpdates: 5, maxBranches: 4, maxTags: 3 };
    const hook = join(dir, 'pre-receive');
    writeFileSync(hook, preReceiveHook(bounds), { mode: 0o755 });
    const run = (input: string) =>
      new Promise<{ code: number; stderr: string }>((resolve) => {
        const child = execFile(
          'sh',
          [hook],
          { cwd: bare, env: { ...env, GIT_DIR: bare } },
          (error, _out, stderr) =>
            resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stderr }),
        );
        child.stdin?.end(input);
      });
    const kind = fc.constantFrom('heads', 'tags');
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          existing: fc.record({ heads: fc.nat(5), tags: fc.nat(4) }),
          updates: fc.array(fc.record({ kind, op: fc.constantFrom('create', 'move', 'delete') }), {
            maxLength: 8,
          }),
        }),
        async ({ existing, updates }) => {
          // The repository's refs as the push finds them.
          const names = (k: string, n: number) => Array.from({ length: n }, (_, i) => `refs/${k}/old-${i}`);
          const have = [...names('heads', existing.heads), ...names('tags', existing.tags)];
          await runGit(['for-each-ref', '--format=delete %(refname)', 'refs/'], bare, env).then((out) =>
            out ? runGit(['update-ref', '--stdin'], bare, env, `${out}\n`) : '',
          );
          if (have.length > 0)
            await runGit(
              ['update-ref', '--stdin'],
              bare,
              env,
              have.map((r) => `create ${r} ${sha}\n`).join(''),
            );
          const count = { heads: existing.heads, tags: existing.tags };
          const lines = updates.map((u, i) => {
            const old = u.op === 'create' ? ZERO : sha;
            const next = u.op === 'delete' ? ZERO : sha;
            if (u.op === 'create') count[u.kind as 'heads' | 'tags']++;
            if (u.op === 'delete') count[u.kind as 'heads' | 'tags']--;
            return `${old} ${next} refs/${u.kind}/new-${i}\n`;
          });
          // A push that leaves fewer refs than it found is never refused for their number.
          const expected =
            updates.length <= bounds.maxRefUpdates &&
            (count.heads <= bounds.maxBranches || count.heads <= existing.heads) &&
            (count.tags <= bounds.maxTags || count.tags <= existing.tags);
          const result = await run(lines.join(''));
          expect(result.code === 0, `${lines.join('')}${result.stderr}`).toBe(expected);
          if (!expected) expect(result.stderr).toMatch(/^push refused: .*\(fleetbench docs\/limits\.md\)\n$/);
        },
      ),
      { numRuns: 40 },
    );
  });
});
