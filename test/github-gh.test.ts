/**
 * The real `gh` CLI (Debian's gh, installed by .ci/run) against the emulator over TLS with a
 * generated self-signed certificate: GH_HOST=127.0.0.1:PORT, GH_ENTERPRISE_TOKEN, SSL_CERT_FILE
 * and a scratch GH_CONFIG_DIR, exactly as docs/github-emulator.md tells users.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator, generateSelfSignedCert, HttpTransport } from '../src/github/index.ts';
import { Rng } from '../src/rng.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-gh-');
const ghPresent = spawnSync('gh', ['--version']).status === 0;

interface GhResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('gh CLI against the emulator over TLS', () => {
  const sink = new MemorySink();
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(5),
    trace: sink,
    fixtures: { repos: 1, issuesPerRepo: 5, pullsPerRepo: 2 },
    latency: false,
  });
  let host = '';
  let certPath = '';
  let cert = '';

  beforeAll(async () => {
    expect(ghPresent, 'the gh CLI must be installed (.ci/run installs Debian gh)').toBe(true);
    const made = generateSelfSignedCert(join(dir, 'tls'));
    certPath = made.certPath;
    cert = made.cert;
    const server = await serve(emulator, made);
    host = `127.0.0.1:${server.port}`;
  });

  function gh(args: string[], token: string): Promise<GhResult> {
    const config = join(dir, `config-${Math.random().toString(36).slice(2)}`);
    mkdirSync(config);
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of [
      'GH_TOKEN',
      'GITHUB_TOKEN',
      'GH_REPO',
      'GH_ENTERPRISE_TOKEN',
      'GITHUB_ENTERPRISE_TOKEN',
      'GH_DEBUG',
    ]) {
      delete env[name];
    }
    Object.assign(env, {
      GH_HOST: host,
      GH_ENTERPRISE_TOKEN: token,
      SSL_CERT_FILE: certPath,
      GH_CONFIG_DIR: config,
      GH_PROMPT_DISABLED: '1',
      GH_NO_UPDATE_NOTIFIER: '1',
      GH_PAGER: 'cat',
      NO_COLOR: '1',
    });
    return new Promise((resolve, reject) => {
      // Asynchronous on purpose: the server runs in this process and must keep answering.
      const child = spawn('gh', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  const repoArg = () => ['-R', `${host}/fleetbench/repo-1`];

  it('gh api -i shows the rate-limit headers, with exact numbers', async () => {
    const { token } = emulator.admin.mintToken({ user: 'gh-user-1', session: 'gh-s1', source: 'cli' });
    const first = await gh(['api', '-i', 'repos/fleetbench/repo-1/pulls'], token);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^HTTP\/2\.0 200 OK/);
    expect(first.stdout).toContain('X-Ratelimit-Limit: 5000');
    expect(first.stdout).toContain('X-Ratelimit-Remaining: 4999');
    expect(first.stdout).toContain('X-Ratelimit-Used: 1');
    expect(first.stdout).toContain('X-Ratelimit-Resource: core');
    expect(first.stdout).toMatch(/X-Ratelimit-Reset: \d{10}/);
    const body = JSON.parse(first.stdout.slice(first.stdout.indexOf('\r\n\r\n') + 4));
    expect(body.map((p: { number: number }) => p.number)).toEqual([7, 6]);
    const second = await gh(['api', '-i', 'repos/fleetbench/repo-1/issues/1'], token);
    expect(second.stdout).toContain('X-Ratelimit-Remaining: 4998');
    const records = sink.records.filter((r) => r.kind === 'api' && r.session === 'gh-s1');
    expect(records.map((r) => (r.kind === 'api' ? [r.route, r.status, r.source] : []))).toEqual([
      ['/repos/{owner}/{repo}/pulls', 200, 'cli'],
      ['/repos/{owner}/{repo}/issues/{issue_number}', 200, 'cli'],
    ]);
  });

  it('HttpTransport speaks to the same server over TLS, trusting the generated certificate', async () => {
    const { token } = emulator.admin.mintToken({ user: 'transport-user', session: 'tr-1' });
    const transport = new HttpTransport(`https://${host}/api/v3`, { ca: cert, token });
    try {
      const res = await transport.request({
        method: 'GET',
        path: '/repos/fleetbench/repo-1/pulls/6',
        headers: {},
      });
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-used']).toBe('1');
      expect(JSON.parse(res.body).number).toBe(6);
      const gql = await transport.request({
        method: 'POST',
        path: '/graphql',
        headers: {},
        body: JSON.stringify({ query: '{ viewer { login } }' }),
      });
      expect(JSON.parse(gql.body).data.viewer.login).toBe('transport-user');
    } finally {
      transport.close();
    }
    const untrusted = new HttpTransport(`https://${host}`, { token });
    await expect(untrusted.request({ method: 'GET', path: '/user', headers: {} })).rejects.toThrow(
      /self[- ]signed/,
    );
    untrusted.close();
  });

  it('gh api graphql reaches /api/graphql and is charged GraphQL points', async () => {
    const { token } = emulator.admin.mintToken({ user: 'gh-user-2' });
    const res = await gh(
      ['api', 'graphql', '-f', 'query={ viewer { login } rateLimit { cost remaining used } }'],
      token,
    );
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({
      data: { viewer: { login: 'gh-user-2' }, rateLimit: { cost: 1, remaining: 4999, used: 1 } },
    });
  });

  it('gh pr list --head finds the pull request of a branch', async () => {
    const { token } = emulator.admin.mintToken({ user: 'gh-user-3' });
    const res = await gh(['pr', 'list', ...repoArg(), '--head', 'agent/issue-2'], token);
    expect(res.code).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.split('\t').slice(0, 4)).toEqual([
      '7',
      expect.stringMatching(/^Fix #2: /),
      'agent/issue-2',
      'OPEN',
    ]);
    const none = await gh(['pr', 'list', ...repoArg(), '--head', 'no-such-branch'], token);
    expect(none.stdout.trim()).toBe('');
  });

  it('gh pr view shows the pull request', async () => {
    const { token } = emulator.admin.mintToken({ user: 'gh-user-4' });
    const res = await gh(['pr', 'view', '6', ...repoArg()], token);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^title:\tFix #1: /m);
    expect(res.stdout).toMatch(/^state:\tOPEN$/m);
    expect(res.stdout).toMatch(/^number:\t6$/m);
    expect(res.stdout).toContain('Closes #1');
    const json = await gh(
      ['pr', 'view', '6', ...repoArg(), '--json', 'number,state,reviewDecision,mergeable,headRefName'],
      token,
    );
    expect(JSON.parse(json.stdout)).toEqual({
      number: 6,
      state: 'OPEN',
      reviewDecision: 'REVIEW_REQUIRED',
      mergeable: 'MERGEABLE',
      headRefName: 'agent/issue-1',
    });
  });

  it('gh pr checks follows check runs and statuses set through the admin API', async () => {
    const { token } = emulator.admin.mintToken({ user: 'gh-user-5' });
    const opened = emulator.admin.openPullRequest({
      repo: 'fleetbench/repo-1',
      head: 'agent/issue-4',
      issue: 4,
    });
    emulator.admin.setCheckRun({
      repo: 'fleetbench/repo-1',
      number: opened.number,
      name: 'build',
      status: 'in_progress',
    });
    emulator.admin.setStatus({
      repo: 'fleetbench/repo-1',
      number: opened.number,
      context: 'lint',
      state: 'failure',
    });
    const pending = await gh(['pr', 'checks', String(opened.number), ...repoArg()], token);
    const rows = pending.stdout
      .trim()
      .split('\n')
      .map((l) => l.split('\t').slice(0, 2));
    expect(rows).toEqual(
      expect.arrayContaining([
        ['build', 'pending'],
        ['lint', 'fail'],
      ]),
    );
    expect(pending.code).not.toBe(0);
    emulator.admin.setCheckRun({
      repo: 'fleetbench/repo-1',
      number: opened.number,
      name: 'build',
      conclusion: 'success',
    });
    emulator.admin.setStatus({
      repo: 'fleetbench/repo-1',
      number: opened.number,
      context: 'lint',
      state: 'success',
    });
    const passing = await gh(['pr', 'checks', String(opened.number), ...repoArg()], token);
    expect(passing.code).toBe(0);
    expect(
      passing.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t').slice(0, 2))
        .sort(),
    ).toEqual([
      ['build', 'pass'],
      ['lint', 'pass'],
    ]);
  });

  it('gh issue view shows the issue and its comments', async () => {
    const { token } = emulator.admin.mintToken({ user: 'gh-user-6' });
    emulator.admin.postIssueComment({
      repo: 'fleetbench/repo-1',
      number: 3,
      body: 'Taking this one.',
      user: 'reviewer-2',
    });
    const res = await gh(['issue', 'view', '3', ...repoArg()], token);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^title:\t.+\(#3\)$/m);
    expect(res.stdout).toMatch(/^state:\tOPEN$/m);
    expect(res.stdout).toMatch(/^comments:\t1$/m);
    expect(res.stdout).toContain('Generated issue 3 of fleetbench/repo-1.');
    const comments = await gh(['issue', 'view', '3', ...repoArg(), '--comments'], token);
    expect(comments.stdout).toContain('Taking this one.');
  });
});
