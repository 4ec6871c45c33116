/**
 * An owner's repositories and a user's organizations (docs/github-emulator.md, "What it serves"):
 * `repos.listForUser`, `repos.listForOrg` and `orgs.listForAuthenticatedUser`, how a control plane
 * that serves every repository of an owner finds its work. Octokit against a served emulator;
 * every answer checked against GitHub's OpenAPI description by the test setup.
 */
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import { describe, expect, it } from 'vitest';
import { inProcess, serve } from './helpers/github.ts';

const Octokit = Core.plugin(restEndpointMethods);

describe("an owner's repositories, a user's organizations", () => {
  it('lists them in GitHub’s default orders, hides a private one from outsiders, 404 for no such owner', async () => {
    const { emulator } = inProcess({
      fixtures: {
        default_user: 'alice',
        users: [
          { login: 'alice' },
          { login: 'mallory' },
          { login: 'acme', type: 'Organization', members: ['alice'] },
          { login: 'other', type: 'Organization' },
        ],
        repos: [
          { owner: 'acme', name: 'zeta' },
          { owner: 'acme', name: 'alpha' },
          { owner: 'acme', name: 'secret', private: true },
          { owner: 'alice', name: 'dotfiles' },
        ],
      },
    });
    const server = await serve(emulator);
    const alice = new Octokit({ baseUrl: server.url, auth: emulator.defaultToken });
    const mallory = new Octokit({
      baseUrl: server.url,
      auth: emulator.tokens.mint({ user: 'mallory' }).token,
    });
    // An organization's: newest first by default; its member sees the private one.
    const org = await alice.rest.repos.listForOrg({ org: 'acme' });
    expect(org.data.map((r) => r.name)).toEqual(['secret', 'alpha', 'zeta']);
    const byName = await alice.rest.repos.listForOrg({ org: 'acme', sort: 'full_name' });
    expect(byName.data.map((r) => r.name)).toEqual(['alpha', 'secret', 'zeta']);
    expect((await mallory.rest.repos.listForOrg({ org: 'acme' })).data.map((r) => r.name)).toEqual([
      'alpha',
      'zeta',
    ]);
    // A user's: by full name.
    expect(
      (await mallory.rest.repos.listForUser({ username: 'alice' })).data.map((r) => r.full_name),
    ).toEqual(['alice/dotfiles']);
    const paged = await alice.rest.repos.listForOrg({ org: 'acme', per_page: 1 });
    expect(paged.data).toHaveLength(1);
    expect(paged.headers.link).toMatch(/rel="next"/);
    // A user is no organization; no such account is a 404 either way.
    await expect(alice.rest.repos.listForOrg({ org: 'alice' })).rejects.toMatchObject({ status: 404 });
    await expect(alice.rest.repos.listForUser({ username: 'nobody-here' })).rejects.toMatchObject({
      status: 404,
    });
    // The organizations alice belongs to; mallory belongs to none.
    expect((await alice.rest.orgs.listForAuthenticatedUser()).data.map((o) => o.login)).toEqual(['acme']);
    expect((await mallory.rest.orgs.listForAuthenticatedUser()).data).toEqual([]);
  });
});
