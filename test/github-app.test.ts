/**
 * GitHub App authentication (docs/github-emulator.md, "Apps"): a JWT signed with the App's key
 * finds the installation and mints an installation token, which then acts as the App's bot on
 * the installation's repositories, over HTTP with Octokit as a Probot-style control plane uses
 * it; every malformed JWT is refused with GitHub's 401.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Octokit } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { JWT_MESSAGES } from '../src/github/apps.ts';
import { GitHubEmulator, generateSelfSignedCert } from '../src/github/index.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { BIN } from './helpers/cli.ts';
import { inProcess, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const RestOctokit = Octokit.plugin(restEndpointMethods);
const repo = { owner: 'fleetbench', repo: 'repo-1' };

function b64(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

/** A JWT as GitHub documents it (RS256), with any header or claims. */
function jwt(
  key: KeyObject,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = { alg: 'RS256', typ: 'JWT' },
): string {
  const head = `${b64(header)}.${b64(claims)}`;
  return `${head}.${sign('sha256', Buffer.from(head), key).toString('base64url')}`;
}

async function world() {
  const trace = new MemorySink();
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(5),
    trace,
    fixtures: { repos: 2, issuesPerRepo: 3, pullsPerRepo: 1 },
    latency: false,
    apps: [{ repositories: ['fleetbench/repo-1'] }],
  });
  const server = await serve(emulator);
  const app = emulator.apps.apps[0]!;
  const key = (await import('node:crypto')).createPrivateKey(app.privateKeyPem);
  const now = () => Math.floor(Date.now() / 1000);
  const good = () => jwt(key, { iat: now() - 60, exp: now() + 540, iss: String(app.id) });
  return { emulator, server, app, key, now, good, trace };
}

async function refusal(call: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await call;
  } catch (error) {
    const e = error as { status: number; response?: { data?: { message?: string } } };
    return { status: e.status, message: e.response?.data?.message ?? '' };
  }
  return { status: 200, message: '' };
}

const gitTool = systemTool('git', ['--version'], 'git');

describe('GitHub App authentication', () => {
  it('a JWT finds the installation and mints a token that opens a pull request as the bot', async () => {
    const { emulator, server, app, good, trace } = await world();
    const asApp = new RestOctokit({ baseUrl: server.url, auth: good() });
    const me = await asApp.rest.apps.getAuthenticated();
    expect(me.data).toMatchObject({ id: app.id, slug: 'fleetbench-app' });
    const installation = await asApp.rest.apps.getRepoInstallation(repo);
    expect(installation.data.id).toBe(app.installations[0]!.id);
    expect(installation.data.repository_selection).toBe('selected');
    // A repository the installation was not given: 404, as GitHub answers.
    expect((await refusal(asApp.rest.apps.getRepoInstallation({ ...repo, repo: 'repo-2' }))).status).toBe(
      404,
    );
    const minted = await asApp.rest.apps.createInstallationAccessToken({
      installation_id: installation.data.id,
    });
    expect(minted.status).toBe(201);
    expect(minted.data.token).toMatch(/^ghs_[A-Za-z0-9]{36}$/);
    const expires = Date.parse(minted.data.expires_at);
    expect(expires - Date.now()).toBeGreaterThan(59 * 60_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(3_600_000);

    const asInstallation = new RestOctokit({ baseUrl: server.url, auth: minted.data.token });
    const issues = await asInstallation.rest.issues.listForRepo(repo);
    expect(issues.data.length).toBeGreaterThan(0);
    expect(issues.headers['x-ratelimit-limit']).toBe('5000');
    const listed = await asInstallation.rest.apps.listReposAccessibleToInstallation();
    expect(listed.data.repositories.map((r) => r.full_name)).toEqual(['fleetbench/repo-1']);
    // The App's agent pushed a branch (the push itself is git's, test/github-git-http.test.ts).
    emulator.state.pushBranch(emulator.state.repo('fleetbench/repo-1'), {
      branch: 'app-fix',
      message: 'Fix',
    });
    const pull = await asInstallation.rest.pulls.create({
      ...repo,
      head: 'app-fix',
      base: 'main',
      title: 'Fix from the App',
    });
    expect(pull.data.user?.login).toBe('fleetbench-app[bot]');
    expect(pull.data.user?.type).toBe('Bot');
    // Outside the installation: 404, as for a repository that does not exist.
    expect((await refusal(asInstallation.rest.issues.listForRepo({ ...repo, repo: 'repo-2' }))).status).toBe(
      404,
    );
    // An installation token is no JWT.
    expect(await refusal(asInstallation.rest.apps.getAuthenticated())).toEqual({
      status: 401,
      message: JWT_MESSAGES.undecodable,
    });
    // Charged and traced like any token.
    const calls = trace.records.filter((r) => r.kind === 'api' && r.route === '/repos/{owner}/{repo}/pulls');
    expect(calls).toHaveLength(1);
    // Revoked: refused with GitHub's 401 from then on.
    await asInstallation.rest.apps.revokeInstallationAccessToken();
    expect(await refusal(asInstallation.rest.issues.listForRepo(repo))).toEqual({
      status: 401,
      message: 'Bad credentials',
    });
  });

  it.skipIf(gitTool.skip)(
    'git pushes with an installation token reach the installation repositories only',
    async () => {
      gitTool.require();
      const { emulator, server, app, good } = await world();
      const asApp = new RestOctokit({ baseUrl: server.url, auth: good() });
      const { token } = (
        await asApp.rest.apps.createInstallationAccessToken({ installation_id: app.installations[0]!.id })
      ).data;
      const dir = scratchDir('fleetbench-app-git-');
      const env = {
        PATH: process.env.PATH,
        HOME: dir,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_TERMINAL_PROMPT: '0',
        GIT_AUTHOR_NAME: 'App',
        GIT_AUTHOR_EMAIL: 'app@example.com',
        GIT_COMMITTER_NAME: 'App',
        GIT_COMMITTER_EMAIL: 'app@example.com',
      };
      // Asynchronous: the server answers from this process.
      const git = (args: string[], cwd = dir) =>
        new Promise<{ code: number; stderr: string }>((resolve) => {
          execFile('git', args, { cwd, env, timeout: 60_000 }, (error, _stdout, stderr) =>
            resolve({ code: error ? 1 : 0, stderr }),
          );
        });
      const push = async (name: string) => {
        const into = join(dir, name);
        await git(['clone', '--quiet', `${server.url}/fleetbench/${name}`, into]);
        await git(['checkout', '--quiet', '-b', 'app/change'], into);
        writeFileSync(join(into, 'change.txt'), 'a change\n');
        await git(['add', '-A'], into);
        await git(['commit', '--quiet', '-m', 'Change'], into);
        const url = `${server.url.replace('://', `://x-access-token:${token}@`)}/fleetbench/${name}.git`;
        return git(['push', url, 'app/change'], into);
      };
      const inside = await push('repo-1');
      expect(inside.code, inside.stderr).toBe(0);
      expect(emulator.state.repo('fleetbench/repo-1').branches.has('app/change')).toBe(true);
      const outside = await push('repo-2');
      expect(outside.code).not.toBe(0);
      expect(outside.stderr).toContain('Permission to fleetbench/repo-2.git denied to fleetbench-app[bot].');
      expect(emulator.state.repo('fleetbench/repo-2').branches.has('app/change')).toBe(false);
    },
  );

  it('refuses a bad signature, another key, an expired JWT, alg none and a JWT off the App routes', async () => {
    const { server, app, key, now, good } = await world();
    const call = (auth: string) =>
      refusal(new RestOctokit({ baseUrl: server.url, auth }).rest.apps.getAuthenticated());
    const claims = { iat: now() - 60, exp: now() + 540, iss: String(app.id) };
    const parts = good().split('.');
    const flipped = `${parts[0]}.${parts[1]}.${parts[2]!.startsWith('A') ? 'B' : 'A'}${parts[2]!.slice(1)}`;
    expect(await call(flipped)).toEqual({ status: 401, message: JWT_MESSAGES.undecodable });
    // A forged JWT with a body: refused before the body is read, with the same answer.
    const forged = new RestOctokit({ baseUrl: server.url, auth: flipped });
    expect(
      await refusal(
        forged.rest.apps.createInstallationAccessToken({ installation_id: 1, repositories: ['repo-1'] }),
      ),
    ).toEqual({ status: 401, message: JWT_MESSAGES.undecodable });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    expect(await call(jwt(other, claims))).toEqual({ status: 401, message: JWT_MESSAGES.undecodable });
    expect(await call(jwt(key, { ...claims, iat: now() - 700, exp: now() - 100 }))).toEqual({
      status: 401,
      message: JWT_MESSAGES.expired,
    });
    expect(await call(jwt(key, { ...claims, exp: now() + 1200 }))).toEqual({
      status: 401,
      message: JWT_MESSAGES.tooFar,
    });
    expect(await call(jwt(key, { ...claims, iat: now() + 300 }))).toEqual({
      status: 401,
      message: JWT_MESSAGES.issuedAt,
    });
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
    expect(await call(none)).toEqual({ status: 401, message: JWT_MESSAGES.undecodable });
    // A good JWT on a route that is not the App's: `Bad credentials`.
    const asApp = new RestOctokit({ baseUrl: server.url, auth: good() });
    expect(await refusal(asApp.rest.issues.listForRepo(repo))).toEqual({
      status: 401,
      message: 'Bad credentials',
    });
    expect(await refusal(asApp.rest.users.getAuthenticated())).toEqual({
      status: 401,
      message: 'Bad credentials',
    });
  });

  it('expires an installation token after an hour of the emulator clock (virtual time)', async () => {
    const h = inProcess({ apps: [{}] });
    const app = h.emulator.apps.apps[0]!;
    const key = (await import('node:crypto')).createPrivateKey(app.privateKeyPem);
    const now = h.emulator.apps.nowSeconds();
    const token = jwt(key, { iat: now - 60, exp: now + 540, iss: app.id });
    const mint = await h.post(
      `/app/installations/${app.installations[0]!.id}/access_tokens`,
      {},
      { authorization: `Bearer ${token}` },
    );
    expect(mint.status).toBe(201);
    const ghs = (JSON.parse(mint.body) as { token: string }).token;
    const ok = await h.get('/repos/fleetbench/repo-1/issues', { authorization: `token ${ghs}` });
    expect(ok.status).toBe(200);
    // A personal token on an App route: GitHub wants a JWT there.
    // An installation is no user: /user is refused as GitHub refuses it.
    const user = await h.get('/user', { authorization: `token ${ghs}` });
    expect([user.status, JSON.parse(user.body).message]).toEqual([
      403,
      'Resource not accessible by integration',
    ]);
    const pat = await h.get('/app');
    expect(pat.status).toBe(401);
    expect(JSON.parse(pat.body).message).toBe(JWT_MESSAGES.undecodable);
    await h.advance(3_600_000);
    const late = await h.get('/repos/fleetbench/repo-1/issues', { authorization: `token ${ghs}` });
    expect(late.status).toBe(401);
    expect(JSON.parse(late.body).message).toBe('Bad credentials');
    // The JWT expired too (its exp is virtual-clock seconds).
    const stale = await h.get('/app', { authorization: `Bearer ${token}` });
    expect(JSON.parse(stale.body).message).toBe(JWT_MESSAGES.expired);
  });

  it('a revoked or expired installation token stays refused where unknown tokens are taken (a world)', async () => {
    const h = inProcess({ apps: [{}], acceptUnknownTokens: true });
    const app = h.emulator.apps.apps[0]!;
    const key = (await import('node:crypto')).createPrivateKey(app.privateKeyPem);
    const mint = async () => {
      const now = h.emulator.apps.nowSeconds();
      const token = jwt(key, { iat: now - 60, exp: now + 540, iss: app.id });
      const res = await h.post(
        `/app/installations/${app.installations[0]!.id}/access_tokens`,
        {},
        { authorization: `Bearer ${token}` },
      );
      return (JSON.parse(res.body) as { token: string }).token;
    };
    const revoked = await mint();
    const gone = await h.transport.request({
      method: 'DELETE',
      path: '/installation/token',
      headers: { authorization: `token ${revoked}` },
    });
    expect(gone.status).toBe(204);
    expect(
      (await h.get('/repos/fleetbench/repo-1/issues', { authorization: `token ${revoked}` })).status,
    ).toBe(401);
    const expired = await mint();
    await h.advance(3_600_000);
    await mint(); // sweeps the expired one out of the token table
    expect(
      (await h.get('/repos/fleetbench/repo-1/issues', { authorization: `token ${expired}` })).status,
    ).toBe(401);
  });

  it("an installation's tokens share its bucket, exhausted with GitHub's message for an installation", async () => {
    const h = inProcess({
      apps: [{ installationId: 4242 }],
      limits: { primary: { installation: { core: 2 } } },
    });
    const app = h.emulator.apps.apps[0]!;
    const key = (await import('node:crypto')).createPrivateKey(app.privateKeyPem);
    const now = h.emulator.apps.nowSeconds();
    const token = jwt(key, { iat: now - 60, exp: now + 540, iss: app.id });
    const mint = async () =>
      (
        JSON.parse(
          (await h.post('/app/installations/4242/access_tokens', {}, { authorization: `Bearer ${token}` }))
            .body,
        ) as { token: string }
      ).token;
    const [a, b] = [await mint(), await mint()];
    expect((await h.get('/repos/fleetbench/repo-1/issues', { authorization: `token ${a}` })).status).toBe(
      200,
    );
    expect((await h.get('/repos/fleetbench/repo-1/issues', { authorization: `token ${b}` })).status).toBe(
      200,
    );
    const refused = await h.get('/repos/fleetbench/repo-1/issues', { authorization: `token ${a}` });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).message).toBe('API rate limit exceeded for installation ID 4242.');
    // The App's own JWT calls (the two mints) are charged to the App, not to the installation.
    const used = (key: string) => h.emulator.ledger.identities.get(key)?.buckets.get('core')?.used;
    expect([used('app:1'), used('installation:4242')]).toEqual([2, 2]);
  });

  it('an installation token writes check runs, as a CI App does', async () => {
    const h = inProcess({ apps: [{}] });
    const app = h.emulator.apps.apps[0]!;
    const key = (await import('node:crypto')).createPrivateKey(app.privateKeyPem);
    const now = h.emulator.apps.nowSeconds();
    const token = jwt(key, { iat: now - 60, exp: now + 540, iss: app.id });
    const mint = await h.post(
      `/app/installations/${app.installations[0]!.id}/access_tokens`,
      {},
      { authorization: `Bearer ${token}` },
    );
    const ghs = (JSON.parse(mint.body) as { token: string }).token;
    const sha = h.emulator.state.repo('fleetbench/repo-1').branches.get('main')!;
    const run = await h.post(
      '/repos/fleetbench/repo-1/check-runs',
      { name: 'app-ci', head_sha: sha, status: 'completed', conclusion: 'success' },
      { authorization: `token ${ghs}` },
    );
    expect(run.status, run.body).toBe(201);
  });

  it('scales the installation limit as GitHub does: +50/h per repository over 20, at most 12,500/h', () => {
    const h = inProcess({ fixtures: { repos: 30, issuesPerRepo: 0 }, apps: [{}] });
    const inst = h.emulator.apps.apps[0]!.installations[0]!;
    expect(h.emulator.apps.limitOf(inst, 5_000)).toBe(5_500);
    const big = inProcess({ fixtures: { repos: 200, issuesPerRepo: 0 }, apps: [{}] });
    expect(big.emulator.apps.limitOf(big.emulator.apps.apps[0]!.installations[0]!, 5_000)).toBe(12_500);
  });

  it('property: a JWT altered in its signature, alg, iss, iat (to the future) or exp is refused with 401', async () => {
    const h = inProcess({ apps: [{}] });
    const app = h.emulator.apps.apps[0]!;
    const key = (await import('node:crypto')).createPrivateKey(app.privateKeyPem);
    const now = h.emulator.apps.nowSeconds();
    const base = { iat: now - 60, exp: now + 540, iss: String(app.id) };
    const status = async (token: string) =>
      (await h.get('/app', { authorization: `Bearer ${token}` })).status;
    expect(await status(jwt(key, base))).toBe(200);
    // `iss` may be the App's client id too, as GitHub documents; a numeric id as a number.
    expect(await status(jwt(key, { ...base, iss: app.clientId }))).toBe(200);
    expect(await status(jwt(key, { ...base, iss: app.id }))).toBe(200);
    const alteration = fc.oneof(
      fc.record({
        kind: fc.constant('signature' as const),
        at: fc.nat(),
        bit: fc.integer({ min: 0, max: 5 }),
      }),
      fc.record({ kind: fc.constant('alg' as const), alg: fc.string().filter((a) => a !== 'RS256') }),
      fc.record({
        kind: fc.constant('iss' as const),
        iss: fc
          .oneof(fc.string(), fc.integer(), fc.constant(null))
          .filter((v) => String(v) !== String(app.id) && v !== app.clientId),
      }),
      fc.record({
        kind: fc.constant('iat' as const),
        iat: fc.oneof(
          fc.integer({ min: now + 1, max: now + 10 ** 9 }),
          fc.double({ noInteger: true }),
          fc.string(),
        ),
      }),
      fc.record({
        kind: fc.constant('exp' as const),
        exp: fc.oneof(
          fc.integer({ min: -(10 ** 9), max: now }),
          fc.integer({ min: now + 601, max: now + 10 ** 9 }),
          fc.string(),
          fc.constant(null),
        ),
      }),
    );
    await fc.assert(
      fc.asyncProperty(alteration, async (change) => {
        let token: string;
        if (change.kind === 'signature') {
          const parts = jwt(key, base).split('.');
          const sig = Buffer.from(parts[2]!, 'base64url');
          const i = change.at % sig.length;
          sig[i] = sig[i]! ^ (1 << change.bit);
          token = `${parts[0]}.${parts[1]}.${sig.toString('base64url')}`;
        } else if (change.kind === 'alg') token = jwt(key, base, { alg: change.alg, typ: 'JWT' });
        else token = jwt(key, { ...base, [change.kind]: (change as Record<string, unknown>)[change.kind] });
        expect(await status(token)).toBe(401);
      }),
      { numRuns: 150 },
    );
  });
});

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');

describe.skipIf(bwrap.skip)('a control plane built as a GitHub App, in the world', () => {
  it('reads APP_ID and PRIVATE_KEY, signs its JWT, mints an installation token and opens an issue as its bot', () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-app-world-');
    const script = join(dir, 'app.mjs');
    // As a Probot-style App does it, with node:crypto and Octokit given no base URL.
    writeFileSync(
      script,
      `
import { createSign } from 'node:crypto';
import { Octokit } from ${JSON.stringify(createRequire(import.meta.url).resolve('@octokit/core'))};
const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
const now = Math.floor(Date.now() / 1000);
const head = b64({ alg: 'RS256', typ: 'JWT' }) + '.' + b64({ iat: now - 60, exp: now + 540, iss: process.env.APP_ID });
const jwt = head + '.' + createSign('RSA-SHA256').update(head).sign(process.env.PRIVATE_KEY, 'base64url');
const app = new Octokit({ auth: jwt });
const repo = { owner: 'fleetbench', repo: 'repo-1' };
const installation = await app.request('GET /repos/{owner}/{repo}/installation', repo);
const minted = await app.request('POST /app/installations/{installation_id}/access_tokens', { installation_id: installation.data.id });
const bot = new Octokit({ auth: minted.data.token });
const issue = await bot.request('POST /repos/{owner}/{repo}/issues', { ...repo, title: 'Opened by the App' });
console.log(JSON.stringify({ installation: installation.data.id, env: process.env.GITHUB_APP_INSTALLATION_ID, author: issue.data.user.login }));
`,
    );
    const out = scratchDir('fleetbench-app-world-out-');
    const run = spawnSync(
      process.execPath,
      [BIN, 'world', '--mode', 'sandbox', '--no-agents', '--out', out, '--', 'node', script],
      {
        encoding: 'utf8',
        timeout: 90_000,
        env: { ...process.env, NO_COLOR: '1', APP_ID: '', PRIVATE_KEY: '' },
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const seen = JSON.parse(run.stdout.trim().split('\n').at(-1) as string);
    expect(seen).toEqual({ installation: 1, env: '1', author: 'fleetbench-app[bot]' });
    const api = readFileSync(join(out, 'trace.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { kind: string; route?: string; status?: number })
      .filter((r) => r.kind === 'api');
    expect(api.map((r) => [r.route, r.status])).toEqual([
      ['/repos/{owner}/{repo}/installation', 200],
      ['/app/installations/{installation_id}/access_tokens', 201],
      ['/repos/{owner}/{repo}/issues', 201],
    ]);
  });
});

describe.skipIf(bwrap.skip)('a control plane built as a GitHub App, measured by fleetbench run', () => {
  it('works its issue with an installation token: the PR and the comment are its session, the token mint its own', () => {
    bwrap.require();
    const loop = fileURLToPath(new URL('./fixtures/command-cp/loop.mjs', import.meta.url));
    const dir = scratchDir('fleetbench-app-run-');
    writeFileSync(
      join(dir, 'scenario.yaml'),
      `
name: app-loop
duration: 20s
seed: 3
topology: { owner: fleetbench }
sessions: { count: 1 }
executors:
  - type: fixed
    count: 1
target:
  kind: command
  start: node ${loop}
  env:
    LOOP_STATE: '{{state}}/loop.json'
    LOOP_AGENT: none
    LOOP_INTERVAL_MS: '300'
    LOOP_AUTH: app
  ready: { log: loop ready }
  work: { issue: { labels: [agent] } }
  agents: none
`,
    );
    const run = spawnSync(process.execPath, [BIN, 'run', 'scenario.yaml', '--out', 'out'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 200_000,
      env: { ...process.env, NO_COLOR: '1', APP_ID: '', PRIVATE_KEY: '' },
    });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const records = readFileSync(join(dir, 'out', 'trace.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const api = records.filter((r) => r.kind === 'api');
    const route = (method: string, path: string) =>
      api.filter((r) => r.method === method && r.route === path);
    expect(route('POST', '/app/installations/{installation_id}/access_tokens').map((r) => r.status)).toEqual([
      201,
    ]);
    // Nothing refused: the JWT, the installation token and git's pushes with it were all taken.
    expect(api.filter((r) => r.status === 401)).toEqual([]);
    const pulls = route('POST', '/repos/{owner}/{repo}/pulls');
    expect(pulls.map((r) => [r.status, r.session])).toEqual([[201, 's-0001']]);
    expect(
      route('POST', '/repos/{owner}/{repo}/issues/{issue_number}/comments').map((r) => r.session),
    ).toEqual(['s-0001']);
    // The App's own calls name no work: shared, the control plane's cost.
    expect(route('GET', '/repos/{owner}/{repo}/installation').map((r) => r.scope)).toEqual(['shared']);
  }, 240_000);
});

const ghTool = systemTool('gh', ['--version'], 'gh');

describe.skipIf(ghTool.skip)('gh with an App JWT', () => {
  it('gh api /app and /app/installations take the JWT as GH_ENTERPRISE_TOKEN', async () => {
    ghTool.require();
    const dir = scratchDir('fleetbench-app-gh-');
    const tls = generateSelfSignedCert(join(dir, 'tls'));
    const tlsEmulator = new GitHubEmulator({
      clock: new RealClock(),
      rng: new Rng(6),
      fixtures: { repos: 1, issuesPerRepo: 1 },
      latency: false,
      apps: [{}],
    });
    const server = await serve(tlsEmulator, tls);
    const tlsApp = tlsEmulator.apps.apps[0]!;
    const key = (await import('node:crypto')).createPrivateKey(tlsApp.privateKeyPem);
    const now = Math.floor(Date.now() / 1000);
    const token = jwt(key, { iat: now - 60, exp: now + 540, iss: String(tlsApp.id) });
    const config = join(dir, 'config');
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of ['GH_TOKEN', 'GITHUB_TOKEN', 'GH_REPO', 'GITHUB_ENTERPRISE_TOKEN']) delete env[name];
    Object.assign(env, {
      GH_HOST: `127.0.0.1:${server.port}`,
      GH_ENTERPRISE_TOKEN: token,
      SSL_CERT_FILE: tls.certPath,
      GH_CONFIG_DIR: config,
      GH_PROMPT_DISABLED: '1',
      GH_NO_UPDATE_NOTIFIER: '1',
      NO_COLOR: '1',
    });
    const gh = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
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
    const me = await gh(['api', '/app', '--jq', '.slug']);
    expect(me, me.stderr).toMatchObject({ code: 0, stdout: 'fleetbench-app\n' });
    const installations = await gh(['api', '/app/installations', '--jq', '.[0].id']);
    expect(installations.stdout.trim()).toBe(String(tlsApp.installations[0]!.id));
  });
});
