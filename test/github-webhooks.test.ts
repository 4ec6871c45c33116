/**
 * Repository webhooks (docs/github-emulator.md, "Webhooks"): Octokit makes a hook over the HTTP
 * binding, and a real receiver (node:http on 127.0.0.1) gets each event, verifying its
 * `X-Hub-Signature-256` with node:crypto as GitHub's "Validating webhook deliveries" shows. Every
 * payload is checked against the schema GitHub documents for its event and action
 * (test/helpers/webhook-schemas.ts), every REST answer against the operation's
 * (test/helpers/github.ts). A receiver that is down, slow or silent costs a bounded queue.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Octokit } from '@octokit/core';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { type Fixtures, GitHubEmulator } from '../src/github/index.ts';
import { WEBHOOK_BOUNDS } from '../src/github/webhooks.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { serve } from './helpers/github.ts';
import { waitUntil } from './helpers/wait.ts';
import { payloadProblems } from './helpers/webhook-schemas.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  event: string;
  action: string | undefined;
  payload: Record<string, unknown>;
  /** The signature checked as GitHub's docs show: HMAC-SHA256 of the body, compared in constant time. */
  signed: boolean;
}

/** A webhook receiver on a free port; `answer` decides each reply (default 200 at once). */
async function receiver(
  secret: string | undefined,
  answer: (res: import('node:http').ServerResponse) => void = (res) => res.end('ok'),
) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const header = String(req.headers['x-hub-signature-256'] ?? '');
      let signed = false;
      if (secret !== undefined) {
        const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
        const given = Buffer.from(header);
        signed = expected.length === given.length && timingSafeEqual(expected, given);
      }
      const json =
        req.headers['content-type'] === 'application/json'
          ? body
          : (new URLSearchParams(body).get('payload') ?? '{}');
      const payload = JSON.parse(json) as Record<string, unknown>;
      received.push({
        headers: req.headers,
        body,
        event: String(req.headers['x-github-event']),
        action: typeof payload.action === 'string' ? payload.action : undefined,
        payload,
        signed,
      });
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { received, url, server, close };
}

const fixtures: Fixtures = {
  default_user: 'octo',
  users: [{ login: 'outsider' }],
  repos: [
    {
      owner: 'octo',
      name: 'app',
      collaborators: [{ login: 'writer', role_name: 'write' }],
      branches: [{ name: 'feature' }],
      issues: [{ title: 'an old issue' }],
    },
  ],
};

function emulatorWith(seed = 1) {
  const sink = new MemorySink();
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(seed),
    trace: sink,
    fixtures,
    latency: false,
  });
  return { emulator, sink };
}

describe('repository webhooks over REST, delivered to a real receiver', async () => {
  const { emulator, sink } = emulatorWith();
  const server = await serve(emulator);
  const baseUrl = `http://127.0.0.1:${server.port}`;
  const octokit = new Octokit({ baseUrl, auth: emulator.defaultToken });
  const secret = 'It is a secret to everybody';
  const hookReceiver = await receiver(secret);
  afterAll(hookReceiver.close);
  const owner = 'octo';
  const repo = 'app';

  it('creates a hook (Octokit), pings it, and delivers issues, comments, pull requests, reviews and pushes, each signed and in the documented shape', async () => {
    const created = await octokit.request('POST /repos/{owner}/{repo}/hooks', {
      owner,
      repo,
      config: { url: hookReceiver.url, content_type: 'json', secret },
      events: [
        'issues',
        'issue_comment',
        'pull_request',
        'pull_request_review',
        'pull_request_review_comment',
        'push',
        'check_run',
        'check_suite',
        'status',
      ],
    });
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({ name: 'web', active: true, config: { secret: '********' } });
    const hookId = created.data.id;
    await waitUntil('the ping', () => hookReceiver.received.length === 1);
    expect(hookReceiver.received[0]!.event).toBe('ping');
    expect(hookReceiver.received[0]!.payload.hook_id).toBe(hookId);

    const issue = await octokit.request('POST /repos/{owner}/{repo}/issues', {
      owner,
      repo,
      title: 'Webhooks bring work',
    });
    const n = issue.data.number;
    await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', {
      owner,
      repo,
      issue_number: n,
      labels: ['agent'],
    });
    await octokit.request('PATCH /repos/{owner}/{repo}/issues/{issue_number}', {
      owner,
      repo,
      issue_number: n,
      assignees: ['writer'],
    });
    await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner,
      repo,
      issue_number: n,
      body: 'on it',
    });
    // A status comment kept up to date, then a stray one deleted.
    const status = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner,
      repo,
      issue_number: n,
      body: 'status: started',
    });
    await octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
      owner,
      repo,
      comment_id: status.data.id,
      body: 'status: done',
    });
    await octokit.request('DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}', {
      owner,
      repo,
      comment_id: status.data.id,
    });
    await octokit.request('PATCH /repos/{owner}/{repo}/issues/{issue_number}', {
      owner,
      repo,
      issue_number: n,
      title: 'Webhooks bring work, renamed',
    });
    const pull = await octokit.request('POST /repos/{owner}/{repo}/pulls', {
      owner,
      repo,
      title: 'Fix it',
      head: 'feature',
      base: 'main',
      body: `Closes #${n}`,
    });
    // A push to the pull request's head: `push`, then `pull_request` synchronize.
    emulator.admin.pushBranch({ repo: 'octo/app', branch: 'feature' });
    // A review asked of a collaborator, who then gives it.
    await octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', {
      owner,
      repo,
      pull_number: pull.data.number,
      reviewers: ['writer'],
    });
    emulator.admin.submitReview({
      repo: 'octo/app',
      number: pull.data.number,
      state: 'APPROVED',
      user: 'writer',
    });
    // A review comment: its COMMENTED review, then the comment.
    await octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/comments', {
      owner,
      repo,
      pull_number: pull.data.number,
      body: 'A nit',
      commit_id: pull.data.head.sha,
      path: 'README.md',
      line: 1,
    });
    // CI on the pull request's head, as the admin API's scenarios report it.
    emulator.admin.setCheckRun({ repo: 'octo/app', number: pull.data.number, status: 'in_progress' });
    emulator.admin.setCheckRun({ repo: 'octo/app', number: pull.data.number, conclusion: 'success' });
    emulator.admin.setStatus({
      repo: 'octo/app',
      number: pull.data.number,
      context: 'ci/build',
      state: 'success',
    });
    await octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
      owner,
      repo,
      pull_number: pull.data.number,
    });
    const expected = [
      'ping',
      'issues.opened',
      'issues.labeled',
      'issues.assigned',
      'issue_comment.created',
      'issue_comment.created',
      'issue_comment.edited',
      'issue_comment.deleted',
      'issues.edited',
      'pull_request.opened',
      'push',
      'pull_request.synchronize',
      'pull_request.review_requested',
      'pull_request_review.submitted',
      'pull_request_review.submitted',
      'pull_request_review_comment.created',
      'check_run.created',
      'check_run.completed',
      // Its suite's only run completed: the suite completed.
      'check_suite.completed',
      'status',
      // The merge: the pull request closed (merged), the issue it closes closed.
      'issues.closed',
      'pull_request.closed',
    ];
    await waitUntil('every delivery', () => hookReceiver.received.length >= expected.length);
    const seen = hookReceiver.received.map((r) => (r.action ? `${r.event}.${r.action}` : r.event));
    expect(seen).toEqual(expected);
    for (const r of hookReceiver.received) {
      expect(r.signed).toBe(true);
      expect(r.headers['x-hub-signature']).toBe(
        `sha1=${createHmac('sha1', secret).update(r.body).digest('hex')}`,
      );
      expect(r.headers['x-github-hook-id']).toBe(String(hookId));
      expect(r.headers['user-agent']).toMatch(/^GitHub-Hookshot\//);
      expect(r.headers['x-github-delivery']).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
    }
    expect(hookReceiver.received.flatMap((r) => payloadProblems(r.event, r.payload))).toEqual([]);
    // The check finds a payload that is not of its schema.
    expect(payloadProblems('issues', { action: 'opened', issue: {} })).not.toEqual([]);
    const merged = hookReceiver.received.at(-1)!.payload.pull_request as { merged: boolean };
    expect(merged.merged).toBe(true);
    expect((hookReceiver.received[2]!.payload.label as { name: string }).name).toBe('agent');
    expect(hookReceiver.received[6]!.payload.changes).toEqual({ body: { from: 'status: started' } });
    expect(hookReceiver.received[8]!.payload.changes).toEqual({ title: { from: 'Webhooks bring work' } });

    // Every delivery recorded: the list (newest first), one delivery with its request, the trace.
    const deliveries = await octokit.request('GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries', {
      owner,
      repo,
      hook_id: hookId,
    });
    expect(deliveries.data.map((d) => (d.action ? `${d.event}.${d.action}` : d.event))).toEqual(
      [...expected].reverse(),
    );
    expect(deliveries.data.every((d) => d.status_code === 200 && d.status === 'OK')).toBe(true);
    const one = await octokit.request('GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}', {
      owner,
      repo,
      hook_id: hookId,
      delivery_id: Number(deliveries.data.at(-1)!.id),
    });
    expect(one.data.request.headers?.['X-GitHub-Event']).toBe('ping');
    expect(one.data.response.payload).toBe('ok');
    const records = sink.records.filter((r) => r.kind === 'event' && r.name === 'github.webhook');
    expect(records).toHaveLength(expected.length);
    expect(records[1]).toMatchObject({ labels: { event: 'issues', action: 'opened', repo: 'octo/app' } });
    // Webhooks cost no API quota: no `api` record names a delivery.
    const hook = await octokit.request('GET /repos/{owner}/{repo}/hooks/{hook_id}', {
      owner,
      repo,
      hook_id: hookId,
    });
    expect(hook.data.last_response).toEqual({ code: 200, status: 'active', message: 'OK' });
  });

  it('changes, pings, lists and deletes the hook; an issue the hook does not ask for is not sent', async () => {
    const list = await octokit.request('GET /repos/{owner}/{repo}/hooks', { owner, repo });
    const hookId = list.data[0]!.id;
    const before = hookReceiver.received.length;
    const patched = await octokit.request('PATCH /repos/{owner}/{repo}/hooks/{hook_id}', {
      owner,
      repo,
      hook_id: hookId,
      remove_events: ['issues'],
      config: { url: hookReceiver.url, content_type: 'form', secret },
    });
    expect(patched.data.events).not.toContain('issues');
    const config = await octokit.request('GET /repos/{owner}/{repo}/hooks/{hook_id}/config', {
      owner,
      repo,
      hook_id: hookId,
    });
    expect(config.data).toEqual({
      url: hookReceiver.url,
      content_type: 'form',
      insecure_ssl: '0',
      secret: '********',
    });
    emulator.admin.createIssue({ repo: 'octo/app', title: 'not for this hook' });
    await octokit.request('POST /repos/{owner}/{repo}/hooks/{hook_id}/pings', {
      owner,
      repo,
      hook_id: hookId,
    });
    await waitUntil('the second ping', () => hookReceiver.received.length === before + 1);
    const ping = hookReceiver.received.at(-1)!;
    expect(ping.event).toBe('ping');
    // Form-encoded: the signature is of the form body, as GitHub signs what it sends.
    expect(ping.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(ping.signed).toBe(true);
    await octokit.request('DELETE /repos/{owner}/{repo}/hooks/{hook_id}', { owner, repo, hook_id: hookId });
    expect((await octokit.request('GET /repos/{owner}/{repo}/hooks', { owner, repo })).data).toEqual([]);
  });

  it('answers 404 to a token that is not the repository admin', async () => {
    const writer = emulator.admin.mintToken({ user: 'writer' }).token;
    const res = await fetch(`${baseUrl}/repos/octo/app/hooks`, {
      headers: { authorization: `token ${writer}` },
    });
    expect(res.status).toBe(404);
    const bad = await octokit
      .request('POST /repos/{owner}/{repo}/hooks', { owner, repo, config: { url: 'not a url' } })
      .catch((e: { status: number }) => e);
    expect((bad as { status: number }).status).toBe(422);
  });
});

describe('branches and tags made and deleted: create and delete', async () => {
  const { emulator } = emulatorWith(3);
  const server = await serve(emulator);
  const octokit = new Octokit({ baseUrl: `http://127.0.0.1:${server.port}`, auth: emulator.defaultToken });
  const hookReceiver = await receiver('refs');
  afterAll(hookReceiver.close);
  const at = { owner: 'octo', repo: 'app' };
  const names = () => hookReceiver.received.map((r) => `${r.event}:${String(r.payload.ref)}`);

  it('through the API and a push, each in its documented shape', async () => {
    await octokit.request('POST /repos/{owner}/{repo}/hooks', {
      ...at,
      config: { url: hookReceiver.url, content_type: 'json', secret: 'refs' },
      events: ['create', 'delete', 'push'],
    });
    const main = emulator.state.repo('octo/app').branches.get('main')!;
    await octokit.request('POST /repos/{owner}/{repo}/git/refs', {
      ...at,
      ref: 'refs/heads/agent/a',
      sha: main,
    });
    await octokit.request('POST /repos/{owner}/{repo}/git/refs', {
      ...at,
      ref: 'refs/tags/v1.0.0',
      sha: main,
    });
    // Moving a tag makes nothing and deletes nothing.
    await octokit.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', {
      ...at,
      ref: 'tags/v1.0.0',
      sha: main,
    });
    await octokit.request('DELETE /repos/{owner}/{repo}/git/refs/{ref}', { ...at, ref: 'tags/v1.0.0' });
    await octokit.request('DELETE /repos/{owner}/{repo}/git/refs/{ref}', { ...at, ref: 'heads/agent/a' });
    // A branch a push makes (the admin API's, as a git push): create, then push.
    emulator.admin.pushBranch({ repo: 'octo/app', branch: 'agent/b' });
    const expected = [
      'ping:undefined',
      'create:agent/a',
      'push:refs/heads/agent/a',
      'create:v1.0.0',
      'delete:v1.0.0',
      'delete:agent/a',
      'create:agent/b',
      'push:refs/heads/agent/b',
    ];
    await waitUntil('every delivery', () => hookReceiver.received.length >= expected.length);
    expect(names()).toEqual(expected);
    expect(hookReceiver.received.flatMap((r) => payloadProblems(r.event, r.payload))).toEqual([]);
    expect(hookReceiver.received[1]!.payload).toMatchObject({
      ref: 'agent/a',
      ref_type: 'branch',
      master_branch: 'main',
      pusher_type: 'user',
      sender: { login: 'octo' },
    });
    expect(hookReceiver.received[4]!.payload).toMatchObject({ ref: 'v1.0.0', ref_type: 'tag' });
    expect(hookReceiver.received.every((r) => r.signed)).toBe(true);
  });
});

describe('a receiver that is down, silent or slow', () => {
  it('records a refused connection and a timeout, never holds up requests, and drops past the queue bound', async () => {
    const { emulator, sink } = emulatorWith(2);
    const server = await serve(emulator);
    const silent = await receiver(undefined, () => {
      // Never answers: the delivery times out.
    });
    const refused = await receiver(undefined);
    await refused.close();
    emulator.webhooks.timeoutMs = 300;
    const repo = emulator.state.repo('octo/app');
    const owner = emulator.state.findUser('octo')!;
    const config = (url: string) => ({
      url,
      contentType: 'json' as const,
      secret: undefined,
      insecureSsl: '0' as const,
    });
    const down = emulator.webhooks.create(
      repo,
      { config: config(refused.url), events: ['issues'], active: true },
      owner,
    );
    const slow = emulator.webhooks.create(
      repo,
      { config: config(silent.url), events: ['issues'], active: true },
      owner,
    );
    // Far more changes than the queue holds, all at once: the emulator answers at its pace.
    const started = performance.now();
    for (let i = 0; i < WEBHOOK_BOUNDS.queued + 50; i++)
      emulator.admin.createIssue({ repo: 'octo/app', title: `t${i}` });
    const answered = await fetch(`http://127.0.0.1:${server.port}/repos/octo/app/issues/1`, {
      headers: { authorization: `token ${emulator.defaultToken}` },
    });
    expect(answered.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(5_000);
    await waitUntil('a dropped delivery', () => emulator.webhooks.dropped > 0);
    expect(emulator.webhooks.queuedCount()).toBeLessThanOrEqual(WEBHOOK_BOUNDS.queued);
    await waitUntil('the slow hook timed out', () => slow.deliveries.some((d) => d.status === 'timed out'), {
      timeoutMs: 10_000,
    });
    await waitUntil('the down hook failed', () =>
      down.deliveries.some((d) => d.status.startsWith('failed to connect')),
    );
    expect(down.lastResponse).toMatchObject({ code: null, status: 'failed' });
    expect(slow.deliveries.some((d) => d.status.startsWith('dropped'))).toBe(true);
    expect(
      sink.records.some(
        (r) => r.kind === 'event' && r.name === 'github.webhook' && r.data?.status === 'timed out',
      ),
    ).toBe(true);
    await silent.close();
  });
});

describe('nothing leaves the machine', () => {
  it('a hook whose URL is not on loopback is made, as on GitHub, and its deliveries are refused, never dialled', async () => {
    const { emulator } = emulatorWith(3);
    try {
      // TEST-NET-1 (RFC 5737): a dial there would hang until the timeout, not fail at once.
      emulator.webhooks.timeoutMs = 60_000;
      const repo = emulator.state.repo('octo/app');
      const config = {
        url: 'http://192.0.2.1/hook',
        contentType: 'json' as const,
        secret: undefined,
        insecureSsl: '0' as const,
      };
      const hook = emulator.webhooks.create(repo, { config, events: ['issues'], active: true }, repo.owner);
      emulator.admin.createIssue({ repo: 'octo/app', title: 'anywhere' });
      await waitUntil('two deliveries recorded', () => hook.deliveries.length === 2, { timeoutMs: 5_000 });
      expect(hook.deliveries.map((d) => d.status)).toEqual([
        "refused: 192.0.2.1 is not this machine's loopback",
        "refused: 192.0.2.1 is not this machine's loopback",
      ]);
    } finally {
      emulator.close();
    }
  });
});

describe('property: a hook receives exactly the events its filter selects, in order, each signed', () => {
  it('for any sequence of world changes', async () => {
    const everything = await receiver('all');
    const filtered = await receiver('some');
    afterAll(async () => {
      await everything.close();
      await filtered.close();
    });
    // Each change on the issue or on the pull request (`on`), or a push to the pull request's head.
    type On = 'issue' | 'pull';
    type Op =
      | { op: 'open' }
      | { op: 'label'; name: string; on: On }
      | { op: 'unlabel'; on: On }
      | { op: 'comment'; on: On }
      | { op: 'close'; on: On }
      | { op: 'reopen'; on: On }
      | { op: 'push' }
      | { op: 'branch' }
      | { op: 'unbranch' };
    const on = fc.constantFrom<On>('issue', 'pull');
    const ops = fc.array(
      fc.oneof(
        fc.constant<Op>({ op: 'open' }),
        fc.record({ name: fc.constantFrom('a', 'b', 'c'), on }).map((r): Op => ({ op: 'label', ...r })),
        on.map((o): Op => ({ op: 'unlabel', on: o })),
        on.map((o): Op => ({ op: 'comment', on: o })),
        on.map((o): Op => ({ op: 'close', on: o })),
        on.map((o): Op => ({ op: 'reopen', on: o })),
        fc.constant<Op>({ op: 'push' }),
        fc.constant<Op>({ op: 'branch' }),
        fc.constant<Op>({ op: 'unbranch' }),
      ),
      { maxLength: 16 },
    );
    const filters = fc.subarray(['issues', 'issue_comment', 'push', 'pull_request', 'create', 'delete'], {
      minLength: 1,
    });
    let seed = 10;
    await fc.assert(
      fc.asyncProperty(ops, filters, async (sequence, events) => {
        everything.received.length = 0;
        filtered.received.length = 0;
        const { emulator } = emulatorWith(seed++);
        try {
          const repo = emulator.state.repo('octo/app');
          const octo = emulator.state.findUser('octo')!;
          const config = (url: string, secret: string) => ({
            url,
            contentType: 'json' as const,
            secret,
            insecureSsl: '0' as const,
          });
          emulator.webhooks.create(
            repo,
            { config: config(everything.url, 'all'), events: ['*'], active: true },
            octo,
          );
          emulator.webhooks.create(
            repo,
            { config: config(filtered.url, 'some'), events, active: true },
            octo,
          );
          // The model: what each change should deliver, given the issue's and the pull request's state.
          const expected: string[] = ['ping', 'ping'];
          const branches: string[] = [];
          const pull = emulator.state.openPullRequest(repo, { title: 'Fix it', head: 'feature' });
          expected.push('pull_request.opened');
          await Promise.resolve();
          for (const step of sequence) {
            const issue = 'on' in step && step.on === 'pull' ? pull.issue : emulator.state.issue(repo, 1);
            const event = issue.pull ? 'pull_request' : 'issues';
            switch (step.op) {
              case 'open':
                emulator.admin.createIssue({ repo: 'octo/app', title: 'work' });
                expected.push('issues.opened');
                break;
              case 'label':
                if (!issue.labels.some((l) => l.name === step.name)) expected.push(`${event}.labeled`);
                emulator.state.addLabels(issue, [step.name]);
                break;
              case 'unlabel':
                for (const _ of issue.labels) expected.push(`${event}.unlabeled`);
                emulator.state.setLabels(issue, []);
                break;
              case 'comment':
                emulator.state.postIssueComment(issue, { body: 'hi' });
                expected.push('issue_comment.created');
                break;
              case 'close':
                if (issue.state === 'open') expected.push(`${event}.closed`);
                emulator.state.editIssue(issue, { state: 'closed' });
                break;
              case 'reopen':
                if (issue.state === 'closed') expected.push(`${event}.reopened`);
                emulator.state.editIssue(issue, { state: 'open' });
                break;
              case 'push':
                emulator.admin.pushBranch({ repo: 'octo/app', branch: 'feature' });
                expected.push('push');
                if (pull.issue.state === 'open') expected.push('pull_request.synchronize');
                break;
              case 'branch': {
                const name = `agent/${branches.length + 1}-${expected.length}`;
                emulator.state.createBranch(repo, `refs/heads/${name}`, repo.branches.get('main')!);
                branches.push(name);
                expected.push('create', 'push');
                break;
              }
              case 'unbranch': {
                const name = branches.pop();
                if (name === undefined) break;
                emulator.state.deleteBranch(repo, name);
                expected.push('delete');
                break;
              }
            }
            // Each change is its own tick, as requests are.
            await Promise.resolve();
          }
          const selected = expected.filter((e) => e === 'ping' || events.includes(e.split('.')[0]!));
          // Two hooks, two pings: each hook's own.
          selected.splice(selected.indexOf('ping'), 1);
          expected.splice(expected.indexOf('ping'), 1);
          await waitUntil(
            'every delivery',
            () =>
              everything.received.length >= expected.length && filtered.received.length >= selected.length,
            { timeoutMs: 20_000, everyMs: 10 },
          );
          const names = (list: Received[]) =>
            list.map((r) => (r.action ? `${r.event}.${r.action}` : r.event));
          expect(names(everything.received)).toEqual(expected);
          expect(names(filtered.received)).toEqual(selected);
          expect([...everything.received, ...filtered.received].every((r) => r.signed)).toBe(true);
        } finally {
          emulator.close();
        }
      }),
      { numRuns: 15 },
    );
  }, 120_000);
});

describe('property: check_suite completed is sent each time every run of the suite has completed', () => {
  it('for any sequence of check runs made and moved', async () => {
    const hook = await receiver('suite');
    afterAll(hook.close);
    const step = fc.record({
      name: fc.constantFrom('build', 'test', 'lint'),
      to: fc.constantFrom('queued', 'in_progress', 'success', 'failure'),
    });
    let seed = 40;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        hook.received.length = 0;
        const { emulator } = emulatorWith(seed++);
        try {
          const repo = emulator.state.repo('octo/app');
          const octo = emulator.state.findUser('octo')!;
          emulator.webhooks.create(
            repo,
            {
              config: { url: hook.url, contentType: 'json', secret: 'suite', insecureSsl: '0' },
              events: ['check_suite'],
              active: true,
            },
            octo,
          );
          // The model: each run's latest state; the suite completes when all of them have.
          const runs = new Map<string, string>();
          let completed = false;
          const expected: string[] = ['ping'];
          for (const { name, to } of steps) {
            const done = to === 'success' || to === 'failure';
            emulator.admin.setCheckRun({
              repo: 'octo/app',
              sha: repo.branches.get('feature')!,
              name,
              ...(done
                ? { conclusion: to as 'success' | 'failure' }
                : { status: to as 'queued' | 'in_progress' }),
            });
            runs.set(name, done ? 'completed' : to);
            const now = [...runs.values()].every((s) => s === 'completed');
            if (now && !completed) expected.push('check_suite.completed');
            completed = now;
            await Promise.resolve();
          }
          await waitUntil('every delivery', () => hook.received.length >= expected.length, {
            timeoutMs: 20_000,
            everyMs: 10,
          });
          // Nothing more arrives than the model says.
          await new Promise((resolve) => setTimeout(resolve, 50));
          expect(hook.received.map((r) => (r.action ? `${r.event}.${r.action}` : r.event))).toEqual(expected);
          expect(hook.received.flatMap((r) => payloadProblems(r.event, r.payload))).toEqual([]);
        } finally {
          emulator.close();
        }
      }),
      { numRuns: 15 },
    );
  }, 120_000);
});

describe('X-GitHub-Delivery', () => {
  it("is the run's seed's: the same changes under the same seed send the same GUIDs, another seed others", async () => {
    const guids = async (seed: number) => {
      const target = await receiver('s');
      const { emulator } = emulatorWith(seed);
      try {
        const repo = emulator.state.repo('octo/app');
        const config = {
          url: target.url,
          contentType: 'json' as const,
          secret: 's',
          insecureSsl: '0' as const,
        };
        emulator.webhooks.create(repo, { config, events: ['*'], active: true }, repo.owner);
        emulator.admin.createIssue({ repo: 'octo/app', title: 'one', labels: ['a'] });
        emulator.admin.pushBranch({ repo: 'octo/app', branch: 'feature' });
        await waitUntil('four deliveries', () => target.received.length === 4);
        return target.received.map((r) => String(r.headers['x-github-delivery']));
      } finally {
        emulator.close();
        await target.close();
      }
    };
    const first = await guids(7);
    expect(await guids(7)).toEqual(first);
    expect(new Set(first).size).toBe(4);
    expect(await guids(8)).not.toEqual(first);
  });
});
