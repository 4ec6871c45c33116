/**
 * The medium and low findings of issue 38's hostile round, each sent as the report sent it:
 * a `key.pem` symlink planted in `--tls-dir`, a default token the same at every start, and the
 * other inputs below. Each is refused or handled as docs/limits.md says.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { inProcess } from './helpers/github.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

afterAll(stopAll);
const dir = scratchDir('fleetbench-round3-');
const openssl = systemTool('openssl', ['version'], 'openssl');

interface ServeInfo {
  url: string;
  token: string;
  adminToken: string;
  cert?: string;
}

describe.skipIf(openssl.skip)('github serve --tls --tls-dir with a key.pem symlink planted in it', () => {
  it('writes the key into the directory (0600), never through the link; the link’s target is untouched', async () => {
    openssl.require();
    const tlsDir = join(dir, 'tls');
    const elsewhere = join(dir, 'readable-by-all.pem');
    writeFileSync(elsewhere, 'not a key\n', { mode: 0o644 });
    mkdirSync(tlsDir);
    symlinkSync(elsewhere, join(tlsDir, 'key.pem'));
    const server = await startCliServer<ServeInfo>(['github', 'serve', '--tls', '--tls-dir', tlsDir]);
    try {
      expect(readFileSync(elsewhere, 'utf8')).toBe('not a key\n');
      expect(statSync(elsewhere).mode & 0o777).toBe(0o644);
      const key = lstatSync(join(tlsDir, 'key.pem'));
      expect(key.isFile()).toBe(true);
      expect(key.mode & 0o777).toBe(0o600);
      expect(readFileSync(join(tlsDir, 'key.pem'), 'utf8')).toMatch(/BEGIN PRIVATE KEY/);
      expect(server.info.cert).toBe(join(tlsDir, 'cert.pem'));
    } finally {
      await server.stop();
    }
  }, 90_000);
});

describe('github serve tokens', () => {
  it('a different default token at every start, with the same seed, on 0.0.0.0 too; each works', async () => {
    const tokens: string[] = [];
    for (const host of ['127.0.0.1', '0.0.0.0']) {
      for (let i = 0; i < 2; i++) {
        const server = await startCliServer<ServeInfo>(['github', 'serve', '--seed', '1', '--host', host]);
        try {
          const url = server.info.url.replace('0.0.0.0', '127.0.0.1');
          const me = await fetch(`${url}/user`, { headers: { authorization: `token ${server.info.token}` } });
          expect(me.status).toBe(200);
          // A token minted without a text is a fresh secret too.
          const minted = await fetch(`${url}/_fleetbench/mint-token`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${server.info.adminToken}`,
              'content-type': 'application/json',
            },
            body: '{}',
          });
          tokens.push(server.info.token, ((await minted.json()) as { token: string }).token);
        } finally {
          await server.stop();
        }
      }
    }
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const token of tokens) expect(token).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
  }, 120_000);
});

describe('fleetbench run --out with a lock file fleetbench did not write', () => {
  it('takes over a lock without its fields instead of naming "undefined" as its owner', async () => {
    for (const [name, lock] of [
      ['fieldless', '{"pid":1}'],
      ['newline', JSON.stringify({ pid: 1, host: 'h', command: 'run\nx', startedAt: 'then' })],
    ] as const) {
      const out = join(dir, `lock-${name}`);
      mkdirSync(out);
      writeFileSync(join(out, '.fleetbench.lock'), lock);
      const run = await cli(['run', 'S2-T1-1', '--out', out, '--no-report', '--no-budgets']);
      expect(run.stderr).not.toMatch(/undefined/);
      expect(run.code, run.stderr).toBe(0);
      expect(existsSync(join(out, '.fleetbench.lock'))).toBe(false);
    }
  }, 120_000);
});

describe('fleetbench merge of a run segment whose record names a trace elsewhere', () => {
  const record = (trace: string) => ({
    kind: 'fleetbench-run-segment',
    schemaVersion: 1,
    generator: { name: 'fleetbench', version: '0' },
    segment: { index: 0, count: 1 },
    status: 'done',
    run: {
      runId: 'r',
      scenario: { name: 's', hash: 'h' },
      startAtMs: 0,
      timeScale: 1,
      durationMs: 1000,
      target: 'reference',
      github: 'http://127.0.0.1:1',
    },
    trace,
    sessionsStarted: 0,
    sessionsDropped: 0,
    wallMs: 0,
  });

  it('refuses ../ and a link out, naming the field, and writes nothing', async () => {
    for (const [name, trace] of [
      ['dotdot', '../../../../etc/passwd'],
      ['link', 'run-0-of-1/trace.jsonl'],
    ] as const) {
      const segments = join(dir, `run-${name}`, 'segments');
      mkdirSync(segments, { recursive: true });
      if (name === 'link') symlinkSync('/etc', join(segments, 'run-0-of-1'));
      writeFileSync(join(segments, 'run-0-of-1.json'), JSON.stringify(record(trace)));
      const out = join(dir, `merged-${name}`);
      const merged = await cli(['merge', join(dir, `run-${name}`), '--out', out]);
      expect(merged.code).toBe(2);
      expect(merged.stderr).toMatch(/run-0-of-1\.json: trace: '.*' (is outside|resolves outside \(to \/etc)/);
      expect(existsSync(join(out, 'trace.jsonl'))).toBe(false);
    }
  });
});

describe("issue titles and labels within GitHub's bounds", () => {
  it('a 1 MB title and 10,000 labels are refused as GitHub refuses them (422, the field named); 256 characters and 100 labels are taken', async () => {
    const h = inProcess({ fixtures: { repos: 1, issuesPerRepo: 1 } });
    const create = (body: unknown) => h.post('/repos/fleetbench/repo-1/issues', body);
    const error = async (body: unknown) => {
      const res = await create(body);
      expect(res.status).toBe(422);
      return JSON.parse(res.body).errors[0];
    };
    expect(await error({ title: 'x'.repeat(1_000_000) })).toMatchObject({
      resource: 'Issue',
      code: 'custom',
      field: 'title',
      message: 'title is too long (maximum is 256 characters)',
    });
    const many = Array.from({ length: 10_000 }, (_, i) => `label-${i}`);
    expect(await error({ title: 'ok', labels: many })).toMatchObject({
      field: 'labels',
      message: 'an issue or pull request can have at most 100 labels',
    });
    expect(await error({ title: 'ok', labels: ['y'.repeat(51)] })).toMatchObject({
      message: 'name is too long (maximum is 50 characters)',
    });
    const made = await create({ title: 't'.repeat(256), labels: many.slice(0, 100) });
    expect(made.status).toBe(201);
    const number = JSON.parse(made.body).number as number;
    // An edit is held to the same bounds; nothing is changed by a refused one.
    const edit = await h.transport.request({
      method: 'PATCH',
      path: `/repos/fleetbench/repo-1/issues/${number}`,
      headers: {},
      body: JSON.stringify({ title: 't'.repeat(257) }),
    });
    expect(edit.status).toBe(422);
    const added = await h.post(`/repos/fleetbench/repo-1/issues/${number}/labels`, { labels: ['one-more'] });
    expect(added.status).toBe(422);
    const issue = h.emulator.state.issue(h.emulator.state.repo('fleetbench/repo-1'), number);
    expect(issue.title).toBe('t'.repeat(256));
    expect(issue.labels).toHaveLength(100);
  });

  it("GraphQL createIssue with a blank title is GitHub's error, and creates nothing", async () => {
    const h = inProcess({ fixtures: { repos: 1, issuesPerRepo: 1 } });
    const repo = JSON.parse(
      (await h.graphql('{ repository(owner: "fleetbench", name: "repo-1") { id } }')).body,
    ).data.repository.id as string;
    const before = h.emulator.state.repo('fleetbench/repo-1').issues.size;
    for (const title of ['', '   ']) {
      const res = await h.graphql(
        'mutation($r: ID!, $t: String!) { createIssue(input: {repositoryId: $r, title: $t}) { issue { number } } }',
        { r: repo, t: title },
      );
      const body = JSON.parse(res.body);
      expect(body.errors[0]).toMatchObject({ type: 'UNPROCESSABLE', message: "Title can't be blank" });
      expect(body.data).toEqual({ createIssue: null });
    }
    expect(h.emulator.state.repo('fleetbench/repo-1').issues.size).toBe(before);
  });
});
