/**
 * `fleetbench github serve` as users run it: the real CLI as a subprocess.
 */
import { createPrivateKey, sign } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/index.ts';
import { cli } from './helpers/cli.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
afterAll(stopAll);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('fleetbench github serve: bad input', () => {
  it('names the file, line and field of a bad fixtures file, with no stack trace', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      'repos:\n  - owner: acme\n    name: widgets\n    issues:\n      - title: ok\n      - titel: typo\n',
    );
    const res = await cli(['github', 'serve', '--fixtures', file]);
    expect(res.code).toBe(2);
    expect(res.stderr).toBe(`fleetbench: ${file}:6: repos[0].issues[1].title: expected string\n`);
    expect(res.stdout).toBe('');
  });

  it('rejects a missing file, conflicting flags and a bad --limit', async () => {
    const missing = await cli(['github', 'serve', '--fixtures', join(dir, 'nope.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/nope\.yaml: cannot read: ENOENT/);
    const both = await cli(['github', 'serve', '--fixtures', join(dir, 'x.yaml'), '--repos', '2']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain(
      '--fixtures and --repos/--issues-per-repo/--pulls-per-repo exclude each other',
    );
    const limit = await cli(['github', 'serve', '--limit', 'core=lots']);
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--limit core=lots: expected a non-negative number');
    const latency = await cli(['github', 'serve', '--latency', '100:50']);
    expect(latency.code).toBe(2);
    expect(latency.stderr).toContain('--latency 100:50');
    const web = await cli(['github', 'serve', '--web-url', 'https://github.com/acme']);
    expect(web.code).toBe(2);
    expect(web.stderr).toContain('--web-url');
    expect(web.stderr).toContain('expected an origin such as https://github.com');
  });
});

describe('fleetbench github serve: running', () => {
  it('prints connection details, serves, and on Ctrl-C stops with the trace footer written', async () => {
    const trace = join(dir, 'serve.jsonl');
    const server = await startCliServer<{
      url: string;
      token: string;
      adminToken: string;
      repos: string[];
      app: { id: number; installationId: number; privateKeyPath: string };
    }>([
      'github',
      'serve',
      '--repos',
      '2',
      '--issues-per-repo',
      '3',
      '--time-scale',
      '60',
      '--trace',
      trace,
      '--limit',
      'core=50',
    ]);
    const { info } = server;
    try {
      expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(info.repos).toEqual(['fleetbench/repo-1', 'fleetbench/repo-2']);
      const auth = { authorization: `token ${info.token}` };
      const first = await fetch(`${info.url}/repos/fleetbench/repo-2/issues`, { headers: auth });
      expect(first.status).toBe(200);
      expect(first.headers.get('x-ratelimit-limit')).toBe('50');
      expect(((await first.json()) as unknown[]).length).toBe(3);
      const viaV3 = await fetch(`${info.url}/api/v3/rate_limit`, { headers: auth });
      expect(((await viaV3.json()) as { rate: { used: number } }).rate.used).toBe(1);
      const admin = await fetch(`${info.url}/_fleetbench/mint-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${info.adminToken}` },
        body: JSON.stringify({ session: 'cli-s1', source: 'agent' }),
      });
      const minted = (await admin.json()) as { token: string };
      const attributed = await fetch(`${info.url}/user`, {
        headers: { authorization: `token ${minted.token}` },
      });
      expect(((await attributed.json()) as { login: string }).login).toBe('fleet-agent');
      const refused = await fetch(`${info.url}/_fleetbench/stats`);
      expect(refused.status).toBe(401);
      // The App's key, private to its user, signs a JWT the served emulator takes.
      expect(statSync(info.app.privateKeyPath).mode & 0o777).toBe(0o600);
      const now = Math.floor(Date.now() / 1000);
      const head = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ iat: now - 60, exp: now + 500, iss: String(info.app.id) })}`;
      const key = createPrivateKey(readFileSync(info.app.privateKeyPath, 'utf8'));
      const asApp = await fetch(`${info.url}/app/installations/${info.app.installationId}`, {
        headers: {
          authorization: `Bearer ${head}.${sign('sha256', Buffer.from(head), key).toString('base64url')}`,
        },
      });
      expect(asApp.status).toBe(200);
      server.process.kill('SIGINT');
      expect(await server.exited).toBe(0);
      // Removed at exit with its directory.
      expect(existsSync(dirname(info.app.privateKeyPath))).toBe(false);
    } finally {
      await server.stop();
    }
    const { records, stats } = await readTrace(trace);
    expect(stats.header).toMatchObject({ clock: 'real', timeScale: 60, seed: 1, target: 'github-emulator' });
    expect(stats.footer).toMatchObject({ reason: 'completed', counts: { api: 4 } });
    expect(records.map((r) => (r.kind === 'api' ? [r.route, r.session ?? null] : r.kind))).toEqual([
      ['/repos/{owner}/{repo}/issues', null],
      ['/rate_limit', null],
      ['/user', 'cli-s1'],
      ['/app/installations/{installation_id}', null],
    ]);
  });
});

describe('fleetbench github serve --web-url', () => {
  it('renders web links on the given origin and API URLs on the emulator', async () => {
    const server = await startCliServer<{ url: string; token: string }>([
      'github',
      'serve',
      '--pulls-per-repo',
      '1',
      '--web-url',
      'https://github.com',
    ]);
    const { info } = server;
    try {
      const auth = { authorization: `token ${info.token}` };
      const pulls = (await (
        await fetch(`${info.url}/repos/fleetbench/repo-1/pulls`, { headers: auth })
      ).json()) as {
        url: string;
        html_url: string;
        number: number;
        user: { html_url: string; url: string };
      }[];
      expect(pulls[0]!.html_url).toBe(`https://github.com/fleetbench/repo-1/pull/${pulls[0]!.number}`);
      expect(pulls[0]!.url).toBe(`${info.url}/repos/fleetbench/repo-1/pulls/${pulls[0]!.number}`);
      expect(pulls[0]!.user.html_url).toBe('https://github.com/fleet-agent');
      expect(pulls[0]!.user.url).toBe(`${info.url}/users/fleet-agent`);
      const graphql = await fetch(`${info.url}/graphql`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({
          query: `{ repository(owner: "fleetbench", name: "repo-1") { url pullRequest(number: ${pulls[0]!.number}) { url } } }`,
        }),
      });
      expect(((await graphql.json()) as { data: unknown }).data).toEqual({
        repository: {
          url: 'https://github.com/fleetbench/repo-1',
          pullRequest: { url: `https://github.com/fleetbench/repo-1/pull/${pulls[0]!.number}` },
        },
      });
      server.process.kill('SIGINT');
      expect(await server.exited).toBe(0);
    } finally {
      await server.stop();
    }
  });
});
