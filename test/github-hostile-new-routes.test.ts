import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { GitHubStateError } from '../src/github/state.ts';
import { GIT_BOUNDS } from '../src/github/world/bounds.ts';
import { gitTestEnv, runGit } from './helpers/git.ts';
import { inProcess } from './helpers/github.ts';
import { slowestAnswerDuring } from './helpers/probe.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

afterAll(stopAll);
const dir = scratchDir('fleetbench-hostile-new-');
const gitTool = systemTool('git', ['--version'], 'git');
const gitEnv = gitTestEnv(dir);

interface Info {
  url: string;
  token: string;
  adminToken: string;
}

async function serve() {
  const server = await startCliServer<Info>(['github', 'serve']);
  const headers = { authorization: `token ${server.info.token}`, 'content-type': 'application/json' };
  const repoUrl = `${server.info.url}/repos/fleetbench/repo-1`;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${repoUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  /** The slowest answer another client got while `work` ran (ms, docs/limits.md's measure). */
  const probed = (work: () => Promise<void>) =>
    slowestAnswerDuring(
      `${server.info.url}/rate_limit`,
      work,
      { headers },
      { serverPid: server.process.pid },
    );
  return { server, call, probed };
}

/**
 * github serve and a clone of its repo-1 (under `name`): `fetchChecked` fetches one branch with
 * git's fsck on (`fetch.fsckObjects`), which fails on any object git refuses.
 */
async function servedClone(name: string) {
  const served = await serve();
  const clone = join(dir, name);
  await runGit(['clone', '-q', `${served.server.info.url}/fleetbench/repo-1.git`, clone], dir, gitEnv);
  const tip = ((await served.call('GET', '/branches/main')).json.commit as { sha: string }).sha;
  const fetchChecked = (branch: string) =>
    runGit(['-c', 'fetch.fsckObjects=true', 'fetch', '-q', 'origin', `refs/heads/${branch}`], clone, gitEnv);
  return { ...served, tip, fetchChecked };
}

/** A path `depth` directories deep under `top`, within the 4,096-byte path bound. */
const deepPath = (top: string, depth: number) => `${top}/${Array(depth).fill('a').join('/')}/f`;

describe('github serve: one tree edit is bounded (POST git/trees, contents, createCommitOnBranch)', () => {
  it('200 paths 1,990 directories deep: refused 422 at once, not 400,000 trees made', async () => {
    const { server, call, probed } = await serve();
    const tree = Array.from({ length: 200 }, (_, i) => ({
      path: deepPath(`x${i}`, 1_990),
      mode: '100644',
      content: String(i),
    }));
    let answer: Awaited<ReturnType<typeof call>> | undefined;
    const slowest = await probed(async () => {
      answer = await call('POST', '/git/trees', { tree });
    });
    // It made 2.4 million trees for 1,200 such paths: 33 s of the event loop and 700 MB.
    expect(answer?.status).toBe(422);
    expect(answer?.json.message).toMatch(
      /a request's tree edits read and write at most 1000000 tree entries/,
    );
    expect(slowest).toBeLessThan(2_000);
    // One such path is a tree like any other.
    expect((await call('POST', '/git/trees', { tree: tree.slice(0, 1) })).status).toBe(201);
    expect(server.process.exitCode).toBeNull();
  }, 120_000);

  it('a root of 2,000 directories that are one tree of 50,000 files: listed recursively (truncated), edited in 50 of them refused', async () => {
    const { server, call, probed } = await serve();
    const blob = (await call('POST', '/git/blobs', { content: 'x' })).json.sha as string;
    const files = Array.from({ length: 50_000 }, (_, i) => ({ path: `f${i}`, mode: '100644', sha: blob }));
    const big = (await call('POST', '/git/trees', { tree: files })).json.sha as string;
    const dirs = Array.from({ length: 2_000 }, (_, i) => ({ path: `d${i}`, mode: '040000', sha: big }));
    const root = (await call('POST', '/git/trees', { tree: dirs })).json.sha as string;
    let listing: Awaited<ReturnType<typeof call>> | undefined;
    const slowestListing = await probed(async () => {
      listing = await call('GET', `/git/trees/${root}?recursive=1`);
    });
    // The listing parsed the one tree 2,000 times (100 million entries): the server ran out of memory.
    expect(listing?.status).toBe(200);
    expect(listing?.json.truncated).toBe(true);
    expect(((listing?.json.tree ?? []) as unknown[]).length).toBeLessThanOrEqual(
      GIT_BOUNDS.maxRecursiveEntries,
    );
    expect(slowestListing).toBeLessThan(2_000);
    let edit: Awaited<ReturnType<typeof call>> | undefined;
    const edits = Array.from({ length: 50 }, (_, i) => ({ path: `d${i}/new`, mode: '100644', content: 'y' }));
    const slowestEdit = await probed(async () => {
      edit = await call('POST', '/git/trees', { base_tree: root, tree: edits });
    });
    expect(edit?.status).toBe(422);
    expect(slowestEdit).toBeLessThan(2_000);
    // Two of them are an ordinary edit.
    expect((await call('POST', '/git/trees', { base_tree: root, tree: edits.slice(0, 2) })).status).toBe(201);
    expect(server.process.exitCode).toBeNull();
  }, 180_000);

  it('any edit of nested paths makes at most maxEditWork / 64 trees, or is refused 422 (property)', () => {
    const { emulator } = inProcess();
    const repo = emulator.state.repo('fleetbench/repo-1');
    const store = emulator.state.gitStore;
    const blob = store.put(repo, 'blob', Buffer.from('x'));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (paths, depth, fanOut, salt) => {
          // `paths` paths `depth` deep, spread over `fanOut` top directories, each file its own blob.
          const edits = Array.from({ length: paths }, (_, i) => ({
            path: deepPath(`t${salt}-${i % fanOut}`, depth).replace(/\/f$/, `/f${i}`),
            entry: { mode: '100644' as const, sha: blob },
          }));
          const before = store.objectCount();
          try {
            store.editTree(repo, undefined, edits);
          } catch (error) {
            expect(error).toBeInstanceOf(GitHubStateError);
            expect((error as GitHubStateError).status).toBe(422);
          }
          // docs/limits.md: 1,000,000 entries read and written, each tree counting 64 more.
          expect(store.objectCount() - before).toBeLessThanOrEqual(1_000_000 / 64 + 1);
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});

describe('github serve: GraphQL aliases repeating createCommitOnBranch share one bound', () => {
  const repoName = 'fleetbench/repo-1';
  async function graphql(info: Info, query: string, variables: Record<string, unknown>) {
    const res = await fetch(`${info.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `token ${info.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as { data?: Record<string, unknown>; errors?: { message: string }[] };
  }

  it('100 aliases of one 3.5 MB file: the contents past a request body are refused, answered at once', async () => {
    const { server, call, probed } = await serve();
    const tip = ((await call('GET', '/branches/main')).json.commit as { sha: string }).sha;
    // Each alias fails at its deletion of a file that is not there, so the branch never moves and
    // every alias decodes and hashes the 3.5 MB again.
    const alias = (i: number) =>
      `m${i}: createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "${repoName}", branchName: "main"}, expectedHeadOid: "${tip}", message: {headline: "x"}, fileChanges: {additions: [{path: "f", contents: $c}], deletions: [{path: "nope"}]}}) { clientMutationId }`;
    const query = `mutation($c: Base64String!) { ${Array.from({ length: 100 }, (_, i) => alias(i)).join(' ')} }`;
    const contents = Buffer.alloc(3_500_000, 'a').toString('base64');
    let answer: Awaited<ReturnType<typeof graphql>> | undefined;
    const slowest = await probed(async () => {
      answer = await graphql(server.info, query, { c: contents });
    });
    // It held the server 4.5 s (100 decodes and hashes of 3.5 MB).
    expect(slowest).toBeLessThan(2_000);
    const messages = (answer?.errors ?? []).map((e) => e.message);
    expect(messages).toHaveLength(100);
    expect(messages.filter((m) => /at most 5242880 characters of Base64/.test(m)).length).toBe(99);
    expect(server.process.exitCode).toBeNull();
  }, 120_000);

  it('40 aliases each committing deep paths on its own branch: the tree edit work is the request’s, not each alias’s', async () => {
    const { server, call, probed } = await serve();
    const tip = ((await call('GET', '/branches/main')).json.commit as { sha: string }).sha;
    const n = 40;
    const refs = Array.from(
      { length: n },
      (_, i) =>
        `r${i}: createRef(input: {repositoryId: $repo, name: "refs/heads/deep-${i}", oid: "${tip}"}) { ref { name } }`,
    );
    const commits = Array.from(
      { length: n },
      (_, i) =>
        `c${i}: createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "${repoName}", branchName: "deep-${i}"}, expectedHeadOid: "${tip}", message: {headline: "x"}, fileChanges: {additions: $adds}}) { commit { oid } }`,
    );
    const found = await graphql(
      server.info,
      `query { repository(owner: "fleetbench", name: "repo-1") { id } }`,
      {},
    );
    const repoId = (found.data?.repository as { id: string } | undefined)?.id;
    // 4 paths 1,990 directories deep: 8,000 trees, about half of what one request may make.
    const adds = Array.from({ length: 4 }, (_, i) => ({ path: deepPath(`x${i}`, 1_990), contents: 'eA==' }));
    let answer: Awaited<ReturnType<typeof graphql>> | undefined;
    const slowest = await probed(async () => {
      answer = await graphql(
        server.info,
        `mutation($repo: ID!, $adds: [FileAddition!]!) { ${refs.join(' ')} ${commits.join(' ')} }`,
        { repo: repoId, adds },
      );
    });
    // Each alias made its 8,000 trees: 320,000 in one request, seconds of the event loop.
    expect(slowest).toBeLessThan(2_000);
    const committed = Object.entries(answer?.data ?? {}).filter(([k, v]) => k.startsWith('c') && v !== null);
    expect(committed.length).toBeGreaterThanOrEqual(1);
    expect(committed.length).toBeLessThan(n);
    expect((answer?.errors ?? []).some((e) => /tree edits read and write at most/.test(e.message))).toBe(
      true,
    );
    expect(server.process.exitCode).toBeNull();
  }, 120_000);
});

describe('github serve: webhooks', () => {
  /** The repository owner's token (a hook is its admin's). */
  async function ownerToken(info: Info): Promise<string> {
    const res = await fetch(`${info.url}/_fleetbench/mint-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${info.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'fleetbench' }),
    });
    return ((await res.json()) as { token: string }).token;
  }

  async function ownerCall(info: Info, token: string, method: string, path: string, body?: unknown) {
    const res = await fetch(`${info.url}/repos/fleetbench/repo-1${path}`, {
      method,
      headers: { authorization: `token ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json().catch(() => ({}))) as Record<string, unknown> };
  }

  /** A receiver that takes the connection and never answers. */
  async function silentReceiver() {
    const { createServer } = await import('node:net');
    const sockets = new Set<import('node:net').Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('data', () => {});
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const close = () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      });
    return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, close };
  }

  it('add_events cannot grow a hook past 300 event names, 300 at a time', async () => {
    const { server } = await serve();
    const token = await ownerToken(server.info);
    const hook = await ownerCall(server.info, token, 'POST', '/hooks', {
      config: { url: 'http://127.0.0.1:1/x', content_type: 'json' },
      events: ['push'],
    });
    expect(hook.status).toBe(201);
    const statuses: number[] = [];
    for (let round = 0; round < 3; round++) {
      // The first fills the hook to 300 with its `push`; the next would pass it.
      const names = Array.from({ length: round === 0 ? 299 : 300 }, (_, i) => `event-${round}-${i}`);
      statuses.push(
        (await ownerCall(server.info, token, 'PATCH', `/hooks/${hook.json.id}`, { add_events: names }))
          .status,
      );
    }
    // Each PATCH added 300: 15,001 names after 50 of them, each delivery scanning them.
    expect(statuses).toEqual([200, 422, 422]);
    const now = await ownerCall(server.info, token, 'GET', `/hooks/${hook.json.id}`);
    expect((now.json.events as string[]).length).toBeLessThanOrEqual(300);
  }, 60_000);

  it('a receiver that never answers: payloads waiting past 64 MiB are dropped and recorded, not kept', async () => {
    const { server } = await serve();
    const token = await ownerToken(server.info);
    const receiver = await silentReceiver();
    try {
      const hook = await ownerCall(server.info, token, 'POST', '/hooks', {
        config: { url: receiver.url, content_type: 'json' },
        events: ['issues'],
      });
      expect(hook.status).toBe(201);
      // Each edit's payload holds the 3 MB body and the body before it: about 6 MB waiting a time.
      for (let i = 0; i < 20; i++) {
        const body = `${i}`.padEnd(3_000_000, 'b');
        expect((await ownerCall(server.info, token, 'PATCH', '/issues/1', { body })).status).toBe(200);
      }
      const deliveries = await fetch(
        `${server.info.url}/repos/fleetbench/repo-1/hooks/${hook.json.id}/deliveries?per_page=100`,
        { headers: { authorization: `token ${token}` } },
      );
      const dropped = ((await deliveries.json()) as { status: string }[]).filter((d) =>
        d.status.startsWith('dropped: the delivery queue is full'),
      );
      // 20 of 1,000 deliveries fitted the queue's count: 120 MB were kept waiting.
      expect(dropped.length).toBeGreaterThan(0);
      expect(server.process.exitCode).toBeNull();
    } finally {
      await receiver.close();
    }
  }, 120_000);
});

describe('the objects the API made: the 1 GiB bound counts what keeping them costs', () => {
  it('the bytes counted grow at least as much as the memory the objects take, whatever their size (property)', () => {
    setFlagsFromString('--expose_gc');
    const gc = runInNewContext('gc') as () => void;
    const inUse = () => {
      gc();
      gc();
      const memory = process.memoryUsage();
      return memory.heapUsed + memory.arrayBuffers;
    };
    const { emulator } = inProcess();
    const repo = emulator.state.repo('fleetbench/repo-1');
    const store = emulator.state.gitStore;
    let run = 0;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 200 }), fc.constantFrom('blob', 'tree'), (size, type) => {
        run++;
        const before = inUse();
        const countedBefore = store.keptBytes();
        const n = 20_000;
        for (let i = 0; i < n; i++) {
          // Distinct bodies of `size` bytes or so (a tree's: one entry named so).
          const name = `${run}-${i}-`.padEnd(size, 'x');
          const body =
            type === 'blob'
              ? Buffer.from(name)
              : Buffer.concat([Buffer.from(`100644 ${name}\0`), Buffer.alloc(20, i % 256)]);
          store.put(repo, type as 'blob' | 'tree', body);
        }
        const grown = inUse() - before;
        // Counting bodies alone: 9 bytes counted for 276 kept for each small blob.
        expect(store.keptBytes() - countedBefore).toBeGreaterThanOrEqual(grown * 0.9);
      }),
      { numRuns: 8 },
    );
  }, 120_000);
});

describe('GitHub Apps: a JWT longer than 8,192 characters', () => {
  const jwtOf = (lengths: [number, number, number], seed: number) => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    let x = seed;
    const part = (n: number) =>
      Array.from({ length: n }, () => {
        x = (x * 1103515245 + 12345) % 2 ** 31;
        return alphabet[x % 64];
      }).join('');
    return `eyJ${part(lengths[0])}.${part(lengths[1])}.${part(lengths[2])}`;
  };

  it('is refused undecodable on the App’s routes of github serve, as docs/limits.md says', async () => {
    const { server } = await serve();
    const res = await fetch(`${server.info.url}/app`, {
      headers: { authorization: `Bearer ${jwtOf([3_000, 3_000, 3_000], 1)}` },
    });
    expect(res.status).toBe(401);
    // It was `Bad credentials`: the shape test gave up on the length before saying it was a JWT.
    expect(((await res.json()) as { message: string }).message).toBe('A JSON web token could not be decoded');
  }, 60_000);

  it('is never taken as an unknown token (the default user’s) where a world takes those (property)', async () => {
    const h = inProcess({ apps: [{}], acceptUnknownTokens: true });
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(
          fc.integer({ min: 1, max: 6_000 }),
          fc.integer({ min: 1, max: 6_000 }),
          fc.integer({ min: 0, max: 6_000 }),
        ),
        fc.integer({ min: 1, max: 2 ** 30 }),
        async (lengths, seed) => {
          fc.pre(lengths[0] + lengths[1] + lengths[2] + 5 > 8_192);
          const token = jwtOf(lengths, seed);
          const res = await h.get('/repos/fleetbench/repo-1/issues', { authorization: `Bearer ${token}` });
          // It was 200: a forged JWT of 8,193 characters or more was the default user.
          expect(res.status).toBe(401);
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe('POST git/commits: parents', () => {
  it('100,000 copies of one parent are refused 422 at once; 1,000 are taken and read back whole', async () => {
    const { call, probed } = await serve();
    const main = (await call('GET', '/branches/main')).json.commit as {
      sha: string;
      commit: { tree: { sha: string } };
    };
    const tree = main.commit.tree.sha;
    let many: { status: number; json: Record<string, unknown> } | undefined;
    const slowest = await probed(async () => {
      many = await call('POST', '/git/commits', {
        message: 'm',
        tree,
        parents: Array(100_000).fill(main.sha),
      });
    });
    expect(many!.status).toBe(422);
    expect(String(many!.json.message)).toContain('"parents" holds at most 1000 commits');
    expect(slowest).toBeLessThan(2_000);
    const ok = await call('POST', '/git/commits', {
      message: 'm',
      tree,
      parents: Array(1_000).fill(main.sha),
    });
    expect(ok.status).toBe(201);
    const read = await call('GET', `/git/commits/${ok.json.sha as string}`);
    expect((read.json.parents as unknown[]).length).toBe(1_000);
  });
});

describe('branches made through the API (GraphQL createRef aliases, POST git/refs)', () => {
  it('stop at 100,000 in a repository: 700 a request no longer grow it without end, matching-refs stays answerable', async () => {
    const { server, call, probed } = await serve();
    const headers = { authorization: `token ${server.info.token}`, 'content-type': 'application/json' };
    const graphql = async (query: string) =>
      (await (
        await fetch(`${server.info.url}/graphql`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ query }),
        })
      ).json()) as { data?: Record<string, unknown> | null; errors?: { message: string }[] };
    const tip = ((await call('GET', '/branches/main')).json.commit as { sha: string }).sha;
    const found = await graphql('query { repository(owner: "fleetbench", name: "repo-1") { id } }');
    const repoId = (found.data?.repository as { id: string } | undefined)?.id;
    const perRequest = 700;
    let refused: string | undefined;
    for (let request = 0; request < 150 && refused === undefined; request++) {
      const aliases = Array.from(
        { length: perRequest },
        (_, i) =>
          `a${i}: createRef(input: {repositoryId: "${repoId}", name: "refs/heads/b${request}-${i}", oid: "${tip}"}) { clientMutationId }`,
      );
      const answer = await graphql(`mutation { ${aliases.join(' ')} }`);
      refused = answer.errors?.[0]?.message;
    }
    // 150 requests of 700 would make 105,000: it made them all.
    expect(refused).toMatch(/a repository holds at most 100000 branches made through the API/);
    const rest = await call('POST', '/git/refs', { ref: 'refs/heads/one-more', sha: tip });
    expect(rest.status).toBe(422);
    let listing: Awaited<ReturnType<typeof call>> | undefined;
    const slowest = await probed(async () => {
      const res = await fetch(`${server.info.url}/repos/fleetbench/repo-1/git/matching-refs/heads/`, {
        headers,
      });
      listing = { status: res.status, json: { length: ((await res.json()) as unknown[]).length } };
    });
    expect(listing?.status).toBe(200);
    expect(listing?.json.length).toBe(100_000);
    expect(slowest).toBeLessThan(2_000);
    expect(server.process.exitCode).toBeNull();
  }, 300_000);
});

describe.skipIf(gitTool.skip)(
  'contents writes: the commit made is one git takes (fsck), whatever the committer',
  () => {
    it('any committer name, e-mail and date accepted makes a commit a fetch with fsck takes (property)', async () => {
      gitTool.require();
      const { server, call, tip, fetchChecked } = await servedClone('fsck-clone');
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\0', '\n', '<', '>', 'é'), maxLength: 8 }),
          fc.string({ unit: fc.constantFrom('x', '@', '\0', '\n', '.'), maxLength: 8 }),
          fc.option(fc.integer({ min: -8_640_000_000_000, max: 8_640_000_000_000 }), { nil: undefined }),
          async (name, email, ms) => {
            const committer = {
              name,
              email,
              ...(ms === undefined ? {} : { date: new Date(ms).toISOString() }),
            };
            // Each run on a branch of its own from main, fetched alone: a commit refused is this run's.
            const branch = `fsck-${++run}`;
            expect((await call('POST', '/git/refs', { ref: `refs/heads/${branch}`, sha: tip })).status).toBe(
              201,
            );
            const put = await call('PUT', '/contents/fsck.txt', {
              message: 'm',
              content: Buffer.from('x').toString('base64'),
              committer,
              branch,
            });
            expect([201, 422]).toContain(put.status);
            if (put.status !== 201) return;
            // It made commits git refuses (a NUL in a name: nulInHeader; a date before 1970:
            // badDateOverflow): a clone with transfer.fsckObjects failed for every client.
            await fetchChecked(branch);
          },
        ),
        { numRuns: 25 },
      );
      expect(server.process.exitCode).toBeNull();
    }, 240_000);

    it('any tree path and commit message accepted makes objects a fetch with fsck takes (property)', async () => {
      gitTool.require();
      const { server, call, tip, fetchChecked } = await servedClone('fsck-names');
      const baseTree = ((await call('GET', `/git/commits/${tip}`)).json.tree as { sha: string }).sha;
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.string({
            unit: fc.constantFrom('.', 'g', 'G', 'i', 't', 'T', '~', '1', ' ', ':', '\u200c', 'a'),
            minLength: 1,
            maxLength: 7,
          }),
          fc.string({ unit: fc.constantFrom('m', '\0', '\n'), minLength: 1, maxLength: 4 }),
          async (name, message) => {
            const tree = await call('POST', '/git/trees', {
              base_tree: baseTree,
              tree: [{ path: `dir/${name}`, mode: '100644', content: 'x' }],
            });
            expect([201, 422]).toContain(tree.status);
            if (tree.status !== 201) return;
            const commit = await call('POST', '/git/commits', {
              message,
              tree: tree.json.sha,
              parents: [tip],
            });
            expect([201, 422]).toContain(commit.status);
            if (commit.status !== 201) return;
            const branch = `names-${++run}`;
            expect(
              (await call('POST', '/git/refs', { ref: `refs/heads/${branch}`, sha: commit.json.sha })).status,
            ).toBe(201);
            // It took `.git.`, `git~1`, `.git` with U+200C inside (fsck: hasDotgit) and a NUL in a
            // message (nulInCommit): every fetch with fsck of the branch failed.
            await fetchChecked(branch);
          },
        ),
        {
          numRuns: 60,
          examples: [
            ['.git.', 'm'],
            ['git~1', 'm'],
            ['.gi\u200ct', 'm'],
            ['a', 'm\0'],
          ],
        },
      );
      expect(server.process.exitCode).toBeNull();
    }, 300_000);

    it('no spelling of .gitmodules is taken as a symbolic link: what is accepted a fetch with fsck takes (property)', async () => {
      gitTool.require();
      const { server, call, tip, fetchChecked } = await servedClone('fsck-gitmodules');
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(
            '.gitmodules',
            '.GITMODULES',
            'gitmod~1',
            'GITMOD~4',
            'gi7eba~3',
            '.gitmodules',
            'gitmodules',
            'gitmod~5',
          ),
          fc.constantFrom('', '.', ' ', '. ', ':x'),
          fc.constantFrom('', '\u200c', '\ufeff'),
          async (stem, tail, ignored) => {
            const name = `${stem.slice(0, 2)}${ignored}${stem.slice(2)}${tail}`;
            const tree = await call('POST', '/git/trees', {
              tree: [{ path: `d/${name}`, mode: '120000', content: 'target' }],
            });
            expect([201, 422]).toContain(tree.status);
            if (tree.status !== 201) return;
            const commit = await call('POST', '/git/commits', {
              message: 'm',
              tree: tree.json.sha,
              parents: [tip],
            });
            const branch = `gitmodules-${++run}`;
            expect(
              (await call('POST', '/git/refs', { ref: `refs/heads/${branch}`, sha: commit.json.sha })).status,
            ).toBe(201);
            // A `.gitmodules` symbolic link was made (fsck: gitmodulesSymlink): every fetch of it failed.
            await fetchChecked(branch);
          },
        ),
        { numRuns: 40 },
      );
      expect(server.process.exitCode).toBeNull();
    }, 300_000);
  },
);
