/**
 * Releases (REST "Releases"): listed newest first and paged, made (the tag with them when it does
 * not exist), read by id, by tag and as the latest, edited and deleted. A draft is seen only by
 * its author and by those who may push (GitHub: "Only users with push access will receive
 * listings for draft releases"). The state and its rules are world/releases.ts's;
 * docs/github-emulator.md, "Releases".
 */
import {
  actor,
  bodyField,
  fail,
  mutate,
  notFound,
  notOfType,
  numberParam,
  pagedList,
  type RestContext,
  type RestResult,
  type RestRouter,
  unchanged,
  withRepo,
} from './rest-kit.ts';
import { releaseObject } from './shapes.ts';
import type { Release, Repo } from './state.ts';
import { type ReleaseInput, releaseVisible } from './world/releases.ts';

export function addReleaseRoutes(r: RestRouter): void {
  const releases = '/repos/{owner}/{repo}/releases';
  r.add('GET', releases, 'releases/releases#list-releases', (ctx) =>
    withRepo(ctx, (repo) =>
      pagedList(
        ctx,
        repo.releasesVersion,
        () => ctx.state.releases.list(repo).filter((release) => visible(ctx, repo, release)),
        (release) => releaseObject(ctx.state, repo, release),
      ),
    ),
  );
  r.add(
    'POST',
    releases,
    'releases/releases#create-a-release',
    (ctx) => withRepo(ctx, (repo) => createRelease(ctx, repo)),
    { contentCreating: true },
  );
  // Literal segments (`latest`, `tags`) before an id: the router tries a literal first.
  r.add('GET', `${releases}/latest`, 'releases/releases#get-the-latest-release', (ctx) =>
    withRepo(ctx, (repo) => releaseAnswer(ctx, repo, ctx.state.releases.latest(repo))),
  );
  r.add('GET', `${releases}/tags/{tag+}`, 'releases/releases#get-a-release-by-tag-name', (ctx) =>
    withRepo(ctx, (repo) => releaseAnswer(ctx, repo, ctx.state.releases.byTag(repo, ctx.params[2]!))),
  );
  const one = `${releases}/{release_id}`;
  r.add('GET', one, 'releases/releases#get-a-release', (ctx) =>
    withRelease(ctx, (repo, release) => releaseAnswer(ctx, repo, release)),
  );
  r.add('PATCH', one, 'releases/releases#update-a-release', (ctx) =>
    withRelease(ctx, (repo, release) => {
      const input = releaseInput(ctx);
      if (isRefusal(input)) return input;
      return mutate(() => {
        ctx.state.releases.update(repo, release, input, actor(ctx));
        return { status: 200, body: JSON.stringify(releaseObject(ctx.state, repo, release)) };
      }, 'Release');
    }),
  );
  r.add('DELETE', one, 'releases/releases#delete-a-release', (ctx) =>
    withRelease(ctx, (repo, release) => {
      ctx.state.releases.delete(repo, release);
      return { status: 204, body: '' };
    }),
  );
}

/** Whether the caller sees the release (world/releases.ts). */
function visible(ctx: RestContext, repo: Repo, release: Release): boolean {
  return releaseVisible(ctx.user, repo, release);
}

/** The release `{release_id}` names, when the caller sees it; else 404. */
function withRelease(ctx: RestContext, fn: (repo: Repo, release: Release) => RestResult): RestResult {
  return withRepo(ctx, (repo) => {
    const release = repo.releases.get(numberParam(ctx.params[2]));
    return release !== undefined && visible(ctx, repo, release) ? fn(repo, release) : notFound();
  });
}

function releaseAnswer(ctx: RestContext, repo: Repo, release: Release | undefined): RestResult {
  if (release === undefined || !visible(ctx, repo, release)) return notFound();
  const hit = unchanged(ctx, release.version);
  if (hit) return hit;
  return {
    status: 200,
    body: JSON.stringify(releaseObject(ctx.state, repo, release)),
    version: release.version,
  };
}

function isRefusal(value: ReleaseInput | RestResult): value is RestResult {
  return 'status' in value;
}

/** The body's release fields, each of its documented type (null taken for `name` and `body`). */
function releaseInput(ctx: RestContext): ReleaseInput | RestResult {
  const input: ReleaseInput = {};
  for (const [field, key] of [
    ['tag_name', 'tagName'],
    ['target_commitish', 'targetCommitish'],
  ] as const) {
    const value = bodyField(ctx, field);
    if (value === undefined) continue;
    if (typeof value !== 'string') return notOfType(field, value, 'a string');
    input[key] = value;
  }
  for (const field of ['name', 'body'] as const) {
    const value = bodyField(ctx, field);
    if (value === undefined) continue;
    if (value !== null && typeof value !== 'string') return notOfType(field, value, 'a string');
    input[field] = value;
  }
  for (const field of ['draft', 'prerelease'] as const) {
    const value = bodyField(ctx, field);
    if (value === undefined) continue;
    if (typeof value !== 'boolean') return notOfType(field, value, 'a boolean');
    input[field] = value;
  }
  return input;
}

/** POST …/releases: 201 with `Location`; `tag_name` required, one release a tag (422 `already_exists`). */
function createRelease(ctx: RestContext, repo: Repo): RestResult {
  const input = releaseInput(ctx);
  if (isRefusal(input)) return input;
  const tagName = input.tagName;
  if (tagName === undefined) return fail(422, `Invalid request.\n\n"tag_name" wasn't supplied.`);
  return mutate(() => {
    const release = ctx.state.releases.create(repo, { ...input, tagName }, actor(ctx));
    const body = releaseObject(ctx.state, repo, release);
    return { status: 201, body: JSON.stringify(body), location: body.url as string };
  }, 'Release');
}
