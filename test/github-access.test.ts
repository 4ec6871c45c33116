/**
 * Who a repository's people are (issue 51): collaborators and their permissions as GitHub's
 * collaborator routes answer them, labels and collaborators declared in fixtures, and the
 * `author_association` GitHub documents (OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR,
 * FIRST_TIME_CONTRIBUTOR, NONE), over REST and GraphQL, through Octokit against the emulator
 * served on 127.0.0.1. Control planes gate on these (act only on issues from collaborators).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import { afterAll, describe, expect, it } from 'vitest';
import { InputFileError } from '../src/base/errors.ts';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { type Fixtures, GitHubEmulator, loadFixturesFile } from '../src/github/index.ts';
import { serve } from './helpers/github.ts';

const FIXTURES: Fixtures = {
  default_user: 'fleet-agent',
  users: [{ login: 'acme', type: 'Organization', members: ['mia'] }, { login: 'nora' }],
  repos: [
    {
      owner: 'acme',
      name: 'widgets',
      required_reviews: 0,
      collaborators: [
        { login: 'cole', role_name: 'maintain' },
        { login: 'fleet-agent', role_name: 'write' },
      ],
      labels: [{ name: 'agent', color: '0e8a16', description: 'Work for an agent' }],
      issues: [
        { number: 1, title: 'From a member', user: 'mia', labels: ['agent'] },
        { number: 2, title: 'From a collaborator', user: 'cole', comments: [{ user: 'nora', body: '+1' }] },
        { number: 3, title: 'From a stranger', user: 'nora' },
      ],
      pulls: [
        { number: 4, title: 'First try', head: 'fred/fix', user: 'fred' },
        { number: 5, title: 'Landed long ago', head: 'olly/old', user: 'olly', state: 'merged' },
      ],
    },
    { owner: 'acme', name: 'secret', private: true },
    { owner: 'olly', name: 'own', issues: [{ title: 'Mine', user: 'olly' }] },
  ],
};

async function world() {
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(3),
    fixtures: FIXTURES,
    latency: false,
  });
  const server = await serve(emulator);
  return { emulator, octokit: new Octokit({ baseUrl: server.url, auth: emulator.defaultToken }) };
}

async function statusOf(call: Promise<{ status: number }>): Promise<number> {
  try {
    return (await call).status;
  } catch (error) {
    return (error as { status: number }).status;
  }
}

const widgets = { owner: 'acme', repo: 'widgets' };

describe('collaborators over REST', () => {
  it('answers who is a collaborator (204/404) and each one’s permission and role as GitHub does', async () => {
    const { octokit } = await world();
    const check = (username: string, repo = widgets) =>
      statusOf(octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}', { ...repo, username }));
    expect(await check('cole')).toBe(204);
    expect(await check('COLE')).toBe(204);
    expect(await check('mia')).toBe(204); // an organization member, by its base role
    expect(await check('nora')).toBe(404);
    expect(await check('fred')).toBe(404);
    expect(await check('no-such-user')).toBe(404);
    expect(await check('u'.repeat(10_000))).toBe(404);
    expect(await check('olly', { owner: 'olly', repo: 'own' })).toBe(204); // the owner

    const permission = async (username: string, repo = widgets) =>
      (
        await octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
          ...repo,
          username,
        })
      ).data;
    // maintain is the legacy `write`, as GitHub maps it; role_name keeps the role.
    expect(await permission('cole')).toMatchObject({
      permission: 'write',
      role_name: 'maintain',
      user: {
        login: 'cole',
        role_name: 'maintain',
        permissions: { admin: false, maintain: true, push: true },
      },
    });
    expect(await permission('mia')).toMatchObject({ permission: 'read', role_name: 'read' });
    // No grant: a public repository is still readable, a private one is not.
    expect(await permission('nora')).toMatchObject({ permission: 'read', role_name: 'read' });
    expect(await permission('nora', { owner: 'acme', repo: 'secret' })).toMatchObject({
      permission: 'none',
      user: { permissions: { pull: false, push: false } },
    });
    expect(await permission('olly', { owner: 'olly', repo: 'own' })).toMatchObject({ permission: 'admin' });
    expect(
      await statusOf(
        octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
          ...widgets,
          username: 'no-such-user',
        }),
      ),
    ).toBe(404);

    const list = await octokit.request('GET /repos/{owner}/{repo}/collaborators', widgets);
    expect(list.data.map((u) => [u.login, u.role_name])).toEqual([
      ['cole', 'maintain'],
      ['fleet-agent', 'write'],
      ['mia', 'read'],
    ]);
    const pushers = await octokit.request('GET /repos/{owner}/{repo}/collaborators', {
      ...widgets,
      permission: 'push',
    });
    expect(pushers.data.map((u) => u.login)).toEqual(['cole', 'fleet-agent']);
    const outside = await octokit.request('GET /repos/{owner}/{repo}/collaborators', {
      ...widgets,
      affiliation: 'outside',
    });
    expect(outside.data.map((u) => u.login)).toEqual(['cole', 'fleet-agent']);
  });

  it('takes fixtures’ labels with their color and description', async () => {
    const { octokit } = await world();
    const label = await octokit.request('GET /repos/{owner}/{repo}/labels/{name}', {
      ...widgets,
      name: 'agent',
    });
    expect(label.data).toMatchObject({ name: 'agent', color: '0e8a16', description: 'Work for an agent' });
    const issue = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', {
      ...widgets,
      issue_number: 1,
    });
    expect(issue.data.labels).toEqual([expect.objectContaining({ id: label.data.id, name: 'agent' })]);
  });
});

describe('author_association', () => {
  it('is OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR or NONE, in REST and GraphQL alike', async () => {
    const { octokit } = await world();
    const issue = async (issue_number: number, repo = widgets) =>
      (await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', { ...repo, issue_number }))
        .data.author_association;
    expect(await issue(1)).toBe('MEMBER');
    expect(await issue(2)).toBe('COLLABORATOR');
    expect(await issue(3)).toBe('NONE');
    expect(await issue(4)).toBe('FIRST_TIME_CONTRIBUTOR');
    expect(await issue(5)).toBe('CONTRIBUTOR'); // a merged pull request: "previously committed"
    expect(await issue(1, { owner: 'olly', repo: 'own' })).toBe('OWNER');
    const comments = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      ...widgets,
      issue_number: 2,
    });
    expect(comments.data[0]!.author_association).toBe('NONE');
    const pull = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
      ...widgets,
      pull_number: 4,
    });
    expect(pull.data.author_association).toBe('FIRST_TIME_CONTRIBUTOR');

    const { repository } = await octokit.graphql<{
      repository: { issues: { nodes: { number: number; authorAssociation: string }[] } };
    }>(
      '{ repository(owner: "acme", name: "widgets") { issues(first: 10) { nodes { number authorAssociation } } } }',
    );
    expect(repository.issues.nodes.map((n) => [n.number, n.authorAssociation])).toEqual([
      [1, 'MEMBER'],
      [2, 'COLLABORATOR'],
      [3, 'NONE'],
    ]);
  });

  it('moves when a first pull request merges, and with it the ETags of what shows it', async () => {
    const { octokit } = await world();
    const read = (headers: Record<string, string> = {}) =>
      octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        ...widgets,
        pull_number: 4,
        headers,
      });
    const before = await read();
    expect(before.data.author_association).toBe('FIRST_TIME_CONTRIBUTOR');
    await octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
      ...widgets,
      pull_number: 4,
    });
    const after = await read({ 'if-none-match': String(before.headers.etag) });
    expect(after.status).toBe(200);
    expect(after.data.author_association).toBe('CONTRIBUTOR');
  });
});

describe('fixtures of people', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetbench-access-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses members on a user, an unknown role, a label declared twice and a bad color, naming the line', () => {
    const file = join(dir, 'bad.yaml');
    const refusal = (text: string) => {
      writeFileSync(file, text);
      try {
        loadFixturesFile(file);
      } catch (error) {
        expect(error).toBeInstanceOf(InputFileError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refusal('users: [{ login: bob, members: [amy] }]\nrepos: [{ owner: o, name: r }]\n')).toMatch(
      /bad\.yaml:1.*users\[0\]\.members: only an Organization has members/,
    );
    expect(
      refusal('repos:\n  - owner: o\n    name: r\n    collaborators: [{ login: amy, role_name: owner }]\n'),
    ).toMatch(/bad\.yaml:4.*collaborators\[0\]\.role_name/);
    expect(
      refusal('repos:\n  - owner: o\n    name: r\n    labels: [{ name: Bug }, { name: bug }]\n'),
    ).toMatch(/bad\.yaml:4.*labels\[1\]\.name: label bug is declared twice/);
    expect(refusal('repos:\n  - owner: o\n    name: r\n    labels: [{ name: x, color: red }]\n')).toMatch(
      /bad\.yaml:4.*labels\[0\]\.color: expected six hex digits/,
    );
  });
});
