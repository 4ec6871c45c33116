/**
 * git's smart HTTP on the emulator's server (issue 46's git bullet), driven with the real `git`
 * CLI over plain HTTP and over TLS: clone with no token, push with a token as the password, the
 * push moving the branch in the world (REST sees it, Octokit opens a pull request on it with its
 * real head SHA), the world's own changes (a REST merge, a branch made over REST) fetched by git,
 * GitHub's refusals, the bounds, and the trace (one `github.git` span per request, no quota).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import { afterAll, describe, expect, it } from 'vitest';
import { GIT_HTTP_LIMITS } from '../src/base/limits.ts';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { BackendGate } from '../src/github/git/backend.ts';
import { GitHubEmulator, generateSelfSignedCert, type RunningGitHubServer } from '../src/github/index.ts';
import type { SpanRecord } from '../src/trace/schema.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { cli } from './helpers/cli.ts';
import { gitTestEnv } from './helpers/git.ts';
import { serve } from './helpers/github.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const gitTool = systemTool('git', ['--version'], 'git');
const dir = scratchDir('fleetbench-git-http-');
let clones = 0;

interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The real git CLI, with no configuration of the machine's or the user's. */
function git(args: string[], cwd = dir, env: Record<string, string> = {}): Promise<GitResult> {
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      {
        cwd,
        env: gitTestEnv(dir, env),
        timeout: 60_000,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function ok(args: string[], cwd = dir, env: Record<string, string> = {}): Promise<string> {
  const result = await git(args, cwd, env);
  if (result.code !== 0) throw new Error(`git ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return result.stdout.trim();
}

async function world(tls = false) {
  const sink = new MemorySink();
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(11),
    trace: sink,
    fixtures: { repos: 1, issuesPerRepo: 3, pullsPerRepo: 1 },
    latency: false,
  });
  const cert = tls ? generateSelfSignedCert(join(dir, `tls-${clones}`)) : undefined;
  const server = await serve(emulator, cert);
  const octokit = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
  const repo = emulator.state.repo('fleetbench/repo-1');
  /** The repository URL with a token as basic auth's password (the user name is anything). */
  const pushUrl = (user = 'x-access-token', token = emulator.defaultToken, suffix = '.git') =>
    `${server.url.replace('://', `://${user}:${token}@`)}/fleetbench/repo-1${suffix}`;
  const env: Record<string, string> = cert ? { GIT_SSL_CAINFO: cert.certPath } : {};
  const clone = async (url = `${server.url}/fleetbench/repo-1`) => {
    const into = join(dir, `clone-${++clones}`);
    await ok(['clone', '--quiet', url, into], dir, env);
    return into;
  };
  const spans = () =>
    sink.records.filter((r): r is SpanRecord => r.kind === 'span' && r.name === 'github.git');
  return { emulator, server, octokit, repo, pushUrl, env, clone, spans, sink };
}

/** A commit on a new branch in a clone. */
async function commitOn(clone: string, branch: string, file: string, text: string): Promise<string> {
  await ok(['checkout', '--quiet', '-B', branch], clone);
  writeFileSync(join(clone, file), text);
  await ok(['add', file], clone);
  await ok(['commit', '--quiet', '-m', `Add ${file}`], clone);
  return ok(['rev-parse', 'HEAD'], clone);
}

function rawRequest(
  server: RunningGitHubServer,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.url}${path}`, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe.skipIf(gitTool.skip)('git smart HTTP', () => {
  it('needs git', () => gitTool.require());

  it('clones with no token, at the world’s SHAs (the same seed, the same SHAs), under both URL forms', async () => {
    const { emulator, server, repo, clone, spans } = await world();
    const plain = await clone();
    const dotGit = await clone(`${server.url}/fleetbench/repo-1.git`);
    for (const into of [plain, dotGit]) {
      expect(await ok(['rev-parse', 'HEAD'], into)).toBe(repo.branches.get('main'));
      expect(await ok(['rev-parse', 'origin/agent/issue-1'], into)).toBe(repo.branches.get('agent/issue-1'));
      expect(await ok(['show', 'HEAD:README.md'], into)).toBe('# repo-1');
    }
    // The repository the server keeps holds exactly the objects the world named, sound.
    const served = join(server.git!.repositories.root, `${repo.id}.git`);
    expect(await git(['fsck', '--strict', '--no-dangling'], served)).toMatchObject({ code: 0 });
    // Same fixtures and seed, another emulator: the same commits.
    const again = new GitHubEmulator({
      clock: new RealClock(),
      rng: new Rng(11),
      fixtures: { repos: 1, issuesPerRepo: 3, pullsPerRepo: 1 },
      latency: false,
    });
    expect(again.state.repo('fleetbench/repo-1').branches).toEqual(repo.branches);
    expect(await ok(['log', '-1', '--format=%an <%ae> %aI', 'origin/main'], plain)).toBe(
      'fleetbench <fleetbench@users.noreply.github.com> 2025-12-31T22:00:00+00:00',
    );
    // Every request is a github.git span, with no token, and none is an API call.
    const records = spans();
    expect(records.length).toBeGreaterThanOrEqual(4);
    expect(records.every((r) => r.outcome === 'ok')).toBe(true);
    expect(emulator.stats().requests).toBe(0);
  });

  it('a push with a token moves the branch in the world: REST sees it, a pull request opens on it', async () => {
    const { emulator, octokit, repo, clone, pushUrl, spans } = await world();
    const into = await clone();
    const before = (await octokit.request('GET /rate_limit')).data.resources.core.used;
    const head = await commitOn(into, 'agent/feature', 'feature.txt', 'a feature\n');
    const pushed = await git(['push', pushUrl(), 'agent/feature'], into);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.stderr).toContain('[new branch]');

    const branch = await octokit.request('GET /repos/{owner}/{repo}/branches/{branch}', {
      owner: 'fleetbench',
      repo: 'repo-1',
      branch: 'agent/feature',
    });
    expect(branch.data.name).toBe('agent/feature');
    expect(branch.data.commit.sha).toBe(head);
    expect(branch.data.commit.commit.message).toBe('Add feature.txt');
    expect(branch.data.commit.commit.author?.email).toBe('agent@example.com');
    expect(branch.data.commit.parents.map((p) => p.sha)).toEqual([repo.branches.get('main')]);

    const pull = await octokit.request('POST /repos/{owner}/{repo}/pulls', {
      owner: 'fleetbench',
      repo: 'repo-1',
      head: 'agent/feature',
      base: 'main',
      title: 'A feature',
    });
    expect(pull.status).toBe(201);
    expect(pull.data.head.sha).toBe(head);
    const commits = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/commits', {
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: pull.data.number,
    });
    expect(commits.data.map((c) => c.sha)).toEqual([head]);

    // Another commit on the pull request's branch moves its head, as a push does on GitHub.
    const second = await commitOn(into, 'agent/feature', 'more.txt', 'more\n');
    await ok(['push', '--quiet', pushUrl('anyone'), 'agent/feature'], into);
    const moved = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: pull.data.number,
    });
    expect(moved.data.head.sha).toBe(second);
    expect(moved.data.commits).toBe(2);

    // Git's requests cost no quota; the push's span names its pusher and what it changed.
    const after = (await octokit.request('GET /rate_limit')).data.resources.core.used;
    expect(after - before).toBe(4); // the four REST calls above (rate_limit is free)
    const pushes = spans().filter(
      (r) => r.labels?.service === 'git-receive-pack' && r.labels.request === 'rpc',
    );
    expect(pushes).toHaveLength(2);
    expect(pushes[0]).toMatchObject({
      outcome: 'ok',
      labels: { status: '200' },
      data: {
        repo: 'fleetbench/repo-1',
        user: emulator.state.defaultUser.login,
        updates: [{ branch: 'agent/feature', before: null, after: head }],
      },
    });
  });

  it('fetches what the world changed: a branch made over REST, a pull request merged over REST', async () => {
    const { octokit, repo, clone, pushUrl } = await world();
    const into = await clone();
    const feature = await commitOn(into, 'agent/merge-me', 'merge.txt', 'merged\n');
    await ok(['push', '--quiet', pushUrl(), 'agent/merge-me'], into);
    // main moves under the branch too (an admin push): the merge has two sides to join.
    const other = await clone();
    const onMain = await commitOn(other, 'main', 'main.txt', 'on main\n');
    await ok(['push', '--quiet', pushUrl(), 'main'], other);
    const pull = await octokit.request('POST /repos/{owner}/{repo}/pulls', {
      owner: 'fleetbench',
      repo: 'repo-1',
      head: 'agent/merge-me',
      base: 'main',
      title: 'Merge me',
    });
    repo.requiredReviews = 0; // no review needed to merge in this world
    const merged = await octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: pull.data.number,
    });
    expect(merged.data.merged).toBe(true);
    await octokit.request('POST /repos/{owner}/{repo}/git/refs', {
      owner: 'fleetbench',
      repo: 'repo-1',
      ref: 'refs/heads/made-over-rest',
      sha: feature,
    });
    await ok(['fetch', '--quiet', 'origin'], into);
    expect(await ok(['rev-parse', 'origin/main'], into)).toBe(merged.data.sha);
    expect(await ok(['rev-parse', 'origin/made-over-rest'], into)).toBe(feature);
    expect((await ok(['log', '-1', '--format=%P', 'origin/main'], into)).split(' ')).toEqual([
      onMain,
      feature,
    ]);
    // git's merge of the two trees: both files are there.
    expect(await ok(['ls-tree', '--name-only', 'origin/main'], into)).toBe('README.md\nmain.txt\nmerge.txt');
  });

  it('refuses what GitHub refuses: no token, a wrong token, an unknown repository, deleting the default branch', async () => {
    const { server, repo, clone, pushUrl, octokit } = await world();
    const into = await clone();
    await commitOn(into, 'agent/nope', 'nope.txt', 'no\n');
    const anonymous = await git(['push', `${server.url}/fleetbench/repo-1`, 'agent/nope'], into);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toMatch(/Authentication failed|could not read Username/);
    const wrong = await git(['push', pushUrl('x-access-token', 'ghp_not-a-token'), 'agent/nope'], into);
    expect(wrong.code).not.toBe(0);
    expect(repo.branches.has('agent/nope')).toBe(false);
    const missing = await git(['ls-remote', `${server.url}/fleetbench/no-such-repo.git`]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('not found');

    const deleteMain = await git(['push', pushUrl(), ':main'], into);
    expect(deleteMain.code).not.toBe(0);
    expect(deleteMain.stderr).toContain('refusing to delete the current branch');
    expect(repo.branches.has('main')).toBe(true);

    // A branch deleted by a push is deleted in the world, and its open pull request closed.
    await ok(['push', '--quiet', pushUrl(), 'agent/nope'], into);
    const pull = await octokit.request('POST /repos/{owner}/{repo}/pulls', {
      owner: 'fleetbench',
      repo: 'repo-1',
      head: 'agent/nope',
      base: 'main',
      title: 'Doomed',
    });
    await ok(['push', '--quiet', pushUrl(), '--delete', 'agent/nope'], into);
    expect(repo.branches.has('agent/nope')).toBe(false);
    expect(repo.pulls.get(pull.data.number)?.issue.state).toBe('closed');
  });

  it('over TLS with the emulator’s self-signed certificate (GIT_SSL_CAINFO)', async () => {
    const { server, repo, clone, pushUrl, env, octokit } = await world(true);
    expect(server.url).toMatch(/^https:/);
    const into = await clone();
    expect(await ok(['rev-parse', 'HEAD'], into)).toBe(repo.branches.get('main'));
    const head = await commitOn(into, 'agent/tls', 'tls.txt', 'over TLS\n');
    await ok(['push', '--quiet', pushUrl(), 'agent/tls'], into, env);
    expect(repo.branches.get('agent/tls')).toBe(head);
    // Without the certificate git refuses the server, as it would any unknown certificate.
    const untrusted = await git(['ls-remote', `${server.url}/fleetbench/repo-1`]);
    expect(untrusted.code).not.toBe(0);
    expect(octokit).toBeDefined();
  });

  it('bounds a request body (1e13 declared: 413 unread) and answers what git never sends 404', async () => {
    const { server } = await world();
    const huge = await rawRequest(server, 'POST', '/fleetbench/repo-1.git/git-upload-pack', {
      'content-type': 'application/x-git-upload-pack-request',
      'content-length': String(1e13),
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toContain(`${GIT_HTTP_LIMITS.maxBodyBytes}`);
    const dumb = await rawRequest(server, 'GET', '/fleetbench/repo-1.git/info/refs', {});
    expect(dumb.status).toBe(404);
    const wrongMethod = await rawRequest(server, 'GET', '/fleetbench/repo-1.git/git-upload-pack', {});
    expect(wrongMethod.status).toBe(404);
    // The server goes on answering git.
    const refs = await git(['ls-remote', `${server.url}/fleetbench/repo-1`]);
    expect(refs.code).toBe(0);
  });

  it('a chunked body past the bound is stopped when it passes it (413), and git is served on', async () => {
    const { server, spans } = await world();
    // A protocol v2 ls-refs whose arguments never end: upload-pack reads every byte sent.
    const argument = '0009peel\n';
    const chunk = Buffer.from(argument.repeat(Math.floor((1024 * 1024) / argument.length)));
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${server.url}/fleetbench/repo-1.git/git-upload-pack`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/x-git-upload-pack-request', 'git-protocol': 'version=2' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (error) =>
        (error as NodeJS.ErrnoException).code === 'EPIPE' ? undefined : reject(error),
      );
      req.write('0014command=ls-refs\n0001');
      let sent = 0;
      const pump = () => {
        while (sent <= GIT_HTTP_LIMITS.maxBodyBytes + chunk.length) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
        req.end('0000');
      };
      pump();
    });
    expect(status).toBe(413);
    const refused = spans().find((r) => r.labels?.status === '413');
    expect(refused).toMatchObject({ outcome: 'error' });
    const read = refused?.data?.bytesIn as number;
    expect(read).toBeGreaterThan(GIT_HTTP_LIMITS.maxBodyBytes);
    expect(read).toBeLessThan(GIT_HTTP_LIMITS.maxBodyBytes + 4 * chunk.length);
    expect((await git(['ls-remote', `${server.url}/fleetbench/repo-1`])).code).toBe(0);
  }, 60_000);
});

describe.skipIf(gitTool.skip)('fleetbench github serve: git', () => {
  afterAll(stopAll);

  it('prints the git URL, serves a clone and a push, keeps --git-dir, ends the trace with the git spans', async () => {
    const gitDir = join(dir, 'served-repos');
    const tracePath = join(dir, 'served.jsonl');
    const server = await startCliServer<{ gitUrl: string; token: string }>([
      'github',
      'serve',
      '--git-dir',
      gitDir,
      '--trace',
      tracePath,
    ]);
    const into = join(dir, 'cli-clone');
    await ok(['clone', '--quiet', server.info.gitUrl, into]);
    await commitOn(into, 'agent/cli', 'cli.txt', 'from the CLI\n');
    await ok(
      [
        'push',
        '--quiet',
        server.info.gitUrl.replace('://', `://x-access-token:${server.info.token}@`),
        'agent/cli',
      ],
      into,
    );
    await server.stop();
    expect(await server.exited).toBe(0);
    // The repositories stay where they were asked to go, and the pushed branch is in them.
    const [repository] = readdirSync(gitDir).filter((name) => name.endsWith('.git'));
    expect(repository).toMatch(/^\d+\.git$/);
    expect(await ok(['rev-parse', 'agent/cli'], join(gitDir, repository!))).toBe(
      await ok(['rev-parse', 'HEAD'], into),
    );
    const lines = readFileSync(tracePath, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.at(-1)).toMatchObject({ kind: 'end', reason: 'completed' });
    expect(lines.filter((r) => r.kind === 'span' && r.name === 'github.git').length).toBeGreaterThanOrEqual(
      4,
    );
    // The same directory again: taken (fleetbench made it). One with someone else's files, or a link: refused.
    const again = await startCliServer(['github', 'serve', '--git-dir', gitDir]);
    await again.stop();
    const foreign = join(dir, 'foreign');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'notes.txt'), 'mine\n');
    const link = join(dir, 'link');
    symlinkSync(foreign, link);
    for (const target of [foreign, link]) {
      const refused = await cli(['github', 'serve', '--git-dir', target]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`--git-dir ${target}`);
    }
    expect(readdirSync(foreign)).toEqual(['notes.txt']);
  }, 60_000);
});

describe('the git backends’ gate', () => {
  it('runs a bounded number at once and refuses past a bounded queue', async () => {
    const gate = new BackendGate(2, 1);
    const first = await gate.acquire()!;
    const second = await gate.acquire()!;
    const queued = gate.acquire();
    expect(queued).toBeDefined();
    expect(gate.acquire()).toBeUndefined();
    let third = false;
    void queued!.then(() => {
      third = true;
    });
    await Promise.resolve();
    expect(third).toBe(false);
    first();
    first(); // idempotent
    await queued;
    expect(third).toBe(true);
    second();
    expect(gate.acquire()).toBeDefined();
  });
});
