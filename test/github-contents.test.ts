/**
 * The contents API and the Git data API (docs/github-emulator.md, "Contents and Git data"): a
 * control plane that commits through REST makes a branch, writes a file, opens a pull request
 * and merges it, and `git clone` of main has the file; blob → tree → commit → PATCH ref; a git
 * push read back through contents and trees. Driven through Octokit's REST methods, `gh api` and
 * the real git CLI on a real server; fast-check holds that a tree made through the API is the
 * tree git writes for the same files, and that a file reads back exactly as written.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator, generateSelfSignedCert } from '../src/github/index.ts';
import { pathOrderKey } from '../src/github/rest-contents.ts';
import { GIT_BOUNDS } from '../src/github/world/bounds.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { gitTestEnv, runGit } from './helpers/git.ts';
import { inProcess, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const Octokit = Core.plugin(restEndpointMethods);
const dir = scratchDir('fleetbench-contents-');
const gitTool = systemTool('git', ['--version'], 'git');
const ghTool = systemTool('gh', ['--version'], 'gh');
let clones = 0;

const gitEnv = gitTestEnv(dir);

const git = (args: string[], cwd = dir, input?: string) => runGit(args, cwd, gitEnv, input);

const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');
const fromB64 = (text: string) => Buffer.from(text, 'base64');

async function world() {
  const sink = new MemorySink();
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(5),
    trace: sink,
    fixtures: { repos: 1, issuesPerRepo: 2, pullsPerRepo: 1 },
    latency: false,
  });
  const server = await serve(emulator);
  const octokit = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
  const repo = emulator.state.repo('fleetbench/repo-1');
  repo.requiredReviews = 0; // merges need no review in this world
  const clone = async () => {
    const into = join(dir, `clone-${++clones}`);
    await git(['clone', '--quiet', `${server.url}/fleetbench/repo-1`, into]);
    return into;
  };
  const pushUrl = `${server.url.replace('://', `://x-access-token:${emulator.defaultToken}@`)}/fleetbench/repo-1.git`;
  return { emulator, server, octokit, repo, sink, clone, pushUrl };
}

const at = { owner: 'fleetbench', repo: 'repo-1' };

describe.skipIf(gitTool.skip)('contents API and Git data API, with git', () => {
  beforeAll(() => gitTool.require());

  it('a control plane: branch, PUT contents, pull request, merge; git clone of main has the file', async () => {
    const { octokit, clone, sink } = await world();
    const main = await octokit.rest.git.getRef({ ...at, ref: 'heads/main' });
    await octokit.rest.git.createRef({ ...at, ref: 'refs/heads/agent/fix-1', sha: main.data.object.sha });
    const created = await octokit.rest.repos.createOrUpdateFileContents({
      ...at,
      path: 'src/fix.txt',
      message: 'Fix the thing',
      content: b64('fixed\n'),
      branch: 'agent/fix-1',
    });
    expect(created.status).toBe(201);
    expect(created.data.content?.sha).toBe(
      execFileSync('git', ['hash-object', '--stdin'], { input: 'fixed\n' }).toString().trim(),
    );
    expect(created.data.commit.parents?.map((p) => p.sha)).toEqual([main.data.object.sha]);
    // Read back on the branch; main does not have it.
    const read = await octokit.rest.repos.getContent({ ...at, path: 'src/fix.txt', ref: 'agent/fix-1' });
    const file = read.data as { type: string; content: string; encoding: string; sha: string; size: number };
    expect([file.type, file.encoding, file.size]).toEqual(['file', 'base64', 6]);
    expect(fromB64(file.content).toString()).toBe('fixed\n');
    await expect(octokit.rest.repos.getContent({ ...at, path: 'src/fix.txt' })).rejects.toMatchObject({
      status: 404,
    });
    const listing = await octokit.rest.repos.getContent({ ...at, path: '', ref: 'agent/fix-1' });
    expect((listing.data as { name: string; type: string }[]).map((e) => [e.name, e.type])).toEqual([
      ['README.md', 'file'],
      ['src', 'dir'],
    ]);
    // An update needs the current blob's sha: missing 422, stale 409, current 200.
    const update = {
      ...at,
      path: 'src/fix.txt',
      message: 'Again',
      content: b64('fixed twice\n'),
      branch: 'agent/fix-1',
    };
    await expect(octokit.rest.repos.createOrUpdateFileContents(update)).rejects.toMatchObject({
      status: 422,
    });
    await expect(
      octokit.rest.repos.createOrUpdateFileContents({ ...update, sha: 'a'.repeat(40) }),
    ).rejects.toMatchObject({ status: 409 });
    const updated = await octokit.rest.repos.createOrUpdateFileContents({ ...update, sha: file.sha });
    expect(updated.status).toBe(200);
    // The pull request holds both commits; it merges; a clone of main has the file.
    const pull = await octokit.rest.pulls.create({ ...at, head: 'agent/fix-1', base: 'main', title: 'Fix' });
    expect(pull.data.commits).toBe(2);
    const merged = await octokit.rest.pulls.merge({ ...at, pull_number: pull.data.number });
    expect(merged.data.merged).toBe(true);
    const into = await clone();
    expect(readFileSync(join(into, 'src', 'fix.txt'), 'utf8')).toBe('fixed twice\n');
    expect(await git(['rev-parse', 'HEAD'], into)).toBe(merged.data.sha);
    await git(['fsck', '--strict'], into);
    // Deleted through the API, and gone from a fresh clone.
    const current = await octokit.rest.repos.getContent({ ...at, path: 'src/fix.txt' });
    const deleted = await octokit.rest.repos.deleteFile({
      ...at,
      path: 'src/fix.txt',
      message: 'Remove it',
      sha: (current.data as { sha: string }).sha,
    });
    expect(deleted.data.content).toBeNull();
    await git(['pull', '--quiet'], into);
    expect(await git(['ls-files'], into)).toBe('README.md');
    // Traced like every route: templated, content-creating writes at 5 secondary points.
    const puts = sink.records.filter(
      (r) => r.kind === 'api' && r.method === 'PUT' && r.route === '/repos/{owner}/{repo}/contents/{path}',
    );
    expect(puts.length).toBe(4);
    expect(
      puts.every((r) => r.kind === 'api' && r.secondaryCost === 5 && r.repo === 'fleetbench/repo-1'),
    ).toBe(true);
  }, 60_000);

  it('blob, tree, commit, PATCH ref: the open pull request on the branch follows; clone has it', async () => {
    const { octokit, clone, emulator } = await world();
    const mainSha = (await octokit.rest.git.getRef({ ...at, ref: 'heads/main' })).data.object.sha;
    const base = await octokit.rest.git.getCommit({ ...at, commit_sha: mainSha });
    await octokit.rest.git.createRef({ ...at, ref: 'refs/heads/agent/data', sha: mainSha });
    await octokit.rest.repos.createOrUpdateFileContents({
      ...at,
      path: 'first.txt',
      message: 'First',
      content: b64('one\n'),
      branch: 'agent/data',
    });
    const pull = await octokit.rest.pulls.create({ ...at, head: 'agent/data', base: 'main', title: 'Data' });
    const tip = (await octokit.rest.git.getRef({ ...at, ref: 'heads/agent/data' })).data.object.sha;
    const tipCommit = await octokit.rest.git.getCommit({ ...at, commit_sha: tip });
    const binary = Buffer.from([0, 1, 2, 255, 254, 10]);
    const blob = await octokit.rest.git.createBlob({
      ...at,
      content: binary.toString('base64'),
      encoding: 'base64',
    });
    expect(blob.status).toBe(201);
    const readBlob = await octokit.rest.git.getBlob({ ...at, file_sha: blob.data.sha });
    expect(fromB64(readBlob.data.content).equals(binary)).toBe(true);
    const tree = await octokit.rest.git.createTree({
      ...at,
      base_tree: tipCommit.data.tree.sha,
      tree: [
        { path: 'bin/data.bin', mode: '100644', type: 'blob', sha: blob.data.sha },
        { path: 'docs/notes.md', mode: '100644', type: 'blob', content: 'notes\n' },
        { path: 'first.txt', mode: '100644', type: 'blob', sha: null },
      ],
    });
    expect(tree.status).toBe(201);
    const commit = await octokit.rest.git.createCommit({
      ...at,
      message: 'Data files',
      tree: tree.data.sha,
      parents: [tip],
      author: { name: 'Bot', email: 'bot@example.com', date: '2026-02-01T00:00:00Z' },
    });
    expect(commit.data.author.date).toBe('2026-02-01T00:00:00Z');
    expect(commit.data.committer.name).toBe('Bot');
    // Not a fast-forward from an unrelated commit; forward from the tip.
    await expect(
      octokit.rest.git.updateRef({ ...at, ref: 'heads/agent/data', sha: base.data.sha }),
    ).rejects.toMatchObject({ status: 422 });
    await octokit.rest.git.updateRef({ ...at, ref: 'heads/agent/data', sha: commit.data.sha });
    // The pull request's head moved with the ref, as with a push.
    const after = await octokit.rest.pulls.get({ ...at, pull_number: pull.data.number });
    expect(after.data.head.sha).toBe(commit.data.sha);
    expect(after.data.commits).toBe(2);
    const recursive = await octokit.rest.git.getTree({ ...at, tree_sha: commit.data.sha, recursive: '1' });
    expect(recursive.data.tree.map((e) => `${e.mode} ${e.type} ${e.path}`)).toEqual([
      '100644 blob README.md',
      '040000 tree bin',
      '100644 blob bin/data.bin',
      '040000 tree docs',
      '100644 blob docs/notes.md',
    ]);
    expect(recursive.data.truncated).toBe(false);
    const matching = await octokit.request('GET /repos/{owner}/{repo}/git/matching-refs/{ref}', {
      ...at,
      ref: 'heads/agent/d',
    });
    expect(matching.data.map((r: { ref: string }) => r.ref)).toEqual(['refs/heads/agent/data']);
    await octokit.rest.pulls.merge({ ...at, pull_number: pull.data.number, merge_method: 'squash' });
    const into = await clone();
    expect(readFileSync(join(into, 'bin', 'data.bin')).equals(binary)).toBe(true);
    expect(await git(['ls-files'], into)).toBe('README.md\nbin/data.bin\ndocs/notes.md');
    await git(['fsck', '--strict'], into);
    expect(emulator.state.repo('fleetbench/repo-1').branches.get('main')).toBe(
      await git(['rev-parse', 'HEAD'], into),
    );
  }, 60_000);

  it('what a git push brought reads through contents and trees (from the bare repository)', async () => {
    const { octokit, clone, pushUrl } = await world();
    const into = await clone();
    mkdirSync(join(into, 'lib', 'deep'), { recursive: true });
    writeFileSync(join(into, 'lib', 'deep', 'x.ts'), 'export const x = 1;\n');
    writeFileSync(join(into, 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    const large = 'x'.repeat(GIT_BOUNDS.inlineContentBytes + 10);
    writeFileSync(join(into, 'large.txt'), large);
    await git(['checkout', '--quiet', '-b', 'agent/pushed'], into);
    await git(['add', '.'], into);
    await git(['commit', '--quiet', '-m', 'Pushed files'], into);
    await git(['push', '--quiet', pushUrl, 'agent/pushed'], into);
    const pushedTree = await git(['rev-parse', 'HEAD^{tree}'], into);
    const file = await octokit.rest.repos.getContent({ ...at, path: 'lib/deep/x.ts', ref: 'agent/pushed' });
    expect(fromB64((file.data as { content: string }).content).toString()).toBe('export const x = 1;\n');
    const tree = await octokit.rest.git.getTree({ ...at, tree_sha: 'agent/pushed', recursive: 'true' });
    expect(tree.data.sha).toBe(pushedTree);
    expect(tree.data.tree.map((e) => `${e.mode} ${e.path}`)).toEqual(
      (await git(['ls-tree', '-r', '-t', 'HEAD'], into)).split('\n').map((line) => {
        const [mode, , , path] = line.split(/\s+/);
        return `${mode} ${path}`;
      }),
    );
    // A pushed file over 1 MiB: sized without being read (`encoding: none`), and whole when asked raw.
    const big = await octokit.rest.repos.getContent({ ...at, path: 'large.txt', ref: 'agent/pushed' });
    expect(big.data).toMatchObject({ size: large.length, content: '', encoding: 'none' });
    const raw = await octokit.request('GET /repos/{owner}/{repo}/contents/{path}', {
      ...at,
      path: 'large.txt',
      ref: 'agent/pushed',
      headers: { accept: 'application/vnd.github.raw' },
    });
    expect(raw.data).toBe(large);
    // An API write on top of the pushed commit: its tree reuses what only git had; a fetch gets it.
    const sh = await octokit.rest.repos.getContent({ ...at, path: 'run.sh', ref: 'agent/pushed' });
    await octokit.rest.repos.createOrUpdateFileContents({
      ...at,
      path: 'run.sh',
      message: 'Say more',
      content: b64('#!/bin/sh\necho hello\n'),
      sha: (sh.data as { sha: string }).sha,
      branch: 'agent/pushed',
    });
    await git(['pull', '--quiet', pushUrl, 'agent/pushed'], into);
    expect(readFileSync(join(into, 'run.sh'), 'utf8')).toBe('#!/bin/sh\necho hello\n');
    // The executable bit was kept (the entry's mode).
    expect(await git(['ls-tree', 'HEAD', 'run.sh'], into)).toMatch(/^100755 /);
  }, 60_000);
});

/** Two pull requests, each writing its own file from main through the contents API, merged one after the other. */
async function twoPullRequests(
  octokit: InstanceType<typeof Octokit>,
  files: [string, string],
  prefix = 'agent/two',
) {
  const main = (await octokit.rest.git.getRef({ ...at, ref: 'heads/main' })).data.object.sha;
  const pulls: number[] = [];
  for (const [i, path] of files.entries()) {
    await octokit.rest.git.createRef({ ...at, ref: `refs/heads/${prefix}-${i}`, sha: main });
    await octokit.rest.repos.createOrUpdateFileContents({
      ...at,
      path,
      message: `Write ${path}`,
      content: b64(`${path} ${i}\n`),
      branch: `${prefix}-${i}`,
    });
    pulls.push(
      (await octokit.rest.pulls.create({ ...at, head: `${prefix}-${i}`, base: 'main', title: path })).data
        .number,
    );
  }
  const merged = [];
  for (const pull_number of pulls)
    merged.push(
      await octokit.rest.pulls.merge({ ...at, pull_number }).then(
        (r) => r.status,
        (e: { status: number }) => e.status,
      ),
    );
  return merged;
}

describe.skipIf(gitTool.skip)('merges of pull requests that changed files on both sides', () => {
  beforeAll(() => gitTool.require());
  it('on a server: the second merge keeps both files; a clone of main has them', async () => {
    const { octokit, clone } = await world();
    expect(await twoPullRequests(octokit, ['one.txt', 'two/two.txt'])).toEqual([200, 200]);
    const into = await clone();
    expect(await git(['ls-files'], into)).toBe('README.md\none.txt\ntwo/two.txt');
  }, 60_000);
});

describe.skipIf(ghTool.skip)('gh api on the contents API', () => {
  beforeAll(() => ghTool.require());
  it('gh api PUT then GET contents', async () => {
    const emulator = new GitHubEmulator({
      clock: new RealClock(),
      rng: new Rng(6),
      fixtures: { repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 },
      latency: false,
    });
    const made = generateSelfSignedCert(join(dir, 'tls'));
    const server = await serve(emulator, made);
    const config = join(dir, 'gh-config');
    mkdirSync(config, { recursive: true });
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: dir,
      GH_HOST: `127.0.0.1:${server.port}`,
      GH_ENTERPRISE_TOKEN: emulator.defaultToken,
      SSL_CERT_FILE: made.certPath,
      GH_CONFIG_DIR: config,
      TMPDIR: dir,
      GH_PROMPT_DISABLED: '1',
      GH_NO_UPDATE_NOTIFIER: '1',
      GH_PAGER: 'cat',
      NO_COLOR: '1',
    };
    const gh = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile('gh', args, { env, timeout: 30_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });
    const put = await gh([
      'api',
      '-X',
      'PUT',
      'repos/fleetbench/repo-1/contents/notes/today.md',
      '-f',
      'message=Notes',
      '-f',
      `content=${b64('# Today\n')}`,
    ]);
    expect(put.stderr).toBe('');
    expect(JSON.parse(put.stdout).content.path).toBe('notes/today.md');
    const get = await gh(['api', 'repos/fleetbench/repo-1/contents/notes/today.md', '--jq', '.content']);
    expect(get.code).toBe(0);
    expect(fromB64(get.stdout).toString()).toBe('# Today\n');
    const again = await gh([
      'api',
      '-X',
      'PUT',
      'repos/fleetbench/repo-1/contents/notes/today.md',
      '-f',
      'message=Again',
      '-f',
      `content=${b64('# Again\n')}`,
    ]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('"sha" wasn\'t supplied');
  }, 60_000);
});

describe('contents and Git data in-process', () => {
  const world = inProcess({ fixtures: { repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 } });
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await world.transport.request({
      method,
      path: `/repos/fleetbench/repo-1${path}`,
      headers: {},
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: res.body === '' ? undefined : JSON.parse(res.body) };
  };
  afterAll(() => world.emulator.close());

  it.skipIf(gitTool.skip)(
    'any files written through the trees API give the tree git writes for them (git write-tree)',
    async () => {
      const name = fc
        .stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,11}$/)
        .filter((n) => !n.endsWith('.lock') && n.toLowerCase() !== '.git');
      const files = fc
        .dictionary(
          fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/')),
          fc.record({ text: fc.string({ maxLength: 40 }), exec: fc.boolean() }),
          { minKeys: 1, maxKeys: 8 },
        )
        .filter((set) => {
          // A path cannot be both a file and a directory.
          const paths = Object.keys(set);
          return paths.every((p) => !paths.some((q) => q.startsWith(`${p}/`)));
        });
      let round = 0;
      await fc.assert(
        fc.asyncProperty(files, async (set) => {
          const made = await send('POST', '/git/trees', {
            tree: Object.entries(set).map(([path, f]) => ({
              path,
              mode: f.exec ? '100755' : '100644',
              type: 'blob',
              content: f.text,
            })),
          });
          expect(made.status).toBe(201);
          const repoDir = join(dir, `mktree-${++round}`);
          execFileSync('git', ['init', '--quiet', repoDir], { env: gitEnv });
          for (const [path, f] of Object.entries(set)) {
            const sha = execFileSync('git', ['hash-object', '-w', '--stdin'], {
              cwd: repoDir,
              env: gitEnv,
              input: f.text,
            })
              .toString()
              .trim();
            execFileSync(
              'git',
              ['update-index', '--add', '--cacheinfo', `${f.exec ? '100755' : '100644'},${sha},${path}`],
              { cwd: repoDir, env: gitEnv },
            );
          }
          const expected = execFileSync('git', ['write-tree'], { cwd: repoDir, env: gitEnv })
            .toString()
            .trim();
          expect(made.json.sha).toBe(expected);
        }),
        { numRuns: 25 },
      );
    },
    120_000,
  );

  it('a contents GET returns exactly the bytes PUT, for any bytes', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (bytes) => {
        const path = `data/file-${++n}.bin`;
        const put = await send('PUT', `/contents/${path}`, {
          message: 'bytes',
          content: Buffer.from(bytes).toString('base64'),
        });
        expect(put.status).toBe(201);
        const got = await send('GET', `/contents/${path}`);
        expect(got.status).toBe(200);
        expect(fromB64(got.json.content).equals(Buffer.from(bytes))).toBe(true);
        expect(got.json.sha).toBe(put.json.content.sha);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it('two pull requests changing other files both merge; the same file changed twice conflicts', async () => {
    const server = inProcess({ fixtures: { repos: 1, issuesPerRepo: 0, pullsPerRepo: 0 } });
    // Octokit's fetch, answered by the emulator's handle() (no socket).
    const fetch = async (
      url: string,
      init: { method?: string; headers?: Record<string, string>; body?: string },
    ) => {
      const u = new URL(url);
      const res = await server.transport.request({
        method: init.method ?? 'GET',
        path: `${u.pathname}${u.search}`,
        headers: init.headers ?? {},
        body: init.body,
      });
      return new Response(res.status === 204 || res.status === 304 ? null : res.body, {
        status: res.status,
        headers: res.headers,
      });
    };
    const octokit = new Octokit({
      baseUrl: 'http://in-process',
      auth: server.emulator.defaultToken,
      request: { fetch },
    });
    server.emulator.state.repo('fleetbench/repo-1').requiredReviews = 0;
    expect(await twoPullRequests(octokit, ['a.txt', 'b.txt'])).toEqual([200, 200]);
    const readme = await send('GET', '/contents');
    expect(readme.status).toBe(200);
    const main = server.emulator.state.repo('fleetbench/repo-1');
    const tree = await server.transport.request({
      method: 'GET',
      path: `/repos/fleetbench/repo-1/git/trees/${main.branches.get('main')}`,
      headers: {},
    });
    expect(JSON.parse(tree.body).tree.map((e: { path: string }) => e.path)).toEqual([
      'README.md',
      'a.txt',
      'b.txt',
    ]);
    server.emulator.close();
  });

  it('a session is known by the branch it reads or writes: PUT `branch`, GET `?ref=`', async () => {
    const main = world.emulator.state.repo('fleetbench/repo-1').branches.get('main')!;
    expect((await send('POST', '/git/refs', { ref: 'refs/heads/fleet/s-1', sha: main })).status).toBe(201);
    world.emulator.admin.registerSession({ session: 's-1', repo: 'fleetbench/repo-1', branch: 'fleet/s-1' });
    const session = () => world.apiRecords().at(-1)?.session;
    await send('PUT', '/contents/session.txt', { message: 'm', content: b64('s\n'), branch: 'fleet/s-1' });
    expect(session()).toBe('s-1');
    await send('GET', '/contents/session.txt?ref=fleet/s-1');
    expect(session()).toBe('s-1');
    // A SHA names no session's branch: shared.
    await send('GET', `/contents/README.md?ref=${main}`);
    expect(session()).toBeUndefined();
  });

  it('bounds and refusals: malformed and long paths, bad base64, unknown objects, a listing of 1,000', async () => {
    expect((await send('PUT', '/contents/a/../b', { message: 'm', content: '' })).status).toBe(422);
    expect(
      (
        await send('PUT', `/contents/${'x'.repeat(GIT_BOUNDS.maxNameBytes + 1)}`, {
          message: 'm',
          content: '',
        })
      ).status,
    ).toBe(422);
    const long = Array.from({ length: 2100 }, () => 'ab').join('/');
    const tooLong = await send('POST', '/git/trees', {
      tree: [{ path: long, mode: '100644', type: 'blob', content: '' }],
    });
    expect(tooLong.status).toBe(422);
    expect(tooLong.json.message).toContain('docs/limits.md');
    expect((await send('PUT', '/contents/x.txt', { message: 'm', content: '!!!' })).status).toBe(422);
    expect((await send('PUT', '/contents/x.txt', { content: 'eA==' })).status).toBe(422);
    expect(
      (await send('PUT', '/contents/x.txt', { message: 'm', content: 'eA==', branch: 'nope' })).status,
    ).toBe(404);
    expect((await send('POST', '/git/commits', { message: 'm', tree: 'f'.repeat(40) })).status).toBe(422);
    expect(
      (
        await send('POST', '/git/trees', {
          tree: [{ path: 'a', mode: '100644', type: 'blob', sha: 'f'.repeat(40) }],
        })
      ).status,
    ).toBe(422);
    expect(
      (
        await send('POST', '/git/trees', {
          tree: [{ path: 'missing', mode: '100644', type: 'blob', sha: null }],
        })
      ).status,
    ).toBe(422);
    expect((await send('GET', `/git/blobs/${'f'.repeat(40)}`)).status).toBe(404);
    expect((await send('GET', `/git/trees/${'f'.repeat(40)}`)).status).toBe(404);
    expect((await send('GET', '/contents/no/such/file')).status).toBe(404);
    // A directory of 1,001 files lists its first 1,000 (GitHub's bound); the tree has them all.
    const tree = await send('POST', '/git/trees', {
      tree: Array.from({ length: 1001 }, (_, i) => ({
        path: `many/f${i}`,
        mode: '100644',
        type: 'blob',
        content: `${i}`,
      })),
    });
    const main = world.emulator.state.repo('fleetbench/repo-1').branches.get('main')!;
    const commit = await send('POST', '/git/commits', {
      message: 'many',
      tree: tree.json.sha,
      parents: [main],
    });
    expect(commit.status).toBe(201);
    const listed = await send('GET', `/contents/many?ref=${commit.json.sha}`);
    expect(listed.json.length).toBe(GIT_BOUNDS.maxDirectoryEntries);
    expect((await send('GET', `/git/trees/${tree.json.sha}?recursive=1`)).json.tree.length).toBe(1002);
    // Above 1 MiB the file's content is not inline (GitHub: empty `content`, `encoding: none`).
    const big = Buffer.alloc(GIT_BOUNDS.inlineContentBytes + 1, 'a');
    expect(
      (await send('PUT', '/contents/big.txt', { message: 'big', content: big.toString('base64') })).status,
    ).toBe(201);
    const bigRead = await send('GET', '/contents/big.txt');
    expect([bigRead.json.size, bigRead.json.content, bigRead.json.encoding]).toEqual([
      big.length,
      '',
      'none',
    ]);
    // Raw: a file's text as sent; bytes that are not UTF-8 are refused rather than altered.
    const raw = (path: string) =>
      world.transport.request({
        method: 'GET',
        path: `/repos/fleetbench/repo-1/contents/${path}`,
        headers: { accept: 'application/vnd.github.raw' },
      });
    await send('PUT', '/contents/text.md', { message: 't', content: b64('héllo\n') });
    await send('PUT', '/contents/bytes.bin', {
      message: 'b',
      content: Buffer.from([0xff, 0xfe]).toString('base64'),
    });
    const text = await raw('text.md');
    expect([text.status, text.body, text.headers['content-type']]).toEqual([
      200,
      'héllo\n',
      'application/vnd.github.raw; charset=utf-8',
    ]);
    expect((await raw('bytes.bin')).status).toBe(403);
  });
});

describe('the recursive listing order', () => {
  it("a path's order key sorts as git's recursive order: by segments, each by its UTF-8 bytes, a directory before its entries", () => {
    const segmentOrder = (a: string, b: string): number => {
      const x = a.split('/');
      const y = b.split('/');
      for (let i = 0; i < Math.min(x.length, y.length); i++)
        if (x[i] !== y[i]) return Buffer.compare(Buffer.from(x[i]!), Buffer.from(y[i]!));
      return x.length - y.length;
    };
    const name = fc
      .string({
        unit: fc.oneof(
          fc.constantFrom('a', 'b', '.', '-', 'é', '中', '😀', 'Z'),
          fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
        ),
        minLength: 1,
        maxLength: 6,
      })
      .filter((n) => !n.includes('/') && !n.includes('\0'));
    const path = fc.array(name, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
    fc.assert(
      fc.property(path, path, (a, b) => {
        const byKey = pathOrderKey(a) < pathOrderKey(b) ? -1 : pathOrderKey(a) > pathOrderKey(b) ? 1 : 0;
        expect(byKey).toBe(Math.sign(segmentOrder(a, b)));
      }),
      { numRuns: 2000 },
    );
  });
});
