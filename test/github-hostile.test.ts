/**
 * Issue 49's GitHub cases, through the real `fleetbench github serve` process: a branch name
 * above U+00FF in `POST git/refs` (its Location header once killed the server), `refs/heads/HEAD`
 * (git refuses it as a branch; a property test holds the emulator's ref-name rules to git's own
 * `check-ref-format`), SIGTERM with requests in flight (out within 5 s, the trace closed and
 * complete, each in-flight request recorded as cancelled), and a probe answered within 2 s while
 * a megabyte word and a thousand clients at once hit the server.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { validRefName } from '../src/github/world/refs.ts';
import { readTrace } from '../src/trace/index.ts';
import { newConnectionWaitsDuring, probesOver, slowestAnswerDuring } from './helpers/probe.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const dir = scratchDir('fleetbench-gh-hostile-');
afterAll(stopAll);
const gitTool = systemTool('git', ['--version'], 'git');
// hey has no --version; one request to a closed port exits 0 when it runs at all.
const heyTool = systemTool('hey', ['-n', '1', '-c', '1', 'http://127.0.0.1:1/'], 'hey');

interface Info {
  url: string;
  token: string;
  adminToken: string;
}

async function serve(args: string[] = []) {
  const server = await startCliServer<Info>(['github', 'serve', ...args]);
  const auth = { authorization: `token ${server.info.token}`, 'content-type': 'application/json' };
  return { server, auth, url: server.info.url };
}

describe('github serve: ref names', () => {
  it('a branch name above U+00FF: created, its Location percent-encoded, and the server answers on', async () => {
    const { server, auth, url } = await serve();
    const main = (await (
      await fetch(`${url}/repos/fleetbench/repo-1/branches/main`, { headers: auth })
    ).json()) as { commit: { sha: string } };
    const created = await fetch(`${url}/repos/fleetbench/repo-1/git/refs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ ref: 'refs/heads/gałąź', sha: main.commit.sha }),
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(
      `${url}/repos/fleetbench/repo-1/git/refs/heads/ga%C5%82%C4%85%C5%BA`,
    );
    expect(((await created.json()) as { ref: string }).ref).toBe('refs/heads/gałąź');
    // Later requests are answered, the branch among them.
    const got = await fetch(`${url}/repos/fleetbench/repo-1/git/ref/heads/ga%C5%82%C4%85%C5%BA`, {
      headers: auth,
    });
    expect(got.status).toBe(200);
    expect((await fetch(`${url}/rate_limit`, { headers: auth })).status).toBe(200);
    expect(server.process.exitCode).toBeNull();
  });

  it('refs/heads/HEAD is refused as git refuses a branch named HEAD', async () => {
    const { auth, url } = await serve();
    const main = (await (
      await fetch(`${url}/repos/fleetbench/repo-1/branches/main`, { headers: auth })
    ).json()) as { commit: { sha: string } };
    const refused = await fetch(`${url}/repos/fleetbench/repo-1/git/refs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ ref: 'refs/heads/HEAD', sha: main.commit.sha }),
    });
    expect(refused.status).toBe(422);
    expect(((await refused.json()) as { message: string }).message).toBe(
      'refs/heads/HEAD is not a valid ref name.',
    );
    const branches = (await (
      await fetch(`${url}/repos/fleetbench/repo-1/branches`, { headers: auth })
    ).json()) as { name: string }[];
    expect(branches.map((b) => b.name)).not.toContain('HEAD');
  });
});

describe.skipIf(gitTool.skip)('ref names: the emulator’s rules are git’s', () => {
  it('needs git', () => gitTool.require());

  /** git's own verdict: a valid ref name, and a name `git branch` takes. */
  function gitTakes(branch: string): boolean {
    const ref = spawnSync('git', ['check-ref-format', `refs/heads/${branch}`], { stdio: 'ignore' });
    const asBranch = spawnSync('git', ['check-ref-format', '--branch', branch], {
      stdio: 'ignore',
      cwd: dir,
      env: { PATH: process.env.PATH, GIT_CEILING_DIRECTORIES: dir, HOME: dir },
    });
    return ref.status === 0 && asBranch.status === 0;
  }

  it('agrees with `git check-ref-format` on names built from the characters that matter', () => {
    const pieces = [
      'a',
      'b',
      '.',
      '/',
      '-',
      '@',
      '{',
      '}',
      '~',
      '^',
      ':',
      '?',
      '*',
      '[',
      '\\',
      ' ',
      'ł',
      '.lock',
      'HEAD',
      '\x7f',
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...pieces), { minLength: 1, maxLength: 8 }), (parts) => {
        const branch = parts.join('');
        // `--branch` expands `@{-N}` (a previous branch) and `@` alone; no ref name holds those.
        fc.pre(!branch.startsWith('@{-') && branch !== '@');
        expect(validRefName(`refs/heads/${branch}`), JSON.stringify(branch)).toBe(gitTakes(branch));
      }),
      { numRuns: 200 },
    );
  }, 120_000);
});

describe('github serve: SIGTERM with requests in flight', () => {
  it('exits within 5 s, the trace closed and complete, every in-flight request recorded as cancelled', async () => {
    const tracePath = join(dir, 'sigterm.jsonl');
    // A median latency of 20 s: every request below is still in flight when the signal comes.
    const { server, auth, url } = await serve(['--trace', tracePath, '--latency', '20000:30000']);
    const inFlight = Array.from({ length: 12 }, (_, i) =>
      fetch(`${url}/repos/fleetbench/repo-1/issues/${(i % 3) + 1}`, { headers: auth }).then(
        (res) => res.status,
        () => 'gone',
      ),
    );
    // One more whose body is still arriving (a slow upload).
    const slow = connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise<void>((resolve) => slow.once('connect', () => resolve()));
    slow.on('error', () => undefined);
    slow.write(
      `POST /repos/fleetbench/repo-1/issues HTTP/1.1\r\nhost: x\r\nauthorization: token ${server.info.token}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"title":`,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const stopped = Date.now();
    server.process.kill('SIGTERM');
    const code = await server.exited;
    const tookMs = Date.now() - stopped;
    slow.destroy();
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(5_000);
    await Promise.all(inFlight);
    // The trace reads whole (footer last), and holds the 13 requests, each cancelled.
    const trace = await readTrace(tracePath);
    expect(trace.stats.footer).toMatchObject({ reason: 'completed', counts: { api: 13 } });
    const api = trace.records.filter((r) => r.kind === 'api');
    expect(api).toHaveLength(13);
    for (const record of api) {
      expect(record).toMatchObject({ status: null, error: expect.stringMatching(/^cancelled/) });
    }
    expect(api.filter((r) => r.route === '/repos/{owner}/{repo}/issues/{issue_number}')).toHaveLength(12);
    expect(api.filter((r) => r.method === 'POST' && r.route === '/repos/{owner}/{repo}/issues')).toHaveLength(
      1,
    );
  }, 60_000);
});

describe.skipIf(heyTool.skip)('github serve under a flood', () => {
  it('needs hey', () => heyTool.require());

  it('answers a probe within 2 s while a 1 MB word and 1,000 clients at once hit it', async () => {
    const { server, auth, url } = await serve(['--issues-per-repo', '200']);
    const word = 'w'.repeat(1024 * 1024);
    // The word goes in an issue body (searched below) and in a comment.
    const issue = await fetch(`${url}/repos/fleetbench/repo-1/issues`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ title: 'a long word', body: word }),
    });
    expect(issue.status).toBe(201);
    const { number } = (await issue.json()) as { number: number };
    expect(
      // Through the admin API: GitHub's API takes a comment of at most 65,536 characters.
      (
        await fetch(`${url}/_fleetbench/post-issue-comment`, {
          method: 'POST',
          headers: { authorization: `Bearer ${server.info.adminToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ repo: 'fleetbench/repo-1', number, body: word }),
        })
      ).status,
    ).toBe(200);
    const search = `${url}/search/issues?q=${'w'.repeat(2000)}+repo:fleetbench/repo-1+in:body,comments`;
    const slowest = await slowestAnswerDuring(
      `${url}/rate_limit`,
      async () => {
        const flood = (target: string, extra: string[] = []) =>
          new Promise<void>((resolve) => {
            const child = spawn(
              'hey',
              [
                '-z',
                '6s',
                '-c',
                '500',
                '-H',
                `Authorization: token ${auth.authorization.slice(6)}`,
                ...extra,
                target,
              ],
              { stdio: 'ignore' },
            );
            child.once('exit', () => resolve());
          });
        const graphql = JSON.stringify({
          query: `{ search(query: "${word}", type: ISSUE, first: 1) { issueCount } }`,
        });
        const bodyFile = join(dir, 'graphql.json');
        execFileSync('sh', ['-c', `cat > ${bodyFile}`], { input: graphql });
        await Promise.all([
          flood(search),
          flood(`${url}/graphql`, ['-m', 'POST', '-T', 'application/json', '-D', bodyFile]),
        ]);
      },
      { headers: auth },
      { serverPid: server.process.pid },
    );
    expect(slowest).toBeLessThan(2_000);
  }, 90_000);

  it('accepts a new client within 9 s, and after the first 4 s two in three within 2 s, while hey -c 1000 connects for 12 s', async () => {
    const { server, auth, url } = await serve();
    const ended = new Promise<void>((resolve) => {
      const flood = spawn(
        'hey',
        [
          '-z',
          '12s',
          '-c',
          '1000',
          '-H',
          auth.authorization.replace('token', 'Authorization: token'),
          `${url}/repos/fleetbench/repo-1/issues`,
        ],
        { stdio: 'ignore' },
      );
      flood.once('exit', () => resolve());
    });
    // libuv accepts one connection a turn of the event loop: while the server's turns were
    // long with the flood's requests, a new client waited behind the thousand in the kernel's
    // accept queue (3.9-15 s on the code before; docs/performance.md, "A new client under a flood").
    // The probes that start while hey's thousand connect wait until the last of them is
    // accepted: 0.6-1.9 s on a quiet machine, but with the whole suite beside it on two cores
    // 5-6 s (CI; the probes of the first 4 s). So: none over 9 s, and of those that start after
    // the first 4 s, two in three within 2 s. The code before fails both at load 5, its probes
    // waiting out the flood (docs/limits.md).
    const waits = await newConnectionWaitsDuring(`${url}/rate_limit`, () => ended, {
      headers: auth,
      serverPid: server.process.pid,
    });
    expect(waits.length).toBeGreaterThan(30);
    expect(probesOver(waits, 9_000)).toEqual([]);
    const afterTheStorm = waits.slice(4_000 / 250);
    const late = probesOver(afterTheStorm, 2_000).length;
    expect(late, probesOver(waits, 2_000).join('\n')).toBeLessThanOrEqual(afterTheStorm.length / 3);
  }, 60_000);
});
