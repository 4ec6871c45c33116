/**
 * Git refs, branches, a pull request's commits and compare: the routes an orchestrator uses to
 * make a branch before `gh pr create --head` uses it, move it, list what a pull request holds
 * and what one branch has that another lacks. They read and change world/refs.ts (commits with
 * their parents, branches, pushes). Errors are GitHub's: a ref's refusals are plain messages
 * (`Reference already exists`, `Update is not a fast forward`, `Object does not exist`), as
 * api.github.com answers them and `gh api` prints them.
 */
import { filesOfCommits } from './changes.ts';
import {
  actor,
  bodyField,
  fail,
  intParam,
  notFound,
  pagedList,
  plainly,
  type RestContext,
  type RestResult,
  type RestRouter,
  str,
  unchanged,
  withPull,
  withRepo,
} from './rest-kit.ts';
import { changedFileObject, commitObject, refObject, tagRefObject } from './shapes.ts';
import type { Commit, Repo } from './state.ts';
import { isProtected } from './world/access.ts';
import { MAX_COMPARE_COMMITS } from './world/refs.ts';

/** What `compare` lists at most: GitHub's 300 files. */
const MAX_COMPARE_FILES = 300;

export function addGitRoutes(r: RestRouter): void {
  r.add('POST', '/repos/{owner}/{repo}/git/refs', 'git/refs#create-a-reference', (ctx) =>
    withRepo(ctx, (repo) => createRef(ctx, repo)),
  );
  r.add('GET', '/repos/{owner}/{repo}/git/ref/{ref+}', 'git/refs#get-a-reference', (ctx) =>
    withRepo(ctx, (repo) => getRef(ctx, repo)),
  );
  r.add('PATCH', '/repos/{owner}/{repo}/git/refs/{ref+}', 'git/refs#update-a-reference', (ctx) =>
    withRepo(ctx, (repo) => updateRef(ctx, repo)),
  );
  r.add('DELETE', '/repos/{owner}/{repo}/git/refs/{ref+}', 'git/refs#delete-a-reference', (ctx) =>
    withRepo(ctx, (repo) => deleteRef(ctx, repo)),
  );
  r.add('GET', '/repos/{owner}/{repo}/branches', 'branches/branches#list-branches', (ctx) =>
    withRepo(ctx, (repo) => listBranches(ctx, repo)),
  );
  r.add('GET', '/repos/{owner}/{repo}/branches/{branch+}', 'branches/branches#get-a-branch', (ctx) =>
    withRepo(ctx, (repo) => getBranch(ctx, repo)),
  );
  r.add('GET', '/repos/{owner}/{repo}/commits', 'commits/commits#list-commits', (ctx) =>
    withRepo(ctx, (repo) => listCommits(ctx, repo)),
  );
  r.add('GET', '/repos/{owner}/{repo}/compare/{basehead+}', 'commits/commits#compare-two-commits', (ctx) =>
    withRepo(ctx, (repo) => compare(ctx, repo)),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/pulls/{pull_number}/commits',
    'pulls/pulls#list-commits-on-a-pull-request',
    (ctx) =>
      withPull(ctx, (pull) =>
        pagedList(
          ctx,
          pull.version,
          () => pull.commits.slice(0, MAX_COMPARE_COMMITS),
          (sha) =>
            commitObject(ctx.state, pull.issue.repo, pull.issue.repo.commits.get(sha)!, pull.issue.user),
        ),
      ),
  );
}

/** `heads/NAME` of a path → NAME (tags are tagOfPath's; other namespaces are not modelled). */
function branchOfPath(ref: string): string | undefined {
  return ref.startsWith('heads/') && ref.length > 6 ? ref.slice(6) : undefined;
}

/** `tags/NAME` of a path → NAME. */
function tagOfPath(ref: string): string | undefined {
  return ref.startsWith('tags/') && ref.length > 5 ? ref.slice(5) : undefined;
}

/** The answer of a request missing a required field, as GitHub's schema check words it. */
function missing(field: string): RestResult {
  return fail(422, `Invalid request.\n\n"${field}" wasn't supplied.`);
}

/** POST …/git/refs `{ref: "refs/heads/NAME" or "refs/tags/NAME", sha}`: 201, the ref, its URL as Location. */
function createRef(ctx: RestContext, repo: Repo): RestResult {
  const ref = str(ctx, 'ref');
  const sha = str(ctx, 'sha');
  if (ref === undefined) return missing('ref');
  if (sha === undefined) return missing('sha');
  return plainly(() => {
    const body = ref.startsWith('refs/tags/')
      ? tagRefObject(ctx.state, repo, ctx.state.createTag(repo, ref, sha, actor(ctx)), sha)
      : refObject(ctx.state, repo, ctx.state.createBranch(repo, ref, sha, actor(ctx)), sha);
    return { status: 201, body: JSON.stringify(body), location: body.url as string };
  });
}

/** GET …/git/ref/heads/NAME or tags/NAME: the ref; 404 for one the repository does not have. */
function getRef(ctx: RestContext, repo: Repo): RestResult {
  const path = ctx.params[2]!;
  const branch = branchOfPath(path);
  const tag = tagOfPath(path);
  const sha =
    branch !== undefined ? repo.branches.get(branch) : tag !== undefined ? repo.tags.get(tag) : undefined;
  if (sha === undefined) return notFound();
  const version = ctx.state.time.version;
  const hit = unchanged(ctx, version);
  if (hit) return hit;
  const body =
    branch !== undefined ? refObject(ctx.state, repo, branch, sha) : tagRefObject(ctx.state, repo, tag!, sha);
  return { status: 200, body: JSON.stringify(body), version };
}

/** PATCH …/git/refs/heads/NAME or tags/NAME `{sha, force}`: the ref moved, forward only unless forced. */
function updateRef(ctx: RestContext, repo: Repo): RestResult {
  const sha = str(ctx, 'sha');
  if (sha === undefined) return missing('sha');
  const tag = tagOfPath(ctx.params[2]!);
  if (tag !== undefined)
    return plainly(() => {
      if (ctx.state.refs.checkTagUpdate(repo, tag, sha, bodyField(ctx, 'force') === true))
        ctx.state.setTag(repo, tag, sha, actor(ctx));
      return { status: 200, body: JSON.stringify(tagRefObject(ctx.state, repo, tag, sha)) };
    });
  const branch = branchOfPath(ctx.params[2]!);
  if (branch === undefined) return fail(422, 'Reference does not exist');
  return plainly(() => {
    // A moved ref is a push: the open pull requests on the branch take the new head and commits.
    if (ctx.state.refs.checkRefUpdate(repo, branch, sha, bodyField(ctx, 'force') === true))
      ctx.state.branchPushed(repo, branch, sha, ctx.state.time.now(), actor(ctx));
    return { status: 200, body: JSON.stringify(refObject(ctx.state, repo, branch, sha)) };
  });
}

/** DELETE …/git/refs/heads/NAME (its open pull requests close) or tags/NAME: 204; 422 "Reference does not exist". */
function deleteRef(ctx: RestContext, repo: Repo): RestResult {
  const tag = tagOfPath(ctx.params[2]!);
  if (tag !== undefined) {
    if (!repo.tags.has(tag)) return fail(422, 'Reference does not exist');
    ctx.state.setTag(repo, tag, null, actor(ctx));
    return { status: 204, body: '' };
  }
  const branch = branchOfPath(ctx.params[2]!);
  if (branch === undefined || !repo.branches.has(branch)) return fail(422, 'Reference does not exist');
  return plainly(() => {
    ctx.state.deleteBranch(repo, branch, actor(ctx));
    return { status: 204, body: '' };
  });
}

/** GET …/branches: by name, paged, each with its commit. */
function listBranches(ctx: RestContext, repo: Repo): RestResult {
  const version = ctx.state.time.version;
  const api = `${ctx.state.apiUrl}/repos/${repo.fullName}`;
  return pagedList(
    ctx,
    version,
    () => [...repo.branches.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ([name, sha]) => ({
      name,
      commit: { sha, url: `${api}/commits/${sha}` },
      protected: isProtected(repo, name),
    }),
  );
}

/**
 * GET …/branches/NAME (a name may hold slashes): the branch with its whole commit, as
 * `repos.getBranch` reads it; 404 `Branch not found` for one the repository does not have.
 */
function getBranch(ctx: RestContext, repo: Repo): RestResult {
  const name = ctx.params[2]!;
  const sha = repo.branches.get(name);
  const commit = sha === undefined ? undefined : repo.commits.get(sha);
  if (commit === undefined) return fail(404, 'Branch not found');
  const version = Math.max(repo.pushVersion, commit.version);
  const hit = unchanged(ctx, version);
  if (hit) return hit;
  const api = `${ctx.state.apiUrl}/repos/${repo.fullName}`;
  const path = name.split('/').map(encodeURIComponent).join('/');
  return {
    status: 200,
    body: JSON.stringify({
      name,
      commit: commitObject(ctx.state, repo, commit, ctx.state.defaultUser),
      _links: { self: `${api}/branches/${path}`, html: `${ctx.state.webUrl}/${repo.fullName}/tree/${path}` },
      protected: isProtected(repo, name),
      // No status check is required: GitHub's "off".
      protection: {
        enabled: isProtected(repo, name),
        required_status_checks: { enforcement_level: 'off', contexts: [], checks: [] },
      },
      protection_url: `${api}/branches/${path}/protection`,
    }),
    version,
  };
}

/**
 * GET …/compare/BASE...HEAD: what HEAD has that BASE lacks (`git log BASE..HEAD`, oldest first,
 * 250 a page), how far each is ahead and behind, their merge base, the files changed.
 */
/** How many commits a commit list walks back at most (docs/limits.md): a page past them is empty. */
export const MAX_LISTED_COMMITS = 10_000;

/**
 * GET …/commits: the history of `sha` (a branch, a tag or a SHA; the default branch when absent),
 * newest first as git log lists it (by commit time, each commit before its parents), filtered by
 * `author` (a login or an email), `committer`, `since` and `until` (ISO 8601, on the commit's
 * committer date). GitHub's refusals: 409 for an empty repository, 404 for a SHA it does not have.
 * `path` is refused (400, a status the route documents): which commits changed a path means
 * reading every listed commit's tree, from git for a pushed one, and a list that ignored the
 * filter would be wrong without saying so.
 */
function listCommits(ctx: RestContext, repo: Repo): RestResult {
  const ref = ctx.query.get('sha');
  const start = ctx.state.refs.commit(repo, ref ?? repo.defaultBranch);
  if (start === undefined) {
    if (ref === undefined || repo.commits.size === 0) return fail(409, 'Git Repository is empty.');
    return fail(404, `No commit found for SHA: ${ref}`);
  }
  if (ctx.query.has('path'))
    return fail(
      400,
      'fleetbench: the path filter of a commit list is not modelled (docs/github-emulator.md)',
    );
  const bound = (name: 'since' | 'until'): number | undefined | 'bad' => {
    const text = ctx.query.get(name);
    if (text === undefined) return undefined;
    const ms = Date.parse(text);
    return Number.isNaN(ms) ? 'bad' : ms / 1000;
  };
  const since = bound('since');
  const until = bound('until');
  if (since === 'bad' || until === 'bad')
    return fail(400, 'Invalid time: since and until take an ISO 8601 timestamp');
  const matches = (who: string | undefined, ident: Commit['author']) => {
    if (who === undefined) return true;
    const wanted = who.toLowerCase();
    return (
      ident.email.toLowerCase() === wanted || ctx.state.userOfIdent(ident)?.login.toLowerCase() === wanted
    );
  };
  const author = ctx.query.get('author');
  const committer = ctx.query.get('committer');
  // The history is walked only when the answer is rendered: a poller's conditional GET of an
  // unchanged list is a 304 without it.
  return pagedList(
    ctx,
    ctx.state.time.version,
    () =>
      historyOf(repo, start).filter(
        (c) =>
          matches(author, c.author) &&
          matches(committer, c.committer) &&
          (since === undefined || c.committer.seconds >= since) &&
          (until === undefined || c.committer.seconds <= until),
      ),
    (c) => commitObject(ctx.state, repo, c, ctx.state.defaultUser),
  );
}

/**
 * `start` and its ancestors the repository has, newest first: git log's default order (the
 * commit with the latest committer date of those whose children are all listed comes next), at
 * most MAX_LISTED_COMMITS.
 */
export function historyOf(repo: Repo, start: Commit): Commit[] {
  const out: Commit[] = [];
  const queued = new Set<string>([start.sha]);
  const ready: Commit[] = [start];
  while (ready.length > 0 && out.length < MAX_LISTED_COMMITS) {
    // The newest of those ready; ties keep the order they were found in (a stable pick).
    let pick = 0;
    for (let i = 1; i < ready.length; i++)
      if ((ready[i] as Commit).committer.seconds > (ready[pick] as Commit).committer.seconds) pick = i;
    const commit = ready.splice(pick, 1)[0] as Commit;
    out.push(commit);
    for (const parent of commit.parents) {
      if (queued.has(parent)) continue;
      const known = repo.commits.get(parent);
      if (known === undefined) continue;
      queued.add(parent);
      ready.push(known);
    }
  }
  return out;
}

function compare(ctx: RestContext, repo: Repo): RestResult {
  const basehead = ctx.params[2]!;
  const dots = basehead.indexOf('...');
  if (dots <= 0) return notFound();
  const baseName = basehead.slice(0, dots);
  const headName = basehead.slice(dots + 3);
  const base = ctx.state.refs.commit(repo, baseName);
  const head = ctx.state.refs.commit(repo, headName);
  if (base === undefined || head === undefined) return notFound();
  const version = ctx.state.time.version;
  const hit = unchanged(ctx, version);
  if (hit) return hit;
  const comparison = ctx.state.refs.compare(repo, base.sha, head.sha);
  if (comparison.mergeBase === null)
    return fail(404, `No common ancestor between ${baseName} and ${headName}.`);
  const author = ctx.state.defaultUser;
  const perPage = Math.min(intParam(ctx.query, 'per_page', MAX_COMPARE_COMMITS), MAX_COMPARE_COMMITS);
  const page = intParam(ctx.query, 'page', 1);
  const commits = comparison.ahead.slice((page - 1) * perPage, page * perPage);
  const files = filesOfCommits(
    comparison.ahead.slice(0, MAX_COMPARE_FILES).map((c) => c.sha),
    headName,
    `${baseName}...${headName}`,
  );
  const api = `${ctx.state.apiUrl}/repos/${repo.fullName}`;
  const web = `${ctx.state.webUrl}/${repo.fullName}`;
  return {
    status: 200,
    body: JSON.stringify({
      url: `${api}/compare/${basehead}`,
      html_url: `${web}/compare/${basehead}`,
      permalink_url: `${web}/compare/${repo.owner.login}:${base.sha.slice(0, 7)}...${repo.owner.login}:${head.sha.slice(0, 7)}`,
      diff_url: `${web}/compare/${basehead}.diff`,
      patch_url: `${web}/compare/${basehead}.patch`,
      base_commit: commitObject(ctx.state, repo, base, author),
      merge_base_commit: commitObject(ctx.state, repo, comparison.mergeBase, author),
      status: comparison.status,
      ahead_by: comparison.ahead.length,
      behind_by: comparison.behindBy,
      total_commits: comparison.ahead.length,
      commits: commits.map((c) => commitObject(ctx.state, repo, c, author)),
      files: files.map((f) => changedFileObject(ctx.state, repo, f)),
    }),
    version,
    page: { page, last: Math.max(1, Math.ceil(comparison.ahead.length / perPage)) },
  };
}
