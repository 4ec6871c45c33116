/**
 * The real `gh` CLI (Debian's gh 2.23, installed by .ci/run) against the emulator's TLS binding
 * (what `fleetbench github serve --tls` runs: HTTP/2 by ALPN, a generated self-signed
 * certificate) with GH_HOST=127.0.0.1:PORT, GH_ENTERPRISE_TOKEN, SSL_CERT_FILE and a scratch
 * GH_CONFIG_DIR, exactly as docs/github-emulator.md tells users. One test per row of the
 * compatibility table there: the command succeeds, changes what it should, and each request is
 * charged what GitHub documents (a GraphQL query 1 primary + 1 secondary point, a mutation
 * 1 + 5, a REST GET 1 + 1, an authenticated 304 0 + 1, GET /rate_limit 0 + 1).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator, generateSelfSignedCert, HttpTransport } from '../src/github/index.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { serve } from './helpers/github.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { GH_DEBIAN13, systemTool } from './helpers/tools.ts';
import { waitUntil } from './helpers/wait.ts';

const dir = scratchDir('fleetbench-gh-');
afterAll(stopAll);
const ghTool = systemTool('gh', ['--version'], 'gh');
/** gh insists on HTTPS: the emulator's certificate is made with openssl. */
const openssl = systemTool('openssl', ['version'], 'openssl');
const ghTmp = join(dir, 'tmp');
mkdirSync(ghTmp);

interface GhResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** gh's environment for a host: only the emulator's token, a scratch config, no pager or colour. */
function ghEnv(host: string, token: string, certPath: string): NodeJS.ProcessEnv {
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
  ])
    delete env[name];
  return Object.assign(env, {
    GH_HOST: host,
    GH_ENTERPRISE_TOKEN: token,
    SSL_CERT_FILE: certPath,
    GH_CONFIG_DIR: config,
    // gh keeps feature-detection answers for 24 h in $TMPDIR/gh-cli-cache, keyed by URL and
    // token: one cache for this file's run, as on a machine where gh never ran (the shared
    // /tmp one made a later run on a reused port skip calls this table counts).
    TMPDIR: ghTmp,
    GH_PROMPT_DISABLED: '1',
    GH_NO_UPDATE_NOTIFIER: '1',
    GH_PAGER: 'cat',
    NO_COLOR: '1',
  });
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<GhResult> {
  return new Promise((resolve, reject) => {
    // Asynchronous on purpose: the server runs in this process and must keep answering.
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
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

describe.skipIf(ghTool.skip || openssl.skip)(
  'gh CLI against the emulator over TLS (compatibility table)',
  () => {
    const sink = new MemorySink();
    const emulator = new GitHubEmulator({
      clock: new RealClock(),
      rng: new Rng(5),
      trace: sink,
      // PRs 9..13 on agent/issue-1..5, each closing its issue.
      fixtures: { repos: 1, issuesPerRepo: 8, pullsPerRepo: 5 },
      latency: false,
    });
    let host = '';
    let certPath = '';
    let cert = '';

    beforeAll(async () => {
      ghTool.require();
      openssl.require();
      const made = generateSelfSignedCert(join(dir, 'tls'));
      certPath = made.certPath;
      cert = made.cert;
      const server = await serve(emulator, made);
      host = `127.0.0.1:${server.port}`;
    });

    let sessions = 0;
    /** A fresh user and session per row, so each row's charges are its own. */
    function identity(user = `gh-user-${sessions + 1}`) {
      const session = `gh-${++sessions}`;
      return { session, token: emulator.admin.mintToken({ user, session, source: 'cli' }).token };
    }
    const gh = (args: string[], token: string, bin = 'gh') => run(bin, args, ghEnv(host, token, certPath));
    const repoArg = () => ['-R', `${host}/fleetbench/repo-1`];
    /** [operation or route, primary points, secondary points] of a session's requests. */
    const charges = (session: string) =>
      sink.records.flatMap((r) =>
        r.kind === 'api' && r.session === session
          ? [[r.op ?? `${r.method} ${r.route}`, r.cost, r.secondaryCost]]
          : [],
      );
    const pull = (n: number) => emulator.state.pull(emulator.state.repo('fleetbench/repo-1'), n);
    const issue = (n: number) => emulator.state.issue(emulator.state.repo('fleetbench/repo-1'), n);

    it('gh api -i: HTTP/2.0, the rate-limit headers, and a free 304 with If-None-Match', async () => {
      const { session, token } = identity();
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
      expect(body.map((p: { number: number }) => p.number)).toEqual([13, 12, 11, 10, 9]);
      const etag = /^Etag: (.+)\r$/m.exec(first.stdout)![1]!;
      expect(etag).toMatch(/^W\/"[0-9a-z]+"$/);
      const again = await gh(
        ['api', '-i', 'repos/fleetbench/repo-1/pulls', '-H', `If-None-Match: ${etag}`],
        token,
      );
      // gh exits 1 on a 304 (it treats every status >= 300 as an error) but prints the answer.
      expect(again.stdout).toMatch(/^HTTP\/2\.0 304 Not Modified/);
      expect(again.stdout).toContain('X-Ratelimit-Remaining: 4999');
      expect(again.stderr).toContain('HTTP 304');
      expect(charges(session)).toEqual([
        ['GET /repos/{owner}/{repo}/pulls', 1, 1],
        ['GET /repos/{owner}/{repo}/pulls', 0, 1],
      ]);
      expect(
        sink.records
          .filter((r) => r.kind === 'api' && r.session === session)
          .map((r) => r.kind === 'api' && r.source),
      ).toEqual(['cli', 'cli']);
    });

    it('gh api -i graphql: HTTP/2.0; If-None-Match changes nothing (GraphQL has no ETags)', async () => {
      const { session, token } = identity();
      const res = await gh(
        [
          'api',
          '-i',
          'graphql',
          '-H',
          'If-None-Match: W/"anything"',
          '-f',
          'query=query Who { viewer { login } rateLimit { cost remaining used } }',
        ],
        token,
      );
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/^HTTP\/2\.0 200 OK/);
      expect(res.stdout).toContain('X-Ratelimit-Resource: graphql');
      expect(res.stdout).not.toMatch(/^Etag:/m);
      expect(JSON.parse(res.stdout.slice(res.stdout.indexOf('\r\n\r\n') + 4))).toEqual({
        data: { viewer: { login: 'gh-user-2' }, rateLimit: { cost: 1, remaining: 4999, used: 1 } },
      });
      expect(charges(session)).toEqual([['Who', 1, 1]]);
      const record = sink.records.find((r) => r.kind === 'api' && r.session === session);
      expect(record).toMatchObject({ conditional: true, notModified: false });
    });

    it('gh api rate_limit is free', async () => {
      const { session, token } = identity();
      const res = await gh(['api', 'rate_limit'], token);
      expect(res.code).toBe(0);
      expect(JSON.parse(res.stdout).resources.core).toMatchObject({ limit: 5000, used: 0, remaining: 5000 });
      expect(charges(session)).toEqual([['GET /rate_limit', 0, 1]]);
    });

    it('HttpTransport speaks HTTP/1.1 to the same TLS server, trusting the generated certificate', async () => {
      const { token } = identity('transport-user');
      const transport = new HttpTransport(`https://${host}/api/v3`, { ca: cert, token });
      try {
        const res = await transport.request({
          method: 'GET',
          path: '/repos/fleetbench/repo-1/pulls/9',
          headers: {},
        });
        expect(res.status).toBe(200);
        expect(res.headers['x-ratelimit-used']).toBe('1');
        expect(JSON.parse(res.body).number).toBe(9);
      } finally {
        transport.close();
      }
      const untrusted = new HttpTransport(`https://${host}`, { token });
      await expect(untrusted.request({ method: 'GET', path: '/user', headers: {} })).rejects.toThrow(
        /self[- ]signed/,
      );
      untrusted.close();
    });

    it('gh pr list --head finds the pull request of a branch', async () => {
      const { session, token } = identity();
      const res = await gh(['pr', 'list', ...repoArg(), '--head', 'agent/issue-2'], token);
      expect(res.code).toBe(0);
      const lines = res.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]!.split('\t').slice(0, 4)).toEqual([
        '10',
        expect.stringMatching(/^Fix #2: /),
        'agent/issue-2',
        'OPEN',
      ]);
      expect(charges(session)).toEqual([['PullRequestList', 1, 1]]);
    });

    it('gh pr view (and --json) shows the pull request', async () => {
      const { session, token } = identity();
      const res = await gh(['pr', 'view', '9', ...repoArg()], token);
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/^title:\tFix #1: /m);
      expect(res.stdout).toMatch(/^state:\tOPEN$/m);
      expect(res.stdout).toMatch(/^number:\t9$/m);
      expect(res.stdout).toContain('Closes #1');
      const json = await gh(
        ['pr', 'view', '9', ...repoArg(), '--json', 'number,state,reviewDecision,mergeable,headRefName'],
        token,
      );
      expect(JSON.parse(json.stdout)).toEqual({
        number: 9,
        state: 'OPEN',
        reviewDecision: 'REVIEW_REQUIRED',
        mergeable: 'MERGEABLE',
        headRefName: 'agent/issue-1',
      });
      // The default view asks for reviews, comments, labels… (first: 100 each): 2 points by the
      // cost formula; --json with scalar fields only: the minimum, 1.
      expect(charges(session)).toEqual([
        ['PullRequestByNumber', 2, 1],
        ['PullRequestByNumber', 1, 1],
      ]);
    });

    it('gh pr checks follows check runs and statuses (no --json in gh 2.23)', async () => {
      const { session, token } = identity();
      emulator.admin.setCheckRun({
        repo: 'fleetbench/repo-1',
        number: 13,
        name: 'build',
        status: 'in_progress',
      });
      emulator.admin.setStatus({ repo: 'fleetbench/repo-1', number: 13, context: 'lint', state: 'failure' });
      const pending = await gh(['pr', 'checks', '13', ...repoArg()], token);
      const rows = (out: string) =>
        out
          .trim()
          .split('\n')
          .map((l) => l.split('\t').slice(0, 2))
          .sort();
      expect(rows(pending.stdout)).toEqual([
        ['build', 'pending'],
        ['ci', 'pass'],
        ['lint', 'fail'],
      ]);
      expect(pending.code).not.toBe(0);
      emulator.admin.setCheckRun({
        repo: 'fleetbench/repo-1',
        number: 13,
        name: 'build',
        conclusion: 'success',
      });
      emulator.admin.setStatus({ repo: 'fleetbench/repo-1', number: 13, context: 'lint', state: 'success' });
      const passing = await gh(['pr', 'checks', '13', ...repoArg()], token);
      expect(passing.code).toBe(0);
      expect(rows(passing.stdout)).toEqual([
        ['build', 'pass'],
        ['ci', 'pass'],
        ['lint', 'pass'],
      ]);
      expect(charges(session)).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['PullRequestStatusChecks', 1, 1],
        ['PullRequestByNumber', 1, 1],
        ['PullRequestStatusChecks', 1, 1],
      ]);
    });

    it('gh pr comment posts an issue comment (addComment: 1 + 5 points, content-creating)', async () => {
      const { session, token } = identity();
      const res = await gh(['pr', 'comment', '9', ...repoArg(), '--body', 'Looking into it.'], token);
      expect(res.code).toBe(0);
      expect(res.stdout.trim()).toMatch(
        new RegExp(`^https://${host}/fleetbench/repo-1/pull/9#issuecomment-\\d+$`),
      );
      expect(issue(9).comments.at(-1)).toMatchObject({
        body: 'Looking into it.',
        user: { login: 'gh-user-8' },
      });
      expect(charges(session)).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['CommentCreate', 1, 5],
      ]);
    });

    it('gh issue comment --edit-last edits the viewer’s last comment in place (updateIssueComment)', async () => {
      const { session, token } = identity();
      expect(
        (await gh(['issue', 'comment', '2', ...repoArg(), '--body', 'status: started'], token)).code,
      ).toBe(0);
      const count = issue(2).comments.length;
      const res = await gh(
        ['issue', 'comment', '2', ...repoArg(), '--edit-last', '--body', 'status: done'],
        token,
      );
      expect(res.code, res.stderr).toBe(0);
      expect(issue(2).comments.length).toBe(count);
      expect(issue(2).comments.at(-1)).toMatchObject({ body: 'status: done' });
      expect(charges(session).map(([op]) => op)).toContain('CommentUpdate');
    });

    it("gh pr review --approve / --request-changes / --comment, refused on one's own PR", async () => {
      const author = identity('fleet-agent');
      const own = await gh(['pr', 'review', '10', ...repoArg(), '--approve'], author.token);
      expect(own.code).not.toBe(0);
      expect(own.stderr).toContain('Can not approve your own pull request');
      const { session, token } = identity('reviewer-1');
      expect(
        (
          await gh(
            ['pr', 'review', '10', ...repoArg(), '--request-changes', '-b', 'Please add a test.'],
            token,
          )
        ).code,
      ).toBe(0);
      expect(emulator.state.reviewDecision(pull(10))).toBe('CHANGES_REQUESTED');
      expect((await gh(['pr', 'review', '10', ...repoArg(), '--comment', '-b', 'Better.'], token)).code).toBe(
        0,
      );
      expect((await gh(['pr', 'review', '10', ...repoArg(), '--approve'], token)).code).toBe(0);
      expect(emulator.state.reviewDecision(pull(10))).toBe('APPROVED');
      expect(
        pull(10)
          .reviews.map((r) => r.state)
          .slice(-3),
      ).toEqual(['CHANGES_REQUESTED', 'COMMENTED', 'APPROVED']);
      expect(charges(session)).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['PullRequestReviewAdd', 1, 5],
        ['PullRequestByNumber', 1, 1],
        ['PullRequestReviewAdd', 1, 5],
        ['PullRequestByNumber', 1, 1],
        ['PullRequestReviewAdd', 1, 5],
      ]);
    });

    it('gh pr merge --merge merges an approved, green PR and closes its issue', async () => {
      emulator.admin.submitReview({
        repo: 'fleetbench/repo-1',
        number: 11,
        user: 'reviewer-2',
        state: 'APPROVED',
      });
      const { session, token } = identity();
      const res = await gh(['pr', 'merge', '11', ...repoArg(), '--merge'], token);
      expect(res.code).toBe(0);
      expect(pull(11).merged).toBe(true);
      expect(issue(3).state).toBe('closed');
      expect(charges(session)).toEqual([
        ['PullRequest_fields', 1, 1],
        ['PullRequestByNumber', 1, 1],
        ['PullRequestMerge', 1, 5],
      ]);
    });

    it('gh pr close closes without merging', async () => {
      const { session, token } = identity();
      const res = await gh(['pr', 'close', '12', ...repoArg()], token);
      expect(res.code).toBe(0);
      expect(pull(12)).toMatchObject({ merged: false, issue: { state: 'closed' } });
      expect(issue(4).state).toBe('open');
      expect(charges(session)).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['PullRequestClose', 1, 5],
      ]);
    });

    it('gh pr edit changes title and body and adds a label', async () => {
      const { session, token } = identity();
      const label = [...emulator.state.repoLabels(emulator.state.repo('fleetbench/repo-1')).keys()][0]!;
      const res = await gh(
        ['pr', 'edit', '9', ...repoArg(), '--title', 'Renamed', '--body', 'New body', '--add-label', label],
        token,
      );
      expect(res.code).toBe(0);
      expect(issue(9)).toMatchObject({ title: 'Renamed', body: 'New body' });
      expect(issue(9).labels.map((l) => l.name)).toContain(label);
      // gh sends the update and the label mutation at once: their order is not fixed.
      const [reads, writes] = [charges(session).slice(0, 3), charges(session).slice(3)];
      expect(reads).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['PullRequestProjectItems', 1, 1],
        ['RepositoryLabelList', 1, 1],
      ]);
      expect([...writes].sort()).toEqual([
        ['LabelAdd', 1, 5],
        ['PullRequestUpdate', 1, 5],
      ]);
    });

    it('gh pr ready marks a draft ready for review', async () => {
      const draft = emulator.admin.openPullRequest({
        repo: 'fleetbench/repo-1',
        head: 'agent/issue-7',
        issue: 7,
      });
      pull(draft.number).draft = true;
      const { session, token } = identity();
      const res = await gh(['pr', 'ready', String(draft.number), ...repoArg()], token);
      expect(res.code).toBe(0);
      expect(pull(draft.number).draft).toBe(false);
      expect(charges(session)).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['PullRequestReadyForReview', 1, 5],
      ]);
    });

    it('gh pr merge --auto sets auto-merge; the pull request merges itself once it is approved', async () => {
      const opened = emulator.admin.openPullRequest({
        repo: 'fleetbench/repo-1',
        head: 'agent/issue-8',
        issue: 8,
      });
      const { session, token } = identity('fleet-agent');
      const res = await gh(['pr', 'merge', String(opened.number), ...repoArg(), '--auto', '--squash'], token);
      expect(res.code, res.stderr).toBe(0);
      expect(pull(opened.number).autoMerge?.method).toBe('squash');
      expect(pull(opened.number).merged).toBe(false);
      expect(charges(session)).toEqual([
        ['PullRequest_fields', 1, 1],
        ['PullRequestByNumber', 1, 1],
        ['PullRequestAutoMerge', 1, 5],
      ]);
      emulator.admin.submitReview({
        repo: 'fleetbench/repo-1',
        number: opened.number,
        user: 'reviewer-2',
        state: 'APPROVED',
      });
      // GitHub merges after the approval, not within it: the emulator a turn later.
      await new Promise((resolve) => setImmediate(resolve));
      expect(pull(opened.number).merged).toBe(true);
      expect(pull(opened.number).mergedBy?.login).toBe('fleet-agent');
    });

    it('gh pr ready --undo makes a pull request a draft again', async () => {
      const { session, token } = identity();
      const res = await gh(['pr', 'ready', '10', ...repoArg(), '--undo'], token);
      expect(res.code, res.stderr).toBe(0);
      expect(pull(10).draft).toBe(true);
      expect(charges(session)).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['ConvertPullRequestToDraft', 1, 5],
      ]);
      emulator.state.markReadyForReview(pull(10));
    });

    it('gh repo list OWNER lists the owner’s repositories', async () => {
      const { session, token } = identity();
      const res = await gh(['repo', 'list', 'fleetbench', '--json', 'nameWithOwner,isPrivate'], token);
      expect(res.code, res.stderr).toBe(0);
      expect(JSON.parse(res.stdout)).toEqual([{ nameWithOwner: 'fleetbench/repo-1', isPrivate: false }]);
      expect(charges(session)).toEqual([
        ['Repository_fields', 1, 1],
        ['RepositoryList', 1, 1],
      ]);
    });

    it('gh issue view shows the issue and its comments', async () => {
      emulator.admin.postIssueComment({
        repo: 'fleetbench/repo-1',
        number: 6,
        body: 'Taking this one.',
        user: 'reviewer-2',
      });
      const { session, token } = identity();
      const res = await gh(['issue', 'view', '6', ...repoArg()], token);
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/^title:\t.+\(#6\)$/m);
      expect(res.stdout).toMatch(/^state:\tOPEN$/m);
      expect(res.stdout).toMatch(/^comments:\t1$/m);
      expect(res.stdout).toContain('Generated issue 6 of fleetbench/repo-1.');
      const comments = await gh(['issue', 'view', '6', ...repoArg(), '--comments'], token);
      expect(comments.stdout).toContain('Taking this one.');
      // gh 2.23 first asks which Issue fields the server has (an introspection query, 1 point).
      expect(charges(session)).toEqual([
        ['Issue_fields', 1, 1],
        ['IssueByNumber', 1, 1],
        ['IssueByNumber', 2, 1],
        ['CommentsForIssue', 2, 1],
      ]);
    });

    it('gh issue list lists the open issues', async () => {
      const { session, token } = identity();
      const res = await gh(['issue', 'list', ...repoArg()], token);
      expect(res.code).toBe(0);
      const numbers = res.stdout
        .trim()
        .split('\n')
        .map((l) => Number(l.split('\t')[0]));
      const open = [...emulator.state.repo('fleetbench/repo-1').issues.values()]
        .filter((i) => !i.pull && i.state === 'open')
        .map((i) => i.number);
      expect(numbers.sort((a, b) => a - b)).toEqual(open.sort((a, b) => a - b));
      expect(charges(session)).toEqual([
        ['Issue_fields', 1, 1],
        ['IssueList', 1, 1],
      ]);
    });

    it('gh issue comment posts a comment (addComment)', async () => {
      const { session, token } = identity();
      const res = await gh(['issue', 'comment', '6', ...repoArg(), '--body', 'On it.'], token);
      expect(res.code).toBe(0);
      expect(issue(6).comments.at(-1)!.body).toBe('On it.');
      expect(charges(session)).toEqual([
        ['IssueByNumber', 1, 1],
        ['CommentCreate', 1, 5],
      ]);
    });

    it('gh issue edit changes the title and labels', async () => {
      const { session, token } = identity();
      const label = [...emulator.state.repoLabels(emulator.state.repo('fleetbench/repo-1')).keys()][0]!;
      const res = await gh(
        ['issue', 'edit', '6', ...repoArg(), '--title', 'Retitled', '--add-label', label],
        token,
      );
      expect(res.code).toBe(0);
      expect(issue(6).title).toBe('Retitled');
      expect(issue(6).labels.map((l) => l.name)).toContain(label);
      // As for pr edit: the two mutations go out at once.
      expect(charges(session).slice(0, 2)).toEqual([
        ['IssueByNumber', 1, 1],
        ['RepositoryLabelList', 1, 1],
      ]);
      expect([...charges(session).slice(2)].sort()).toEqual([
        ['IssueUpdate', 1, 5],
        ['LabelAdd', 1, 5],
      ]);
    });

    // ----- round two: search, creation, merge with --delete-branch, diff, files, runs -----

    it('gh issue list --label searches (IssueSearch: the GraphQL search connection)', async () => {
      const { session, token } = identity();
      const repo = emulator.state.repo('fleetbench/repo-1');
      const label = [...emulator.state.repoLabels(repo).keys()][0]!;
      const res = await gh(['issue', 'list', ...repoArg(), '--label', label], token);
      expect(res.code).toBe(0);
      const listed = res.stdout
        .trim()
        .split('\n')
        .map((l) => Number(l.split('\t')[0]));
      const expected = [...repo.issues.values()]
        .filter((i) => !i.pull && i.state === 'open' && i.labels.some((l) => l.name === label))
        .map((i) => i.number);
      expect(listed.sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
      expect(expected.length).toBeGreaterThan(0);
      expect(charges(session)).toEqual([
        ['Issue_fields', 1, 1],
        ['IssueSearch', 1, 1],
      ]);
    });

    it('gh pr list --search / --author search pull requests (PullRequestSearch)', async () => {
      const { session, token } = identity();
      const byText = await gh(['pr', 'list', ...repoArg(), '--search', 'Fix #5'], token);
      expect(byText.code).toBe(0);
      expect(byText.stdout.trim().split('\t')[0]).toBe('13');
      const byAuthor = await gh(
        ['pr', 'list', ...repoArg(), '--author', 'fleet-agent', '--state', 'all'],
        token,
      );
      expect(byAuthor.code).toBe(0);
      expect(byAuthor.stdout.trim().split('\n').length).toBeGreaterThanOrEqual(5);
      expect(charges(session)).toEqual([
        ['PullRequestSearch', 1, 1],
        ['PullRequestSearch', 1, 1],
      ]);
    });

    it('gh pr status shows your pull requests (a search for yours, one for review requests)', async () => {
      const { session, token } = identity('fleet-agent');
      const res = await gh(['pr', 'status', ...repoArg()], token);
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('Created by you');
      expect(res.stdout).toMatch(
        /#13 {2}Fix #5: .*\[agent\/issue-5\]\n {2}✓ Checks passing - Review required/,
      );
      expect(res.stdout).toContain('You have no pull requests to review');
      expect(charges(session)).toEqual([
        ['UserCurrent', 1, 1],
        ['PullRequestStatus', 1, 1],
      ]);
    });

    it('gh search prs: REST /search/issues on the search resource', async () => {
      const { session, token } = identity();
      const res = await gh(
        ['search', 'prs', '--repo', 'fleetbench/repo-1', '--state', 'open', 'Fix #5'],
        token,
      );
      expect(res.code).toBe(0);
      expect(res.stdout.trim().split('\t').slice(0, 3)).toEqual(['fleetbench/repo-1', '13', 'open']);
      expect(charges(session)).toEqual([['GET /search/issues', 1, 1]]);
      const record = sink.records.find((r) => r.kind === 'api' && r.session === session);
      expect(record).toMatchObject({ resource: 'search', rl: { limit: 30, used: 1 } });
    });

    it('gh pr create: refused for a branch GitHub never saw, created once it is pushed', async () => {
      const { session, token } = identity();
      const args = [
        ...repoArg(),
        '--head',
        'feature/gh-create',
        '--title',
        'Add the feature',
        '--body',
        'Adds it.',
      ];
      const refused = await gh(['pr', 'create', ...args], token);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('Head ref must be a branch');
      emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'feature/gh-create' });
      const res = await gh(['pr', 'create', ...args], token);
      expect(res.code).toBe(0);
      const number = Number(/\/pull\/(\d+)$/.exec(res.stdout.trim())![1]);
      expect(pull(number)).toMatchObject({ head: 'feature/gh-create', issue: { title: 'Add the feature' } });
      expect(charges(session)).toEqual([
        ['RepositoryInfo', 1, 1],
        ['PullRequestForBranch', 1, 1],
        ['PullRequestCreate', 1, 5],
        ['RepositoryInfo', 1, 1],
        ['PullRequestForBranch', 1, 1],
        ['PullRequestCreate', 1, 5],
      ]);
    });

    it('gh pr create --reviewer asks for the review (requestReviews); gh pr edit --add-reviewer / --remove-reviewer', async () => {
      const { token } = identity();
      emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'feature/gh-reviewer' });
      const res = await gh(
        [
          'pr',
          'create',
          ...repoArg(),
          '--head',
          'feature/gh-reviewer',
          '--title',
          'Review me',
          '--body',
          'x',
          '--reviewer',
          'reviewer-1',
        ],
        token,
      );
      expect(res.code, res.stderr).toBe(0);
      const number = Number(/\/pull\/(\d+)$/.exec(res.stdout.trim())![1]);
      expect((pull(number).requestedReviewers ?? []).map((u) => u.login)).toEqual(['reviewer-1']);
      const edited = await gh(
        [
          'pr',
          'edit',
          String(number),
          ...repoArg(),
          '--add-reviewer',
          'reviewer-2',
          '--remove-reviewer',
          'reviewer-1',
        ],
        token,
      );
      expect(edited.code, edited.stderr).toBe(0);
      expect((pull(number).requestedReviewers ?? []).map((u) => u.login)).toEqual(['reviewer-2']);
    });

    it('gh api POST git/refs makes a branch that gh pr create --head then uses; one at the base commit is refused', async () => {
      const { session, token } = identity();
      const repo = emulator.state.repo('fleetbench/repo-1');
      const api = 'repos/fleetbench/repo-1';
      const createRef = (branch: string, sha: string) =>
        gh(['api', `${api}/git/refs`, '-f', `ref=refs/heads/${branch}`, '-f', `sha=${sha}`], token);
      const prCreate = (branch: string) =>
        gh(
          ['pr', 'create', ...repoArg(), '--head', branch, '--title', `Work on ${branch}`, '--body', 'x'],
          token,
        );
      // A branch made at the base's commit holds nothing to merge: GitHub's refusal, in gh's words.
      const main = repo.branches.get('main')!;
      const empty = await createRef('fleet/empty', main);
      expect(empty.code, empty.stderr).toBe(0);
      expect(JSON.parse(empty.stdout)).toMatchObject({
        ref: 'refs/heads/fleet/empty',
        object: { sha: main, type: 'commit' },
      });
      const refused = await prCreate('fleet/empty');
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('No commits between main and fleet/empty');
      // A commit the orchestrator pushed elsewhere, and a branch made at it through the API.
      const { sha } = emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'scratch/gh-work' });
      expect((await createRef('fleet/gh-work', sha)).code).toBe(0);
      const again = await createRef('fleet/gh-work', sha);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('Reference already exists (HTTP 422)');
      const made = await prCreate('fleet/gh-work');
      expect(made.code, made.stderr).toBe(0);
      const number = Number(/\/pull\/(\d+)$/.exec(made.stdout.trim())![1]);
      const commits = JSON.parse((await gh(['api', `${api}/pulls/${number}/commits`], token)).stdout);
      expect(commits.map((c: { sha: string }) => c.sha)).toEqual([sha]);
      expect(commits[0].parents.map((p: { sha: string }) => p.sha)).toEqual([main]);
      const compare = JSON.parse((await gh(['api', `${api}/compare/main...fleet/gh-work`], token)).stdout);
      expect(compare).toMatchObject({ status: 'ahead', ahead_by: 1, behind_by: 0, total_commits: 1 });
      const branches = JSON.parse((await gh(['api', `${api}/branches?per_page=100`], token)).stdout);
      expect(branches.map((b: { name: string }) => b.name)).toContain('fleet/gh-work');
      expect(charges(session)).toEqual(
        expect.arrayContaining([
          ['POST /repos/{owner}/{repo}/git/refs', 1, 5],
          ['PullRequestCreate', 1, 5],
          ['GET /repos/{owner}/{repo}/pulls/{pull_number}/commits', 1, 1],
          ['GET /repos/{owner}/{repo}/compare/{basehead}', 1, 1],
          ['GET /repos/{owner}/{repo}/branches', 1, 1],
        ]),
      );
    });

    it('gh issue create (with a label): createIssue, content-creating', async () => {
      const { session, token } = identity();
      const label = [...emulator.state.repoLabels(emulator.state.repo('fleetbench/repo-1')).keys()][0]!;
      const res = await gh(
        [
          'issue',
          'create',
          ...repoArg(),
          '--title',
          'Crash on start',
          '--body',
          'Steps to reproduce.',
          '--label',
          label,
        ],
        token,
      );
      expect(res.code).toBe(0);
      const number = Number(/\/issues\/(\d+)$/.exec(res.stdout.trim())![1]);
      expect(issue(number)).toMatchObject({ title: 'Crash on start', body: 'Steps to reproduce.' });
      expect(issue(number).labels.map((l) => l.name)).toEqual([label]);
      expect(charges(session)).toEqual([
        ['RepositoryInfo', 1, 1],
        ['RepositoryResolveMetadataIDs', 1, 1],
        ['IssueCreate', 1, 5],
      ]);
    });

    it('gh pr merge --delete-branch merges and deletes the head branch; a blocked PR is refused even with --admin', async () => {
      emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'feature/gh-merge' });
      const opened = emulator.admin.openPullRequest({ repo: 'fleetbench/repo-1', head: 'feature/gh-merge' });
      emulator.admin.submitReview({
        repo: 'fleetbench/repo-1',
        number: opened.number,
        user: 'reviewer-2',
        state: 'APPROVED',
      });
      const { session, token } = identity();
      const res = await gh(
        ['pr', 'merge', String(opened.number), ...repoArg(), '--merge', '--delete-branch'],
        token,
      );
      expect(res.code).toBe(0);
      expect(pull(opened.number).merged).toBe(true);
      expect(emulator.state.repo('fleetbench/repo-1').branches.has('feature/gh-merge')).toBe(false);
      expect(charges(session)).toEqual([
        ['PullRequest_fields', 1, 1],
        ['PullRequestByNumber', 1, 1],
        ['PullRequestMerge', 1, 5],
        ['DELETE /repos/{owner}/{repo}/git/refs/{ref}', 1, 5],
      ]);
      // Review required: gh lets --admin try, and GitHub (here, the emulator) refuses the merge.
      const blocked = identity();
      const refused = await gh(['pr', 'merge', '13', ...repoArg(), '--merge', '--admin'], blocked.token);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain(
        'At least 1 approving review is required by reviewers with write access.',
      );
      expect(pull(13).merged).toBe(false);
      const record = sink.records.findLast((r) => r.kind === 'api' && r.session === blocked.session);
      expect(record).toMatchObject({
        op: 'PullRequestMerge',
        status: 200,
        error: 'At least 1 approving review is required by reviewers with write access.',
      });
    });

    // ----- round three: what only Octokit tests held before (issue 51) -----

    /** A pull request on a new branch, approved by a reviewer: one gh can merge. */
    function approvedPull(branch: string): number {
      emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch });
      const opened = emulator.admin.openPullRequest({ repo: 'fleetbench/repo-1', head: branch });
      emulator.admin.submitReview({
        repo: 'fleetbench/repo-1',
        number: opened.number,
        user: 'reviewer-2',
        state: 'APPROVED',
      });
      return opened.number;
    }
    const mainTip = () => {
      const repo = emulator.state.repo('fleetbench/repo-1');
      return repo.commits.get(repo.branches.get('main')!)!;
    };

    it('gh pr merge --squash: one commit on the base, with the subject gh sends', async () => {
      const number = approvedPull('feature/gh-squash');
      const headSha = pull(number).headSha;
      const { session, token } = identity();
      const res = await gh(
        ['pr', 'merge', String(number), ...repoArg(), '--squash', '--subject', 'Squashed by gh'],
        token,
      );
      expect(res.stderr).not.toContain('GraphQL');
      expect(res.code).toBe(0);
      expect(pull(number).merged).toBe(true);
      const tip = mainTip();
      expect(tip.sha).toBe(pull(number).mergeCommitSha);
      expect(tip.parents).toHaveLength(1);
      expect(tip.sha).not.toBe(headSha);
      expect(tip.message.split('\n')[0]).toBe('Squashed by gh');
      expect(charges(session)).toEqual([
        ['PullRequest_fields', 1, 1],
        ['PullRequestByNumber', 1, 1],
        ['PullRequestMerge', 1, 5],
      ]);
    });

    it('gh pr merge --rebase --delete-branch: the head replayed on the base, one parent, the branch gone', async () => {
      const number = approvedPull('feature/gh-rebase');
      const before = mainTip().sha;
      const { session, token } = identity();
      const res = await gh(
        ['pr', 'merge', String(number), ...repoArg(), '--rebase', '--delete-branch'],
        token,
      );
      expect(res.code).toBe(0);
      expect(pull(number).merged).toBe(true);
      const tip = mainTip();
      expect(tip.parents).toEqual([before]);
      expect(emulator.state.repo('fleetbench/repo-1').branches.has('feature/gh-rebase')).toBe(false);
      expect(charges(session)).toEqual([
        ['PullRequest_fields', 1, 1],
        ['PullRequestByNumber', 1, 1],
        ['PullRequestMerge', 1, 5],
        ['DELETE /repos/{owner}/{repo}/git/refs/{ref}', 1, 5],
      ]);
    });

    it('gh pr view --json mergeable,mergeStateStatus: UNKNOWN while GitHub computes it, then the value', async () => {
      emulator.admin.pushBranch({ repo: 'fleetbench/repo-1', branch: 'feature/gh-mergeable' });
      const opened = emulator.admin.openPullRequest({
        repo: 'fleetbench/repo-1',
        head: 'feature/gh-mergeable',
      });
      const { session, token } = identity();
      const view = async () => {
        const res = await gh(
          ['pr', 'view', String(opened.number), ...repoArg(), '--json', 'mergeable,mergeStateStatus'],
          token,
        );
        expect(res.code).toBe(0);
        return JSON.parse(res.stdout) as { mergeable: string; mergeStateStatus: string };
      };
      expect(await view()).toEqual({ mergeable: 'UNKNOWN', mergeStateStatus: 'UNKNOWN' });
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      // Computed: it merges cleanly, and the required review blocks it.
      expect(await view()).toEqual({ mergeable: 'MERGEABLE', mergeStateStatus: 'BLOCKED' });
      expect(charges(session)).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['PullRequestByNumber', 1, 1],
      ]);
    });

    it('gh label create: REST POST …/labels; a taken name refused, --force updates it', async () => {
      const { session, token } = identity();
      const create = (...extra: string[]) =>
        gh(
          [
            'label',
            'create',
            'agent:queued',
            ...repoArg(),
            '--color',
            'FBCA04',
            '--description',
            'Waiting',
            ...extra,
          ],
          token,
        );
      const made = await create();
      expect(made.stderr).toBe('');
      expect(made.code).toBe(0);
      const repo = emulator.state.repo('fleetbench/repo-1');
      expect(emulator.state.labelTable.find(repo, 'agent:queued')).toMatchObject({
        color: 'FBCA04',
        description: 'Waiting',
      });
      const again = await create();
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('already exists');
      const forced = await gh(
        ['label', 'create', 'agent:queued', ...repoArg(), '--color', '00FF00', '--force'],
        token,
      );
      expect(forced.code).toBe(0);
      expect(emulator.state.labelTable.find(repo, 'agent:queued')).toMatchObject({ color: '00FF00' });
      expect(charges(session)).toEqual([
        ['POST /repos/{owner}/{repo}/labels', 1, 5],
        ['POST /repos/{owner}/{repo}/labels', 1, 5],
        ['POST /repos/{owner}/{repo}/labels', 1, 5],
        ['PATCH /repos/{owner}/{repo}/labels/{name}', 1, 5],
      ]);
    });

    it('gh release create / list / view / edit / delete: REST writes, GraphQL lists; the tag made with it', async () => {
      const { session, token } = identity();
      const repo = emulator.state.repo('fleetbench/repo-1');
      const main = repo.branches.get('main');
      const made = await gh(
        ['release', 'create', 'v1.0.0', ...repoArg(), '--title', 'One', '--notes', 'First'],
        token,
      );
      expect(made.stderr).toBe('');
      expect(made.code).toBe(0);
      expect(made.stdout.trim()).toMatch(/\/fleetbench\/repo-1\/releases\/tag\/v1\.0\.0$/);
      expect(repo.tags.get('v1.0.0')).toBe(main);
      const draft = await gh(
        ['release', 'create', 'v2.0.0', ...repoArg(), '--draft', '--title', 'Two', '--notes', 'Next'],
        token,
      );
      expect(draft.code).toBe(0);
      expect(repo.tags.has('v2.0.0')).toBe(false);
      const list = await gh(['release', 'list', ...repoArg()], token);
      expect(list.code).toBe(0);
      expect(list.stdout.split('\n').map((l) => l.split('\t').slice(0, 3))).toEqual([
        ['Two', 'Draft', 'v2.0.0'],
        ['One', 'Latest', 'v1.0.0'],
        [''],
      ]);
      const view = await gh(['release', 'view', 'v1.0.0', ...repoArg()], token);
      expect(view.code).toBe(0);
      expect(view.stdout).toMatch(/^title:\tOne$/m);
      expect(view.stdout).toContain('First');
      const published = await gh(['release', 'edit', 'v2.0.0', '--draft=false', ...repoArg()], token);
      expect(published.code).toBe(0);
      expect(repo.tags.get('v2.0.0')).toBe(main);
      const deleted = await gh(['release', 'delete', 'v1.0.0', '--yes', ...repoArg()], token);
      expect(deleted.code).toBe(0);
      const after = await gh(['release', 'list', ...repoArg()], token);
      expect(after.stdout.split('\n')[0]?.split('\t').slice(0, 3)).toEqual(['Two', 'Latest', 'v2.0.0']);
      // gh asks for a release by tag through REST and GraphQL at once: the order of those two varies.
      const sorted = (list: unknown[][]) => list.map((c) => JSON.stringify(c)).sort();
      expect(sorted(charges(session))).toEqual(
        sorted([
          // create, create --draft
          ['POST /repos/{owner}/{repo}/releases', 1, 5],
          ['POST /repos/{owner}/{repo}/releases', 1, 5],
          // list
          ['RepositoryReleaseList', 1, 1],
          // view TAG
          ['GET /repos/{owner}/{repo}/releases/tags/{tag}', 1, 1],
          ['RepositoryReleaseByTag', 1, 1],
          // edit TAG of a draft: REST finds no published release of the tag, GraphQL its id
          ['GET /repos/{owner}/{repo}/releases/tags/{tag}', 1, 1],
          ['RepositoryReleaseByTag', 1, 1],
          ['GET /repos/{owner}/{repo}/releases/{release_id}', 1, 1],
          ['PATCH /repos/{owner}/{repo}/releases/{release_id}', 1, 5],
          // delete TAG --yes
          ['GET /repos/{owner}/{repo}/releases/tags/{tag}', 1, 1],
          ['RepositoryReleaseByTag', 1, 1],
          ['DELETE /repos/{owner}/{repo}/releases/{release_id}', 1, 5],
          // list
          ['RepositoryReleaseList', 1, 1],
        ]),
      );
    });

    it('gh issue edit --add-label / --remove-label: the labels follow, each change an event', async () => {
      const repo = emulator.state.repo('fleetbench/repo-1');
      emulator.state.createLabel(repo, { name: 'agent:working' });
      emulator.state.createLabel(repo, { name: 'agent:done' });
      const { session, token } = identity();
      expect(
        (await gh(['issue', 'edit', '7', ...repoArg(), '--add-label', 'agent:working'], token)).code,
      ).toBe(0);
      expect(issue(7).labels.map((l) => l.name)).toContain('agent:working');
      const swap = await gh(
        ['issue', 'edit', '7', ...repoArg(), '--remove-label', 'agent:working', '--add-label', 'agent:done'],
        token,
      );
      expect(swap.code).toBe(0);
      const names = issue(7).labels.map((l) => l.name);
      expect(names).toContain('agent:done');
      expect(names).not.toContain('agent:working');
      // gh sends the removal and the addition at once: their order is the network's.
      const events = issue(7)
        .events.filter((e) => e.label?.name.startsWith('agent:'))
        .map((e) => `${e.event} ${e.label?.name}`);
      expect(events[0]).toBe('labeled agent:working');
      expect(events.slice(1).sort()).toEqual(['labeled agent:done', 'unlabeled agent:working']);
      const ops = charges(session).map((c) => c[0]);
      expect(ops.filter((op) => op === 'LabelAdd')).toHaveLength(2);
      expect(ops.filter((op) => op === 'LabelRemove')).toHaveLength(1);
    });

    it('gh api writes statuses and check runs as a CI bot does; the PR checks follow', async () => {
      const number = approvedPull('feature/gh-ci');
      const sha = pull(number).headSha;
      const bot = emulator.admin.mintToken({
        kind: 'actions',
        repo: 'fleetbench/repo-1',
        session: 'gh-ci-bot',
      }).token;
      const status = await gh(
        [
          'api',
          `repos/fleetbench/repo-1/statuses/${sha}`,
          '-f',
          'state=success',
          '-f',
          'context=lint',
          '-f',
          'description=clean',
        ],
        bot,
      );
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ state: 'success', context: 'lint' });
      const run = await gh(
        [
          'api',
          'repos/fleetbench/repo-1/check-runs',
          '-f',
          'name=build',
          '-f',
          `head_sha=${sha}`,
          '-f',
          'status=in_progress',
        ],
        bot,
      );
      expect(run.code).toBe(0);
      const id = JSON.parse(run.stdout).id as number;
      const pending = await gh(['pr', 'checks', String(number), ...repoArg()], bot);
      expect(pending.code).not.toBe(0);
      expect(pending.stdout).toMatch(/build\tpending/);
      const done = await gh(
        ['api', '-X', 'PATCH', `repos/fleetbench/repo-1/check-runs/${id}`, '-f', 'conclusion=success'],
        bot,
      );
      expect(done.code).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ status: 'completed', conclusion: 'success' });
      const green = await gh(['pr', 'checks', String(number), ...repoArg()], bot);
      expect(green.code).toBe(0);
      expect(green.stdout).toMatch(/build\tpass/);
      expect(green.stdout).toMatch(/lint\tpass/);
      const combined = await gh(
        ['api', `repos/fleetbench/repo-1/commits/${sha}/status`, '--jq', '.state'],
        bot,
      );
      expect(combined.stdout.trim()).toBe('success');
      // A user's token may write statuses, not check runs: GitHub's App-only refusal.
      const user = identity();
      const refused = await gh(
        ['api', 'repos/fleetbench/repo-1/check-runs', '-f', 'name=x', '-f', `head_sha=${sha}`],
        user.token,
      );
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('You must authenticate via a GitHub App.');
      expect(charges('gh-ci-bot').slice(0, 2)).toEqual([
        ['POST /repos/{owner}/{repo}/statuses/{sha}', 1, 5],
        ['POST /repos/{owner}/{repo}/check-runs', 1, 5],
      ]);
    });

    it('gh api collaborators: 204 for a collaborator, 404 (exit 1) for anyone else, the permission by --jq', async () => {
      const { session, token } = identity();
      const yes = await gh(['api', 'repos/fleetbench/repo-1/collaborators/reviewer-1'], token);
      expect(yes.code).toBe(0);
      expect(yes.stdout).toBe('');
      const no = await gh(['api', 'repos/fleetbench/repo-1/collaborators/someone-else'], token);
      expect(no.code).not.toBe(0);
      expect(no.stderr).toContain('Not Found (HTTP 404)');
      const permission = await gh(
        [
          'api',
          'repos/fleetbench/repo-1/collaborators/reviewer-1/permission',
          '--jq',
          '.permission + " " + .role_name',
        ],
        token,
      );
      expect(permission.stdout.trim()).toBe('write write');
      expect(charges(session)).toEqual([
        ['GET /repos/{owner}/{repo}/collaborators/{username}', 1, 1],
        ['GET /repos/{owner}/{repo}/collaborators/{username}', 1, 1],
        ['GET /repos/{owner}/{repo}/collaborators/{username}/permission', 1, 1],
      ]);
    });

    it('gh pr diff asks for the diff media type and prints the diff', async () => {
      const { session, token } = identity();
      const res = await gh(['pr', 'diff', '13', ...repoArg()], token);
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(
        /^diff --git a\/src\/agent-issue-5\/change-1\.ts b\/src\/agent-issue-5\/change-1\.ts\n/,
      );
      expect(charges(session)).toEqual([['GET /repos/{owner}/{repo}/pulls/{pull_number}', 1, 1]]);
    });

    it('gh pr view --json files lists the changed files', async () => {
      const { session, token } = identity();
      const res = await gh(['pr', 'view', '13', ...repoArg(), '--json', 'files'], token);
      expect(res.code).toBe(0);
      expect(JSON.parse(res.stdout)).toEqual({
        files: [{ path: 'src/agent-issue-5/change-1.ts', additions: 10, deletions: 2 }],
      });
      expect(charges(session)).toEqual([['PullRequestByNumber', 1, 1]]);
    });

    it('gh run list lists the workflow runs (from the check runs)', async () => {
      const { session, token } = identity();
      const res = await gh(['run', 'list', ...repoArg()], token);
      expect(res.code).toBe(0);
      const rows = res.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t'));
      expect(rows.length).toBeGreaterThanOrEqual(5);
      expect(rows.find((r) => r[3] === 'ci' && r[4] === 'agent/issue-5')!.slice(0, 6)).toEqual([
        'completed',
        'success',
        expect.stringMatching(/^Fix #5: /),
        'ci',
        'agent/issue-5',
        'pull_request',
      ]);
      expect(charges(session)).toEqual([
        ['GET /repos/{owner}/{repo}/actions/runs', 1, 1],
        ['GET /repos/{owner}/{repo}/actions/workflows', 1, 1],
      ]);
    });

    /** PR 13's `ci` workflow run: the id `gh run list` prints, and its commit. */
    const ciRun = () => {
      const commit = emulator.state.repo('fleetbench/repo-1').commits.get(pull(13).headSha)!;
      const runs = commit.checkRuns.filter((r) => r.name === 'ci');
      return { commit, first: runs[0]!, latest: runs.at(-1)! };
    };

    it('gh run view, --log and --log-failed: a failed run, its job and steps, and the log saying why', async () => {
      const { session, token } = identity();
      const { commit, first } = ciRun();
      emulator.state.checks.updateCheckRun(first, commit, {
        conclusion: 'failure',
        output: { title: '2 tests failed', summary: 'poll.test.ts: expected 304, got 200' },
      });
      const view = await gh(['run', 'view', String(first.id), ...repoArg()], token);
      expect(view.code).toBe(0);
      expect(view.stdout).toContain(`X ci in 0s (ID ${first.id})`);
      expect(view.stdout).toMatch(/X Run ci/);
      const failed = await gh(['run', 'view', String(first.id), '--log-failed', ...repoArg()], token);
      expect(failed.code).toBe(0);
      expect(failed.stdout).toMatch(
        /^ci\tRun ci\t\S+Z ##\[error\]ci: failure: 2 tests failed \(poll\.test\.ts: expected 304, got 200\)$/m,
      );
      expect(failed.stdout).not.toContain('Set up job');
      const log = await gh(['run', 'view', String(first.id), '--log', ...repoArg()], token);
      expect(log.code).toBe(0);
      expect(
        log.stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split('\t').slice(0, 2).join(' ')),
      ).toEqual(expect.arrayContaining(['ci Set up job', 'ci Run ci', 'ci Complete job']));
      // One 302 (gh keeps the zip it downloaded for the next --log); the download it points to
      // is not an API call.
      expect(charges(session).filter(([route]) => String(route).includes('logs'))).toEqual([
        ['GET /repos/{owner}/{repo}/actions/runs/{run_id}/logs', 1, 1],
      ]);
      expect(charges(session)).toContainEqual(['GET /repos/{owner}/{repo}/actions/runs/{run_id}', 1, 1]);
      expect(charges(session)).toContainEqual(['GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs', 1, 1]);
    });

    it('gh run rerun: the run is queued again, gh pr checks pending, then it completes; gh run cancel', async () => {
      const { session, token } = identity();
      // Long enough that gh pr checks, a process start of gh on a loaded machine, sees it pending.
      emulator.state.workflows.configure({ runMs: 5_000 });
      const { first } = ciRun();
      const rerun = await gh(['run', 'rerun', String(first.id), ...repoArg()], token);
      expect(rerun.code).toBe(0);
      expect(charges(session)).toContainEqual([
        'POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun',
        1,
        5,
      ]);
      const checks = await gh(['pr', 'checks', '13', ...repoArg()], token);
      expect(checks.stdout).toMatch(/^ci\tpending/m);
      await waitUntil('the re-run to complete', () => ciRun().latest.status === 'completed', {
        timeoutMs: 30_000,
      });
      const view = await gh(['run', 'view', String(first.id), ...repoArg()], token);
      expect(view.stdout).toContain(`✓ ci in`);
      expect((await gh(['pr', 'checks', '13', ...repoArg()], token)).stdout).toMatch(/^ci\tpass/m);
      // Completed: nothing to cancel (GitHub's 409); a run in progress is cancelled.
      const refused = await gh(['run', 'cancel', String(first.id), ...repoArg()], token);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('Cannot cancel a workflow run that is completed');
      emulator.state.workflows.configure({ runMs: 60_000 });
      expect((await gh(['run', 'rerun', String(first.id), ...repoArg()], token)).code).toBe(0);
      const cancel = await gh(['run', 'cancel', String(first.id), ...repoArg()], token);
      expect(cancel.code).toBe(0);
      expect(ciRun().latest).toMatchObject({ status: 'completed', conclusion: 'cancelled', attempt: 3 });
    });

    it('gh workflow run ci: a workflow_dispatch run on the default branch', async () => {
      const { session, token } = identity();
      emulator.state.workflows.configure({ runMs: 0 });
      const res = await gh(['workflow', 'run', 'ci', ...repoArg()], token);
      expect(res.code).toBe(0);
      expect(charges(session).at(-1)).toEqual([
        'POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches',
        1,
        5,
      ]);
      const list = await gh(['run', 'list', '--workflow', 'ci', ...repoArg()], token);
      expect(list.stdout.split('\n')[0]!.split('\t').slice(0, 6)).toEqual([
        'completed',
        'success',
        'ci',
        'ci',
        'main',
        'workflow_dispatch',
      ]);
      const bad = await gh(['workflow', 'run', 'ci', '--ref', 'no-such-branch', ...repoArg()], token);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('No ref found for: no-such-branch');
    });
  },
);

const gh246 = systemTool(
  GH_DEBIAN13,
  ['--version'],
  'gh 2.46 of Debian 13, unpacked by scripts/gh-debian13.sh',
);

describe.skipIf(gh246.skip || openssl.skip)(
  "gh 2.46 (Debian 13's) where it behaves differently from 2.23",
  () => {
    const sink = new MemorySink();
    const emulator = new GitHubEmulator({
      clock: new RealClock(),
      rng: new Rng(7),
      trace: sink,
      fixtures: { repos: 1, issuesPerRepo: 6, pullsPerRepo: 4 },
      latency: false,
    });
    let host = '';
    let certPath = '';

    beforeAll(async () => {
      gh246.require();
      openssl.require();
      const made = generateSelfSignedCert(join(dir, 'tls-246'));
      certPath = made.certPath;
      const server = await serve(emulator, made);
      host = `127.0.0.1:${server.port}`;
    });

    let sessions = 0;
    function identity(user = `gh246-user-${sessions + 1}`) {
      const session = `gh246-${++sessions}`;
      return { session, token: emulator.admin.mintToken({ user, session, source: 'cli' }).token };
    }
    const gh = (args: string[], token: string) => run(GH_DEBIAN13, args, ghEnv(host, token, certPath));
    const repoArg = () => ['-R', `${host}/fleetbench/repo-1`];
    const charges = (session: string) =>
      sink.records.flatMap((r) =>
        r.kind === 'api' && r.session === session
          ? [[r.op ?? `${r.method} ${r.route}`, r.cost, r.secondaryCost]]
          : [],
      );

    it('is gh 2.46', async () => {
      const version = await run(GH_DEBIAN13, ['--version'], process.env);
      expect(version.stdout).toMatch(/^gh version 2\.46\./);
    });

    it('gh pr status: two feature-detection queries first; checks counted from the counts by state', async () => {
      const { session, token } = identity('fleet-agent');
      const res = await gh(['pr', 'status', ...repoArg()], token);
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(
        /#10 {2}Fix #4: .*\[agent\/issue-4\]\n {2}✓ Checks passing - Review required/,
      );
      // The two detection queries go out at once: their order is not fixed.
      expect(charges(session).slice(0, 2).sort()).toEqual([
        ['PullRequest_fields', 1, 1],
        ['PullRequest_fields2', 1, 1],
      ]);
      expect(charges(session).slice(2)).toEqual([
        ['UserCurrent', 1, 1],
        ['PullRequestStatus', 1, 1],
      ]);
    });

    it('gh pr checks --json: unknown in 2.46 as in 2.23 (tools that need it need a newer gh)', async () => {
      const { session, token } = identity();
      const res = await gh(['pr', 'checks', '10', ...repoArg(), '--json', 'name,state'], token);
      expect(res.code).not.toBe(0);
      expect(res.stderr).toContain('unknown flag: --json');
      // Refused by gh itself: nothing reached the server.
      expect(charges(session)).toEqual([]);
    });

    it('gh pr diff --name-only and --patch: the same endpoint, the diff and patch media types', async () => {
      const { session, token } = identity();
      const names = await gh(['pr', 'diff', '10', ...repoArg(), '--name-only'], token);
      expect(names.code).toBe(0);
      expect(names.stdout).toBe('src/agent-issue-4/change-1.ts\n');
      const patch = await gh(['pr', 'diff', '10', ...repoArg(), '--patch'], token);
      expect(patch.code).toBe(0);
      expect(patch.stdout).toMatch(/^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\n/);
      expect(charges(session)).toEqual([
        ['GET /repos/{owner}/{repo}/pulls/{pull_number}', 1, 1],
        ['GET /repos/{owner}/{repo}/pulls/{pull_number}', 1, 1],
      ]);
    });

    it('gh pr merge --delete-branch: one more detection query than 2.23', async () => {
      emulator.admin.submitReview({
        repo: 'fleetbench/repo-1',
        number: 9,
        user: 'reviewer-2',
        state: 'APPROVED',
      });
      const { session, token } = identity();
      const res = await gh(['pr', 'merge', '9', ...repoArg(), '--merge', '--delete-branch'], token);
      expect(res.code).toBe(0);
      expect(emulator.state.repo('fleetbench/repo-1').branches.has('agent/issue-3')).toBe(false);
      expect(charges(session).slice(0, 2).sort()).toEqual([
        ['PullRequest_fields', 1, 1],
        ['PullRequest_fields2', 1, 1],
      ]);
      expect(charges(session).slice(2)).toEqual([
        ['PullRequestByNumber', 1, 1],
        ['PullRequestMerge', 1, 5],
        ['DELETE /repos/{owner}/{repo}/git/refs/{ref}', 1, 5],
      ]);
    });

    it('gh api repos/…/hooks: a webhook made with --input and listed, as the repository admin; 404 to anyone else', async () => {
      const repo = emulator.state.repo('fleetbench/repo-1');
      repo.collaborators.set(emulator.state.ensureUser('gh-hook-admin'), 'admin');
      const { session, token } = identity('gh-hook-admin');
      const input = join(dir, 'hook.json');
      writeFileSync(
        input,
        JSON.stringify({
          config: { url: 'http://127.0.0.1:9/hook', content_type: 'json' },
          events: ['issues'],
        }),
      );
      const made = await gh(['api', 'repos/fleetbench/repo-1/hooks', '--input', input], token);
      expect(made.stderr).toBe('');
      expect(JSON.parse(made.stdout)).toMatchObject({ name: 'web', events: ['issues'], active: true });
      const listed = await gh(['api', 'repos/fleetbench/repo-1/hooks', '--jq', '.[].config.url'], token);
      expect(listed.code).toBe(0);
      expect(listed.stdout.trim()).toBe('http://127.0.0.1:9/hook');
      expect(charges(session)).toEqual([
        ['POST /repos/{owner}/{repo}/hooks', 1, 5],
        ['GET /repos/{owner}/{repo}/hooks', 1, 1],
      ]);
      const other = await gh(['api', 'repos/fleetbench/repo-1/hooks'], identity().token);
      expect(other.code).not.toBe(0);
      expect(other.stderr).toContain('HTTP 404');
    });
  },
);

describe.skipIf(ghTool.skip || openssl.skip)('gh against `fleetbench github serve --tls` itself', () => {
  it('starts, prints the gh environment, and answers gh over HTTP/2 with web links on --web-url', async () => {
    ghTool.require();
    openssl.require();
    const server = await startCliServer<{ token: string; cert: string; ghEnv: { GH_HOST: string } }>([
      'github',
      'serve',
      '--tls',
      '--tls-dir',
      join(dir, 'cli-tls'),
      '--pulls-per-repo',
      '1',
      '--web-url',
      'https://github.com',
    ]);
    const { info } = server;
    try {
      const env = ghEnv(info.ghEnv.GH_HOST, info.token, info.cert);
      const api = await run('gh', ['api', '-i', 'repos/fleetbench/repo-1/pulls/11'], env);
      expect(api.code).toBe(0);
      expect(api.stdout).toMatch(/^HTTP\/2\.0 200 OK/);
      const body = JSON.parse(api.stdout.slice(api.stdout.indexOf('\r\n\r\n') + 4));
      expect(body.html_url).toBe('https://github.com/fleetbench/repo-1/pull/11');
      expect(body.url).toBe(`https://${info.ghEnv.GH_HOST}/repos/fleetbench/repo-1/pulls/11`);
      const view = await run(
        'gh',
        ['pr', 'view', '11', '-R', `${info.ghEnv.GH_HOST}/fleetbench/repo-1`, '--json', 'url'],
        env,
      );
      expect(JSON.parse(view.stdout)).toEqual({ url: 'https://github.com/fleetbench/repo-1/pull/11' });
      server.process.kill('SIGINT');
      expect(await server.exited).toBe(0);
    } finally {
      await server.stop();
    }
  });
});
