/**
 * An owner's repositories and a user's organizations (docs/github-emulator.md, "What it serves"):
 * `repos.listForUser`, `repos.listForOrg` and `orgs.listForAuthenticatedUser`, how a control plane
 * that serves every repository of an owner finds its work. Octokit against a served emulator;
 * every answer checked against GitHub's OpenAPI description by the test setup.
 */
import { describe, expect, it } from 'vitest';
import { servedOrg } from './helpers/github.ts';

describe("an owner's repositories, a user's organizations", () => {
  it('lists them in GitHub’s default orders, hides a private one from outsiders, 404 for no such owner', async () => {
    const { alice, mallory } = await servedOrg(
      [
        { owner: 'acme', name: 'zeta' },
        { owner: 'acme', name: 'alpha' },
        { owner: 'acme', name: 'secret', private: true },
        { owner: 'alice', name: 'dotfiles' },
      ],
      [{ login: 'other', type: 'Organization' }],
    );
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

  it('GraphQL repositoryOwner.repositories: what `gh repo list` asks, ordered, filtered, paged, the private ones by role', async () => {
    const { emulator, advance, alice, mallory } = await servedOrg([
      { owner: 'acme', name: 'zeta' },
      { owner: 'acme', name: 'alpha' },
      { owner: 'acme', name: 'secret', private: true },
    ]);
    await advance(60_000);
    emulator.admin.pushBranch({ repo: 'acme/zeta', branch: 'main' });
    const query = `query($owner: String!, $privacy: RepositoryPrivacy, $after: String, $first: Int!) {
      repositoryOwner(login: $owner) { login
        repositories(first: $first, after: $after, privacy: $privacy, ownerAffiliations: OWNER, orderBy: {field: PUSHED_AT, direction: DESC}) {
          nodes { nameWithOwner isPrivate visibility } totalCount pageInfo { hasNextPage endCursor } } } }`;
    type Page = {
      repositoryOwner: {
        repositories: {
          nodes: Array<{ nameWithOwner: string; isPrivate: boolean }>;
          totalCount: number;
          pageInfo: { hasNextPage: boolean; endCursor: string | null };
        };
      } | null;
    };
    const names = (page: Page) => page.repositoryOwner!.repositories.nodes.map((n) => n.nameWithOwner);
    // Pushed most recently first: zeta's push came last.
    const all = await alice.graphql<Page>(query, { owner: 'acme', first: 10 });
    expect(names(all)[0]).toBe('acme/zeta');
    expect(new Set(names(all))).toEqual(new Set(['acme/zeta', 'acme/alpha', 'acme/secret']));
    expect(all.repositoryOwner!.repositories.totalCount).toBe(3);
    expect(names(await mallory.graphql<Page>(query, { owner: 'acme', first: 10 }))).not.toContain(
      'acme/secret',
    );
    expect(names(await alice.graphql<Page>(query, { owner: 'acme', first: 10, privacy: 'PRIVATE' }))).toEqual(
      ['acme/secret'],
    );
    // Paged: every repository once, in the same order.
    const seen: string[] = [];
    let after: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page: Page = await alice.graphql<Page>(query, { owner: 'acme', first: 1, after });
      seen.push(...names(page));
      if (!page.repositoryOwner!.repositories.pageInfo.hasNextPage) break;
      after = page.repositoryOwner!.repositories.pageInfo.endCursor;
    }
    expect(seen).toEqual(names(all));
    expect((await alice.graphql<Page>(query, { owner: 'nobody-here', first: 1 })).repositoryOwner).toBeNull();
  });
});
