/**
 * GitHub's OAuth logins on github.com (docs/github-emulator.md, "OAuth logins"): the device flow
 * a CLI runs and the web flow behind "Sign in with GitHub", approved with nobody at a browser,
 * answered in GitHub's shapes (form-encoded unless JSON is asked for; the token endpoint's
 * refusals as 200 answers naming the error). Driven over HTTP with fetch and Octokit against a
 * served emulator on a virtual clock (the device flow's intervals without waiting them out), and
 * with the real gh's `auth login --web` in a world.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, constants } from 'node:http2';
import { type AddressInfo, connect as connectTcp } from 'node:net';
import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import { describe, expect, it } from 'vitest';
import { generateSelfSignedCert } from '../src/github/index.ts';
import { OAuthLogins } from '../src/github/oauth.ts';
import { runCliProcess } from './helpers/cli-process.ts';
import { inProcess, serve } from './helpers/github.ts';
import { startCliServer } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const gh = systemTool('gh', ['--version'], 'gh');
const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');
const openssl = systemTool('openssl', ['version'], 'openssl');

async function setUp() {
  const world = inProcess();
  const server = await serve(world.emulator);
  const form = async (path: string, body: Record<string, string>, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(body).toString(),
    });
    const text = await res.text();
    return {
      status: res.status,
      type: res.headers.get('content-type') ?? '',
      fields: Object.fromEntries(new URLSearchParams(text)),
      text,
    };
  };
  return { ...world, server, form };
}

describe('OAuth logins on the served emulator', () => {
  it('the device flow: a code, pending until the user has had an interval, slow_down for a hasty client, then a token that acts as the default user', async () => {
    const { server, form, advance, emulator, sink } = await setUp();
    const code = await form('/login/device/code', { client_id: 'Iv1.cli', scope: 'repo read:org' });
    expect(code.status).toBe(200);
    expect(code.type).toMatch(/^application\/x-www-form-urlencoded/);
    expect(code.fields.device_code).toMatch(/^[0-9a-f]{40}$/);
    expect(code.fields.user_code).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    expect(code.fields.verification_uri).toBe(`${server.url}/login/device`);
    expect(code.fields).toMatchObject({ expires_in: '900', interval: '5' });
    const poll = () =>
      form('/login/oauth/access_token', {
        client_id: 'Iv1.cli',
        device_code: code.fields.device_code as string,
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      });
    expect((await poll()).fields).toMatchObject({ error: 'authorization_pending' });
    const hasty = await poll();
    expect(hasty.status).toBe(200);
    expect(hasty.fields).toMatchObject({ error: 'slow_down', interval: '10' });
    await advance(10_000);
    const granted = await poll();
    expect(granted.fields).toMatchObject({ token_type: 'bearer', scope: 'repo,read:org' });
    expect(granted.fields.access_token).toMatch(/^gho_[A-Za-z0-9]{36}$/);
    // The token is a user's: Octokit's /user with it is the fixtures' default user.
    const octokit = new Octokit({ auth: granted.fields.access_token, baseUrl: server.url });
    const user = await octokit.request('GET /user');
    expect(user.data.login).toBe(emulator.state.defaultUser.login);
    // A device code is used once.
    expect((await poll()).fields).toMatchObject({ error: 'incorrect_device_code' });
    // Not API calls: no api record, no rate limit; each a github.oauth span.
    const oauth = sink.records.filter((r) => r.kind === 'span' && r.name === 'github.oauth');
    expect(oauth.map((s) => (s.kind === 'span' ? s.labels?.request : undefined))).toEqual([
      'device_code',
      ...Array(4).fill('access_token'),
    ]);
    const apiRoutes = sink.records.filter((r) => r.kind === 'api').map((r) => r.route);
    expect(apiRoutes).toEqual(['/user']);
  });

  it('answers JSON when asked, refuses another client, an expired code and a request with no client id', async () => {
    const { form, advance } = await setUp();
    const json = { accept: 'application/json' };
    const code = await form('/login/device/code', { client_id: 'a' }, json);
    expect(code.type).toMatch(/^application\/json/);
    const { device_code } = JSON.parse(code.text) as { device_code: string };
    const poll = (client: string) =>
      form(
        '/login/oauth/access_token',
        { client_id: client, device_code, grant_type: 'urn:ietf:params:oauth:grant-type:device_code' },
        json,
      );
    expect(JSON.parse((await poll('b')).text)).toMatchObject({ error: 'incorrect_client_credentials' });
    await advance(901_000);
    const expired = await poll('a');
    expect(expired.status).toBe(200);
    expect(JSON.parse(expired.text)).toMatchObject({ error: 'expired_token' });
    const wrongGrant = await form('/login/oauth/access_token', {
      client_id: 'a',
      device_code,
      grant_type: 'password',
    });
    expect(wrongGrant.fields.error).toBe('unsupported_grant_type');
    const anonymous = await form('/login/device/code', {});
    expect(anonymous.status).toBe(400);
    expect(anonymous.fields.error).toBe('invalid_request');
  });

  it('the web flow: consent redirects back at once with a code and the state; the code buys one token', async () => {
    const { server, emulator } = await setUp();
    const authorize = (query: string) =>
      fetch(`${server.url}/login/oauth/authorize?${query}`, { redirect: 'manual' });
    const consent = await authorize(
      'client_id=web&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&state=xyz&scope=repo',
    );
    expect(consent.status).toBe(302);
    const back = new URL(consent.headers.get('location') as string);
    expect(`${back.origin}${back.pathname}`).toBe('http://127.0.0.1:9/callback');
    expect(back.searchParams.get('state')).toBe('xyz');
    const code = back.searchParams.get('code') as string;
    expect(code).toMatch(/^[0-9a-f]{20}$/);
    const exchange = (fields: Record<string, string>) =>
      fetch(`${server.url}/login/oauth/access_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(fields),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, string> }));
    expect((await exchange({ client_id: 'web', code })).body.error).toBe('incorrect_client_credentials');
    expect(
      (await exchange({ client_id: 'web', client_secret: 's', code, redirect_uri: 'http://elsewhere/' })).body
        .error,
    ).toBe('redirect_uri_mismatch');
    const granted = await exchange({ client_id: 'web', client_secret: 's', code });
    expect(granted.body).toMatchObject({ token_type: 'bearer', scope: 'repo' });
    const user = await new Octokit({ auth: granted.body.access_token, baseUrl: server.url }).request(
      'GET /user',
    );
    expect(user.data.login).toBe(emulator.state.defaultUser.login);
    expect((await exchange({ client_id: 'web', client_secret: 's', code })).body.error).toBe(
      'bad_verification_code',
    );
    // A redirect that is no http(s) URL is never followed.
    expect((await authorize('client_id=web&redirect_uri=javascript%3Aalert(1)')).status).toBe(400);
    expect((await authorize('client_id=web')).status).toBe(400);
  });
});

/** One web-flow login (consent, then the code's exchange) against `base`: the token. */
async function webLogin(base: string, clientId: string, scope: string): Promise<string> {
  const consent = await fetch(
    `${base}/login/oauth/authorize?client_id=${clientId}&scope=${scope}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb`,
    { redirect: 'manual' },
  );
  const code = new URL(consent.headers.get('location') as string).searchParams.get('code') as string;
  const exchange = await fetch(`${base}/login/oauth/access_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ client_id: clientId, client_secret: 's', code }),
  });
  return ((await exchange.json()) as { access_token: string }).access_token;
}

describe('OAuth tokens are bounded', () => {
  it('keeps 10 tokens per client and scopes, as GitHub does: an 11th login revokes the oldest (401 after)', async () => {
    const { server, emulator } = await setUp();
    const tokens: string[] = [];
    for (let i = 0; i < 11; i++) tokens.push(await webLogin(server.url, 'loop', 'repo'));
    const status = async (token: string) =>
      (await fetch(`${server.url}/user`, { headers: { authorization: `token ${token}` } })).status;
    expect(await status(tokens[0] as string)).toBe(401);
    expect(await status(tokens[1] as string)).toBe(200);
    expect(await status(tokens[10] as string)).toBe(200);
    // Another scope is another combination: the client's repo tokens stay.
    await webLogin(server.url, 'loop', 'gist');
    expect(await status(tokens[1] as string)).toBe(200);
    expect([...emulator.tokens.tokens.keys()].filter((t) => t.startsWith('gho_'))).toHaveLength(11);
  });

  it('refuses a client id, scope or redirect URI past 1,024 characters (400 naming it): 10,000 codes of 64 KiB ids held a gigabyte', async () => {
    const { server, form, sink } = await setUp();
    const long = 'x'.repeat(1025);
    const device = await form('/login/device/code', { client_id: long });
    expect(device.status).toBe(400);
    expect(device.fields).toMatchObject({ error: 'invalid_request' });
    expect(device.fields.error_description).toMatch(/client_id .*1024 characters/);
    const scoped = await form('/login/device/code', { client_id: 'ok', scope: long });
    expect(scoped.status).toBe(400);
    expect(scoped.fields.error_description).toMatch(/scope/);
    const consent = await fetch(
      `${server.url}/login/oauth/authorize?client_id=web&redirect_uri=http%3A%2F%2F127.0.0.1%2F${long}`,
      { redirect: 'manual' },
    );
    expect(consent.status).toBe(400);
    expect(await consent.text()).toMatch(/redirect_uri/);
    // At the bound it is taken; nothing of the refused ones is in the trace.
    expect((await form('/login/device/code', { client_id: 'y'.repeat(1024) })).status).toBe(200);
    expect(JSON.stringify(sink.records)).not.toContain(long);
  });

  it('a body of many distinct parameters is read in time linear in its size (8,000 keys held the event loop a second: every request waited)', async () => {
    const { server } = await setUp();
    const keys: string[] = [];
    for (let i = 0, size = 0; size < 48_000; i++) {
      keys.push(`k${i.toString(36)}=`);
      size += keys.at(-1)?.length ?? 0;
    }
    const post = async (body: string, type: string) => {
      const started = performance.now();
      const res = await fetch(`${server.url}/login/device/code`, {
        method: 'POST',
        headers: { 'content-type': type },
        body,
      });
      await res.text();
      return { status: res.status, ms: performance.now() - started };
    };
    const form = 'application/x-www-form-urlencoded';
    // The same size in one parameter: what reading 60 KB costs here, now.
    await post(`client_id=a&pad=${'x'.repeat(60_000)}`, form); // the first request warms the server up
    const one = await post(`client_id=a&pad=${'x'.repeat(60_000)}`, form);
    const many = await post(`client_id=a&${keys.join('&')}`, form);
    const jsonOf = (count: number) =>
      JSON.stringify(
        Object.fromEntries([['client_id', 'a'], ...keys.slice(0, count).map((k) => [k.slice(0, -1), 1])]),
      );
    let count = keys.length;
    while (jsonOf(count).length > 60_000) count = Math.floor(count * 0.9);
    const manyJson = await post(jsonOf(count), 'application/json');
    expect([one.status, many.status, manyJson.status]).toEqual([200, 200, 200]);
    expect(many.ms).toBeLessThan(Math.max(5 * one.ms, 250));
    expect(manyJson.ms).toBeLessThan(Math.max(5 * one.ms, 250));
  });

  it('keeps at most its bound of tokens over every client: a loop of logins under new client ids cannot grow the token table', async () => {
    const { emulator } = inProcess();
    const oauth = new OAuthLogins(emulator, { maxTokens: 5 });
    const server = createServer((req, res) => oauth.handle(req, res, 'http://github.com'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const before = emulator.tokens.tokens.size;
      const minted: string[] = [];
      for (let i = 0; i < 8; i++) minted.push(await webLogin(base, `client-${i}`, 'repo'));
      expect(emulator.tokens.tokens.size).toBe(before + 5);
      expect(emulator.tokens.tokens.has(minted[2] as string)).toBe(false);
      expect(emulator.tokens.tokens.has(minted[3] as string)).toBe(true);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      emulator.close();
    }
  });
});

describe('github serve stopping with an OAuth login in flight', () => {
  it('records it as cancelled before the footer, with no error on its standard error', async () => {
    const trace = join(scratchDir('fleetbench-oauth-stop-'), 'trace.jsonl');
    const server = await startCliServer<{ url: string }>(['github', 'serve', '--trace', trace]);
    const { port } = new URL(server.info.url);
    // A login whose body is still arriving when the server is told to stop.
    const socket = connectTcp(Number(port), '127.0.0.1');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      'POST /login/device/code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nclient_id=a',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    server.process.kill('SIGINT');
    expect(await server.exited).toBe(0);
    await closed;
    expect(server.stderr()).not.toMatch(/oauth|closed| {4}at /);
    const lines = readFileSync(trace, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { kind: string; name?: string; labels?: Record<string, string> });
    expect(lines.at(-1)?.kind).toBe('end');
    const oauth = lines.filter((r) => r.kind === 'span' && r.name === 'github.oauth');
    expect(oauth).toHaveLength(1);
    expect(oauth[0]).toMatchObject({
      outcome: 'error',
      labels: { request: 'device_code', status: 'cancelled' },
      data: { error: 'cancelled: the server stopped before answering' },
    });
  }, 60_000);
});

describe.skipIf(openssl.skip)('OAuth logins over HTTP/2', () => {
  it('a refused body is answered 400 or 413 with no connection header (HTTP/2 has none: Node warned), and the session goes on', async () => {
    openssl.require();
    const { emulator, sink } = inProcess();
    const made = generateSelfSignedCert(join(scratchDir('fleetbench-oauth-h2-'), 'tls'));
    const server = await serve(emulator, made);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    const session = connect(server.url, { ca: made.cert });
    try {
      const post = (body: string, type: string) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const stream = session.request({
            [constants.HTTP2_HEADER_METHOD]: 'POST',
            [constants.HTTP2_HEADER_PATH]: '/login/oauth/access_token',
            'content-type': type,
          });
          let status = 0;
          let text = '';
          stream.on('response', (headers) => {
            status = Number(headers[constants.HTTP2_HEADER_STATUS]);
          });
          stream.setEncoding('utf8');
          stream.on('data', (chunk: string) => {
            text += chunk;
          });
          stream.on('end', () => resolve({ status, body: text }));
          stream.on('error', reject);
          stream.end(body);
        });
      const badJson = await post('{', 'application/json');
      expect(badJson.status).toBe(400);
      expect(badJson.body).toMatch(/Problems parsing JSON/);
      const tooLarge = await post(`client_id=${'a'.repeat(70_000)}`, 'application/x-www-form-urlencoded');
      expect(tooLarge.status).toBe(413);
      expect((await post('client_id=h2', 'application/x-www-form-urlencoded')).status).toBe(200);
      const statuses = sink.records
        .filter((r) => r.kind === 'span' && r.name === 'github.oauth')
        .map((r) => (r.kind === 'span' ? r.labels?.status : undefined));
      expect(statuses).toEqual(['400', '413', '200']);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => /connection header/.test(w))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      session.close();
    }
  });
});

describe.skipIf(gh.skip || bwrap.skip)('gh auth login in a world', { timeout: 120_000 }, () => {
  it("logs in by the device flow with nobody at a browser, and gh's API calls then use the token", async () => {
    gh.require();
    bwrap.require();
    const dir = scratchDir('fleetbench-oauth-gh-');
    const out = join(dir, 'run');
    const run = await runCliProcess(
      [
        'world',
        '--out',
        out,
        '--no-agents',
        '--',
        'sh',
        '-c',
        `export GH_CONFIG_DIR=${dir}/gh BROWSER=true; unset GH_TOKEN GITHUB_TOKEN; gh auth login --hostname github.com --git-protocol https --web </dev/null && gh api user --jq .login`,
      ],
      { timeoutMs: 110_000, traceDir: out },
    );
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stderr + run.stdout).toMatch(/Logged in as/);
    const hosts = spawnSync('cat', [join(dir, 'gh', 'hosts.yml')], { encoding: 'utf8' }).stdout;
    expect(hosts).toMatch(/oauth_token: gho_/);
    const spans = run.records.filter((r) => r.kind === 'span' && r.name === 'github.oauth');
    expect(spans.map((s) => (s.labels as { request: string }).request)).toEqual(
      expect.arrayContaining(['device_code', 'access_token']),
    );
  });
});
