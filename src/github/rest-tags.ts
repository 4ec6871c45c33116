/**
 * Tags: the repository's tag list (`GET /tags`) and annotated tag objects (`POST /git/tags`,
 * `GET /git/tags/{sha}`), what a release bot reads and writes. A tag itself is a ref
 * (`refs/tags/NAME`, rest-git.ts and world/refs.ts); a pushed tag is read into the world by the
 * served git repositories (src/github/git/). docs/github-emulator.md "Tags".
 */
import { identOf, nulIn } from './rest-contents.ts';
import {
  actor,
  fail,
  notFound,
  pagedList,
  type RestContext,
  type RestResult,
  type RestRouter,
  str,
  unchanged,
  withRepo,
} from './rest-kit.ts';
import { gitTagObject, tagListEntry } from './shapes.ts';
import { GitHubStateError, type Repo } from './state.ts';
import { validRefName } from './world/refs.ts';

const TAGGABLE = ['commit', 'tree', 'blob'] as const;

export function addTagRoutes(r: RestRouter): void {
  r.add('GET', '/repos/{owner}/{repo}/tags', 'repos/repos#list-repository-tags', (ctx) =>
    withRepo(ctx, (repo) => listTags(ctx, repo)),
  );
  r.add('POST', '/repos/{owner}/{repo}/git/tags', 'git/tags#create-a-tag-object', (ctx) =>
    withRepo(ctx, (repo) => createTag(ctx, repo)),
  );
  r.add('GET', '/repos/{owner}/{repo}/git/tags/{tag_sha}', 'git/tags#get-a-tag', (ctx) =>
    withRepo(ctx, (repo) => {
      const tag = repo.tagObjects.get(ctx.params[2]!);
      if (tag === undefined) return notFound();
      // A tag object never changes: its one version.
      const hit = unchanged(ctx, 1);
      if (hit) return hit;
      return { status: 200, body: JSON.stringify(gitTagObject(ctx.state, repo, tag)), version: 1 };
    }),
  );
}

/**
 * GET …/tags: each tag that leads to a commit, with that commit (an annotated tag's own SHA is
 * not listed, as on GitHub), newest name first: GitHub does not document the order; the
 * reverse of the names' order is what it answers for the usual `v1.2.3` names.
 */
function listTags(ctx: RestContext, repo: Repo): RestResult {
  return pagedList(
    ctx,
    ctx.state.time.version,
    () =>
      [...repo.tags.entries()]
        .flatMap(([name, sha]) => {
          const commit = ctx.state.refs.peel(repo, sha);
          return commit === undefined ? [] : [{ name, commit }];
        })
        .sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0)),
    ({ name, commit }) => tagListEntry(ctx.state, repo, name, commit),
  );
}

/** The answer of a request missing a required field, as GitHub's schema check words it. */
function missing(field: string): RestResult {
  return fail(422, `Invalid request.\n\n"${field}" wasn't supplied.`);
}

/**
 * POST …/git/tags `{tag, message, object, type, tagger?}`: 201, the tag object (its SHA git's
 * for its bytes), its URL as Location. No ref is made (GitHub's docs: create `refs/tags/NAME`
 * with the Git refs API to make the tag). The tagger defaults to the token's user, now.
 */
function createTag(ctx: RestContext, repo: Repo): RestResult {
  const name = str(ctx, 'tag');
  const message = str(ctx, 'message');
  const object = str(ctx, 'object');
  const type = str(ctx, 'type');
  if (name === undefined) return missing('tag');
  if (message === undefined) return missing('message');
  if (object === undefined) return missing('object');
  if (type === undefined) return missing('type');
  // As in a commit: a NUL in the message makes an object git's fsck refuses.
  if (message.includes('\0')) return nulIn('message');
  if (!(TAGGABLE as readonly string[]).includes(type))
    return fail(
      422,
      `Invalid request.\n\nFor 'properties/type', ${JSON.stringify(type)} is not one of ["commit", "tree", "blob"].`,
    );
  // git's rule for a tag's name (a ref's component rules): a tag object git would refuse to keep
  // is not made.
  if (!validRefName(`refs/tags/${name}`)) return fail(422, `${name} is not a valid tag name.`);
  const now = ctx.state.refs.ident(actor(ctx), ctx.state.time.now());
  const tagger = identOf(ctx, 'tagger', now);
  if (tagger.refusal) return tagger.refusal;
  try {
    const tag = ctx.state.refs.makeTag(repo, {
      tag: name,
      message,
      object,
      type: type as (typeof TAGGABLE)[number],
      tagger: tagger.ident ?? now,
    });
    const body = gitTagObject(ctx.state, repo, tag);
    return { status: 201, body: JSON.stringify(body), location: body.url as string };
  } catch (error) {
    if (error instanceof GitHubStateError) return fail(error.status, error.message);
    throw error;
  }
}
