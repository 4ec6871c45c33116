/**
 * The contents API (`GET`/`PUT`/`DELETE …/contents/{path}`) and the Git data API (blobs, trees,
 * commits, matching refs): what a control plane that commits through REST instead of git uses to
 * write a file on a branch. Objects are git's (world/git-objects.ts): their SHAs are git's, the
 * served bare repositories get them before a clone or fetch, and what a push brought is read
 * from git on demand (world/git-store.ts; docs/github-emulator.md, "Contents and Git data").
 * Shapes are GitHub's OpenAPI description's (`content-file`, `content-directory`, `file-commit`,
 * `blob`, `short-blob`, `git-tree`, `git-commit`); the bounds are GIT_BOUNDS (docs/limits.md).
 */
import {
  actor,
  bodyField,
  fail,
  notFound,
  plainly,
  type RestContext,
  type RestResult,
  type RestRouter,
  str,
  unchanged,
  withRepo,
} from './rest-kit.ts';
import { refObject, tagRefObject } from './shapes.ts';
import type { Commit, Repo } from './state.ts';
import { GIT_BOUNDS } from './world/bounds.ts';
import {
  GIT_TREE_MODES,
  type GitIdent,
  type GitTreeMode,
  gitDate,
  parseTree,
  typeOfMode,
} from './world/git-objects.ts';
import {
  decodeBase64,
  isDotGitmodules,
  type PathEntry,
  pathProblem,
  type TreeEdit,
} from './world/git-store.ts';
import { validRefName } from './world/refs.ts';

export function addContentsRoutes(r: RestRouter): void {
  const contents = '/repos/{owner}/{repo}/contents/{path+}';
  r.add('GET', contents, 'repos/contents#get-repository-content', (ctx) =>
    withRepo(ctx, (repo) => getContent(ctx, repo, ctx.params[2]!)),
  );
  // The README of the root or of a directory, answered as the file's contents entry.
  r.add('GET', '/repos/{owner}/{repo}/readme', 'repos/contents#get-a-repository-readme', (ctx) =>
    withRepo(ctx, (repo) => getReadme(ctx, repo, '')),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/readme/{dir+}',
    'repos/contents#get-a-repository-readme-for-a-directory',
    (ctx) => withRepo(ctx, (repo) => getReadme(ctx, repo, ctx.params[2]!)),
  );
  // A commit on a branch, as a push is: content-creating (docs/github-emulator.md, "Secondary limits").
  r.add(
    'PUT',
    contents,
    'repos/contents#create-or-update-file-contents',
    (ctx) => withRepo(ctx, (repo) => plainly(() => putContent(ctx, repo))),
    { contentCreating: true },
  );
  r.add(
    'DELETE',
    contents,
    'repos/contents#delete-a-file',
    (ctx) => withRepo(ctx, (repo) => plainly(() => deleteContent(ctx, repo))),
    { contentCreating: true },
  );
  r.add('POST', '/repos/{owner}/{repo}/git/blobs', 'git/blobs#create-a-blob', (ctx) =>
    withRepo(ctx, (repo) => plainly(() => createBlob(ctx, repo))),
  );
  r.add('GET', '/repos/{owner}/{repo}/git/blobs/{file_sha}', 'git/blobs#get-a-blob', (ctx) =>
    withRepo(ctx, (repo) => getBlob(ctx, repo)),
  );
  r.add('POST', '/repos/{owner}/{repo}/git/trees', 'git/trees#create-a-tree', (ctx) =>
    withRepo(ctx, (repo) => plainly(() => createTree(ctx, repo))),
  );
  r.add('GET', '/repos/{owner}/{repo}/git/trees/{tree_sha+}', 'git/trees#get-a-tree', (ctx) =>
    withRepo(ctx, (repo) => getTree(ctx, repo)),
  );
  r.add('POST', '/repos/{owner}/{repo}/git/commits', 'git/commits#create-a-commit', (ctx) =>
    withRepo(ctx, (repo) => plainly(() => createCommit(ctx, repo))),
  );
  r.add('GET', '/repos/{owner}/{repo}/git/commits/{commit_sha}', 'git/commits#get-a-commit-object', (ctx) =>
    withRepo(ctx, (repo) => {
      const commit = repo.commits.get(ctx.params[2]!);
      if (commit === undefined) return notFound();
      const hit = unchanged(ctx, commit.version);
      if (hit) return hit;
      return {
        status: 200,
        body: JSON.stringify(gitCommitObject(ctx, repo, commit)),
        version: commit.version,
      };
    }),
  );
  r.add('GET', '/repos/{owner}/{repo}/git/matching-refs/{ref+}', 'git/refs#list-matching-references', (ctx) =>
    withRepo(ctx, (repo) => matchingRefs(ctx, repo)),
  );
}

/** GitHub's answer to a request missing a required field. */
function missing(field: string): RestResult {
  return fail(422, `Invalid request.\n\n"${field}" wasn't supplied.`);
}

/**
 * A NUL in what goes into a commit object: git's fsck refuses the commit (nulInHeader in a name,
 * nulInCommit in a message), so every clone or fetch with transfer.fsckObjects would fail on it.
 */
export function nulIn(field: string): RestResult {
  return fail(422, `Invalid request.\n\n"${field}" contains a NUL character.`);
}

/** Base64 as GitHub sends it: lines of 60 characters, each ending with a newline. */
function encodeBase64(bytes: Buffer): string {
  const text = bytes.toString('base64');
  let out = '';
  for (let i = 0; i < text.length; i += 60) out += `${text.slice(i, i + 60)}\n`;
  return out;
}

/**
 * The commit a `ref` query names (contents, trees): a branch (`B`, `heads/B`, `refs/heads/B`), a
 * tag (`T`, `tags/T`, `refs/tags/T`; an annotated one to the commit it tags), or a SHA. A branch
 * wins over a tag of the same name, as in git.
 */
function commitOfRef(ctx: RestContext, repo: Repo, ref: string): Commit | undefined {
  const name = ref.replace(/^refs\//, '');
  const branch = repo.branches.get(name.replace(/^heads\//, '')) ?? repo.branches.get(ref);
  if (branch !== undefined) return repo.commits.get(branch);
  const tag = repo.tags.get(name.replace(/^tags\//, '')) ?? repo.tags.get(ref);
  const sha = tag === undefined ? ref : ctx.state.refs.peel(repo, tag);
  return sha === undefined ? undefined : repo.commits.get(sha);
}

/** `committer`/`author` of a write: `{name, email, date?}`; GitHub's 422 for a missing name or e-mail. */
export function identOf(
  ctx: RestContext,
  field: string,
  fallback: GitIdent,
): { ident: GitIdent | undefined; refusal?: RestResult } {
  const value = bodyField(ctx, field);
  if (value === undefined || value === null) return { ident: undefined };
  if (typeof value !== 'object')
    return { ident: undefined, refusal: fail(422, `Invalid request.\n\n"${field}" is not an object.`) };
  const o = value as { name?: unknown; email?: unknown; date?: unknown };
  if (typeof o.name !== 'string') return { ident: undefined, refusal: missing('name') };
  if (typeof o.email !== 'string') return { ident: undefined, refusal: missing('email') };
  // A NUL ends a git header line: the commit made is one `git fsck` refuses (nulInHeader), so a
  // clone with transfer.fsckObjects fails for everyone; GitHub refuses such objects.
  for (const [part, value] of [
    ['name', o.name],
    ['email', o.email],
  ] as const)
    if (value.includes('\0')) return { ident: undefined, refusal: nulIn(`${field}.${part}`) };
  let seconds = fallback.seconds;
  if (o.date !== undefined) {
    const ms = typeof o.date === 'string' ? Date.parse(o.date) : Number.NaN;
    // git's times are seconds since 1970, never negative (fsck: badDateOverflow).
    if (Number.isNaN(ms) || ms < 0)
      return { ident: undefined, refusal: fail(422, `Invalid request.\n\n"${field}.date" is not a date.`) };
    seconds = Math.floor(ms / 1000);
  }
  return { ident: { name: o.name, email: o.email, seconds } };
}

function urls(ctx: RestContext, repo: Repo, path: string, ref: string, sha: string, dir: boolean) {
  const api = `${ctx.state.apiUrl}/repos/${repo.fullName}`;
  const web = `${ctx.state.webUrl}/${repo.fullName}`;
  const encoded = path.split('/').map(encodeURIComponent).join('/');
  const self = `${api}/contents/${encoded}?ref=${encodeURIComponent(ref)}`;
  const git = `${api}/git/${dir ? 'trees' : 'blobs'}/${sha}`;
  const html = `${web}/${dir ? 'tree' : 'blob'}/${encodeURIComponent(ref)}/${encoded}`;
  return {
    url: self,
    html_url: html,
    git_url: git,
    download_url: dir ? null : `${web}/raw/${encodeURIComponent(ref)}/${encoded}`,
    _links: { self, git, html },
  };
}

const TYPE_OF_ENTRY: Record<GitTreeMode, string> = {
  '100644': 'file',
  '100755': 'file',
  '120000': 'symlink',
  '40000': 'dir',
  // "submodules have their "type" specified as "file"" in a directory listing (GitHub's description).
  '160000': 'file',
};

/** A path's entry without its content: a directory listing's item, a write's `content`. */
function entryObject(
  ctx: RestContext,
  repo: Repo,
  path: string,
  ref: string,
  entry: PathEntry,
  size: number,
): Record<string, unknown> {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return {
    name,
    path,
    sha: entry.sha,
    size,
    ...urls(ctx, repo, path, ref, entry.sha, entry.mode === '40000'),
    type: TYPE_OF_ENTRY[entry.mode],
  };
}

/**
 * A README's name as GitHub matches it: `README`, alone or with an extension (`README.md`,
 * `readme.markdown`, `Readme.rst`), in any case.
 */
const README_NAME = /^readme(\.[^.]+)*$/i;

/**
 * GET …/readme and …/readme/{dir}?ref=: the README of the directory (the root by default) at
 * `ref` (the default branch by default), as its contents entry; 404 when the directory has none.
 * Of several (`README.md` and `readme.txt`), the first in git's tree order, which puts upper case
 * first (docs/github-emulator.md, "Contents and Git data").
 */
function getReadme(ctx: RestContext, repo: Repo, dir: string): RestResult {
  const found = entryAtRef(ctx, repo, dir);
  if (isResult(found)) return found;
  const { path, entry } = found;
  if (entry.mode !== '40000') return notFound();
  const readme = ctx.state.gitStore
    .tree(repo, entry.sha)
    ?.find((e) => (e.mode === '100644' || e.mode === '100755') && README_NAME.test(e.name));
  if (readme === undefined) return notFound();
  return getContent(ctx, repo, path === '' ? readme.name : `${path}/${readme.name}`);
}

/**
 * What a read names: the commit of its `ref` (the default branch by default; 404 `No commit found
 * for the ref …`), and the entry at the path in it (404 when there is none).
 */
function entryAtRef(
  ctx: RestContext,
  repo: Repo,
  rawPath: string,
): { path: string; ref: string; commit: Commit; entry: PathEntry } | RestResult {
  const path = rawPath.replace(/^\/+|\/+$/g, '');
  const ref = ctx.query.get('ref') || repo.defaultBranch;
  const commit = commitOfRef(ctx, repo, ref);
  if (commit === undefined) return fail(404, `No commit found for the ref ${ref}`);
  if (path !== '' && pathProblem(path, 'path') !== undefined) return notFound();
  const entry = ctx.state.gitStore.entryAt(repo, commit.tree, path);
  return entry === undefined ? notFound() : { path, ref, commit, entry };
}

/** GET …/contents/{path}?ref=: a file (base64 `content`), a directory (its entries), or 404. */
function getContent(ctx: RestContext, repo: Repo, rawPath: string): RestResult {
  const found = entryAtRef(ctx, repo, rawPath);
  if (isResult(found)) return found;
  const { path, ref, commit, entry } = found;
  const store = ctx.state.gitStore;
  const hit = unchanged(ctx, commit.version);
  if (hit) return hit;
  const answer = (body: unknown): RestResult => ({
    status: 200,
    body: JSON.stringify(body),
    version: commit.version,
  });
  if (entry.mode === '40000') {
    const entries = (store.tree(repo, entry.sha) ?? []).slice(0, GIT_BOUNDS.maxDirectoryEntries);
    const objects = store.getMany(
      repo,
      entries.filter((e) => typeOfMode(e.mode) === 'blob').map((e) => e.sha),
      false,
    );
    return answer(
      entries.map((e) =>
        entryObject(
          ctx,
          repo,
          path === '' ? e.name : `${path}/${e.name}`,
          ref,
          e,
          objects.get(e.sha)?.size ?? 0,
        ),
      ),
    );
  }
  if (entry.mode === '160000')
    return answer({
      ...entryObject(ctx, repo, path, ref, entry, 0),
      type: 'submodule',
      submodule_git_url: '',
    });
  // Its size first: a file above 1 MB is answered without reading it (unless asked raw).
  const sized = store.getMany(repo, [entry.sha], false).get(entry.sha);
  if (sized === undefined) return notFound();
  const tooLarge = () =>
    fail(403, 'This API returns blobs up to 100 MB in size (docs/limits.md)', {
      errors: [{ resource: 'Blob', field: 'data', code: 'too_large' }],
    });
  if (sized.size > GIT_BOUNDS.maxBlobBytes) return tooLarge();
  const base = entryObject(ctx, repo, path, ref, entry, sized.size);
  // Above 1 MB GitHub gives no content inline (its description: "`content` … empty, `encoding` … `none`").
  const inline = sized.size <= GIT_BOUNDS.inlineContentBytes;
  if (!inline && ctx.format !== 'raw' && entry.mode !== '120000')
    return answer({ ...base, type: 'file', content: '', encoding: 'none' });
  const body = sized.body ?? store.get(repo, entry.sha)?.body;
  if (body === undefined) return tooLarge();
  if (ctx.format === 'raw') return rawAnswer(body, commit.version);
  if (entry.mode === '120000') return answer({ ...base, type: 'symlink', target: body.toString('utf8') });
  return answer({ ...base, type: 'file', content: encodeBase64(body), encoding: 'base64' });
}

/**
 * A file's bytes as `application/vnd.github.raw` asks (the contents and blob GETs). The emulator's
 * answers are text: bytes that are not UTF-8 are refused (403, docs/github-emulator.md) rather
 * than sent altered; their base64 JSON answer carries them whole.
 */
function rawAnswer(bytes: Buffer, version?: number): RestResult {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return fail(403, 'the emulator sends raw content only when it is UTF-8 text: ask for JSON (base64)');
  }
  return {
    status: 200,
    body: text,
    version,
    contentType: 'application/vnd.github.raw; charset=utf-8',
    mediaType: 'github.v3; param=raw; format=raw',
  };
}

/** The branch a contents write names (`branch`, else the default branch) and its tip. */
function branchOfWrite(ctx: RestContext, repo: Repo): { branch: string; tip: Commit } | RestResult {
  const branch = str(ctx, 'branch') ?? repo.defaultBranch;
  const sha = repo.branches.get(branch.replace(/^refs\/heads\//, ''));
  const tip = sha === undefined ? undefined : repo.commits.get(sha);
  if (tip === undefined) return fail(404, `Branch ${branch} not found`);
  return { branch: branch.replace(/^refs\/heads\//, ''), tip };
}

/**
 * The commit of a contents write: the author and committer given (the author defaults to the
 * committer, the committer to the caller), the branch moved as a push moves it (open pull
 * requests on it take the commit).
 */
function commitOnBranch(
  ctx: RestContext,
  repo: Repo,
  target: { branch: string; tip: Commit },
  tree: string,
  message: string,
): Commit | RestResult {
  const at = ctx.state.time.now();
  const me = ctx.state.refs.ident(actor(ctx), at);
  const committer = identOf(ctx, 'committer', me);
  if (committer.refusal) return committer.refusal;
  const author = identOf(ctx, 'author', me);
  if (author.refusal) return author.refusal;
  const commit = ctx.state.refs.makeCommit(repo, {
    message,
    at,
    parents: [target.tip.sha],
    author: author.ident ?? committer.ident ?? me,
    committer: committer.ident ?? me,
    tree,
  });
  ctx.state.branchPushed(repo, target.branch, commit.sha, at, actor(ctx));
  return commit;
}

function isResult(value: unknown): value is RestResult {
  return typeof value === 'object' && value !== null && 'status' in value && 'body' in value;
}

/**
 * PUT …/contents/{path}: a file created (201) or replaced (200, the current blob's `sha`
 * required: 422 when missing, 409 when stale, as GitHub answers), as one commit on the branch.
 */
function putContent(ctx: RestContext, repo: Repo): RestResult {
  const path = ctx.params[2]!.replace(/^\/+|\/+$/g, '');
  const message = str(ctx, 'message');
  const content = str(ctx, 'content');
  if (message === undefined) return missing('message');
  if (message.includes('\0')) return nulIn('message');
  if (content === undefined) return missing('content');
  const problem = path === '' ? 'path contains a malformed path component' : pathProblem(path, 'path');
  if (problem !== undefined) return fail(422, problem);
  const bytes = decodeBase64(content);
  if (bytes === undefined) return fail(422, 'content is not valid Base64');
  const target = branchOfWrite(ctx, repo);
  if (isResult(target)) return target;
  const store = ctx.state.gitStore;
  const baseTree = store.tree(repo, target.tip.tree) === undefined ? undefined : target.tip.tree;
  const current = baseTree === undefined ? undefined : store.entryAt(repo, baseTree, path);
  if (current?.mode === '40000') return fail(422, `${path} is a directory`);
  const given = str(ctx, 'sha');
  if (current !== undefined && given === undefined) return missing('sha');
  if (current !== undefined && given !== current.sha) return fail(409, `${path} does not match ${given}`);
  const blob = store.put(repo, 'blob', bytes);
  const entry: PathEntry = { mode: current?.mode ?? '100644', sha: blob };
  const tree = store.editTree(repo, baseTree, [{ path, entry }]);
  const commit = commitOnBranch(ctx, repo, target, tree, message);
  if (isResult(commit)) return commit;
  return {
    status: current === undefined ? 201 : 200,
    body: JSON.stringify({
      content: entryObject(ctx, repo, path, target.branch, entry, bytes.length),
      commit: gitCommitObject(ctx, repo, commit),
    }),
  };
}

/** DELETE …/contents/{path}: the file removed in one commit; `sha` required and current (409 when stale). */
function deleteContent(ctx: RestContext, repo: Repo): RestResult {
  const path = ctx.params[2]!.replace(/^\/+|\/+$/g, '');
  const message = str(ctx, 'message');
  const given = str(ctx, 'sha');
  if (message === undefined) return missing('message');
  if (message.includes('\0')) return nulIn('message');
  if (given === undefined) return missing('sha');
  if (path === '' || pathProblem(path, 'path') !== undefined) return notFound();
  const target = branchOfWrite(ctx, repo);
  if (isResult(target)) return target;
  const store = ctx.state.gitStore;
  const current = store.entryAt(repo, target.tip.tree, path);
  if (current === undefined || current.mode === '40000') return notFound();
  if (given !== current.sha) return fail(409, `${path} does not match ${given}`);
  const tree = store.editTree(repo, target.tip.tree, [{ path, entry: null }]);
  const commit = commitOnBranch(ctx, repo, target, tree, message);
  if (isResult(commit)) return commit;
  return { status: 200, body: JSON.stringify({ content: null, commit: gitCommitObject(ctx, repo, commit) }) };
}

/** POST …/git/blobs `{content, encoding: utf-8 | base64}`: 201 `{url, sha}`. */
function createBlob(ctx: RestContext, repo: Repo): RestResult {
  const content = str(ctx, 'content');
  if (content === undefined) return missing('content');
  const encoding = str(ctx, 'encoding') ?? 'utf-8';
  let bytes: Buffer | undefined;
  if (encoding === 'utf-8' || encoding === 'utf8') bytes = Buffer.from(content, 'utf8');
  else if (encoding === 'base64') bytes = decodeBase64(content);
  else return fail(422, `encoding must be utf-8 or base64, got ${encoding}`);
  if (bytes === undefined) return fail(422, 'content is not valid Base64');
  if (bytes.length > GIT_BOUNDS.maxBlobBytes)
    return fail(422, `a blob is at most ${GIT_BOUNDS.maxBlobBytes} bytes (docs/limits.md)`);
  const sha = ctx.state.gitStore.put(repo, 'blob', bytes);
  const url = `${ctx.state.apiUrl}/repos/${repo.fullName}/git/blobs/${sha}`;
  return { status: 201, body: JSON.stringify({ url, sha }), location: url };
}

/** GET …/git/blobs/{sha}: base64 content, or 404. */
function getBlob(ctx: RestContext, repo: Repo): RestResult {
  const sha = ctx.params[2]!;
  const blob = ctx.state.gitStore.get(repo, sha);
  if (blob?.type !== 'blob') return notFound();
  if (blob.body === undefined)
    return fail(403, 'This API returns blobs up to 100 MB in size (docs/limits.md)', {
      errors: [{ resource: 'Blob', field: 'data', code: 'too_large' }],
    });
  if (ctx.format === 'raw') return rawAnswer(blob.body);
  return {
    status: 200,
    body: JSON.stringify({
      sha,
      node_id: `B_${Buffer.from(`${repo.id}:${sha}`).toString('base64url')}`,
      size: blob.size,
      url: `${ctx.state.apiUrl}/repos/${repo.fullName}/git/blobs/${sha}`,
      content: encodeBase64(blob.body),
      encoding: 'base64',
    }),
  };
}

/** The API's spelling of a tree entry's mode (`040000` for a directory, git's `40000`). */
const apiMode = (mode: GitTreeMode) => (mode === '40000' ? '040000' : mode);

/**
 * POST …/git/trees `{tree: [{path, mode, type, sha | content}], base_tree?}`: 201, the new tree.
 * `sha: null` removes the path (GitHub: an error when it is not there); a nested path edits the
 * sub-trees on its way.
 */
function createTree(ctx: RestContext, repo: Repo): RestResult {
  const raw = bodyField(ctx, 'tree');
  if (!Array.isArray(raw)) return missing('tree');
  if (raw.length > GIT_BOUNDS.maxTreeEntries)
    return fail(422, `tree holds at most ${GIT_BOUNDS.maxTreeEntries} entries (docs/limits.md)`);
  const base = bodyField(ctx, 'base_tree');
  if (base !== undefined && base !== null && typeof base !== 'string')
    return fail(422, 'Invalid request.\n\n"base_tree" is not a string.');
  const store = ctx.state.gitStore;
  const edits: TreeEdit[] = [];
  for (const item of raw as unknown[]) {
    const e = (item ?? {}) as {
      path?: unknown;
      mode?: unknown;
      type?: unknown;
      sha?: unknown;
      content?: unknown;
    };
    if (typeof e.path !== 'string') return missing('path');
    const problem = pathProblem(e.path, 'tree.path');
    if (problem !== undefined) return fail(422, problem);
    const mode = e.mode === '040000' ? '40000' : (e.mode as GitTreeMode);
    if (typeof e.mode !== 'string' || !GIT_TREE_MODES.includes(mode) || e.mode === '40000')
      return fail(
        422,
        `Invalid request.\n\n"tree.mode" must be one of 100644, 100755, 040000, 160000, 120000.`,
      );
    // git's fsck refuses a `.gitmodules` that is a symbolic link (gitmodulesSymlink), as GitHub does.
    if (mode === '120000' && isDotGitmodules(e.path.slice(e.path.lastIndexOf('/') + 1)))
      return fail(422, `tree.path ${e.path.slice(0, 200)}: .gitmodules cannot be a symbolic link`);
    if (e.type !== undefined && e.type !== typeOfMode(mode))
      return fail(422, `tree.type ${String(e.type)} does not match mode ${String(e.mode)}`);
    if (e.sha !== undefined && e.content !== undefined)
      return fail(422, 'tree.sha and tree.content cannot both be given');
    if (e.sha === null) {
      edits.push({ path: e.path, entry: null });
      continue;
    }
    let sha: string;
    if (typeof e.content === 'string') {
      if (typeOfMode(mode) !== 'blob') return fail(422, 'tree.content is for blobs only');
      sha = store.put(repo, 'blob', Buffer.from(e.content, 'utf8'));
    } else if (typeof e.sha === 'string') {
      sha = e.sha;
      if (!store.hasObject(repo, { mode, sha }))
        return fail(422, `tree.sha ${sha} is not a valid ${typeOfMode(mode)}`);
    } else return missing('sha');
    edits.push({ path: e.path, entry: { mode, sha } });
  }
  const sha = store.editTree(repo, typeof base === 'string' ? base : undefined, edits);
  const body = treeObject(ctx, repo, sha, false);
  if (body === undefined) return notFound();
  return { status: 201, body: JSON.stringify(body), location: body.url as string };
}

/** GET …/git/trees/{sha}: a tree (by its SHA, a commit's or a branch's), `recursive` for every level. */
function getTree(ctx: RestContext, repo: Repo): RestResult {
  const name = ctx.params[2]!;
  const store = ctx.state.gitStore;
  const sha = store.tree(repo, name) !== undefined ? name : commitOfRef(ctx, repo, name)?.tree;
  const recursive = ctx.query.has('recursive');
  // A tree never changes: its listing (up to 7 MB, 100,000 entries) is made once and kept, so
  // clients asking for it again do not hold the event loop for as long again (docs/limits.md).
  const body =
    sha === undefined
      ? undefined
      : store.treeAnswer(repo, `${sha}:${recursive ? 'r' : ''}`, () => {
          const tree = treeObject(ctx, repo, sha, recursive);
          return tree === undefined ? undefined : JSON.stringify(tree);
        });
  if (body === undefined) return notFound();
  return { status: 200, body };
}

/**
 * A tree as `git-tree`: its entries (a blob's with its size), every level's when recursive, in
 * git's order, cut at GIT_BOUNDS' 100,000 entries or 7 MB (`truncated`). Each level is read at
 * once (one git run for what only git has).
 */
export function treeObject(
  ctx: RestContext,
  repo: Repo,
  sha: string,
  recursive: boolean,
): Record<string, unknown> | undefined {
  const store = ctx.state.gitStore;
  const top = store.tree(repo, sha);
  if (top === undefined) return undefined;
  const api = `${ctx.state.apiUrl}/repos/${repo.fullName}/git`;
  const out: Record<string, unknown>[] = [];
  let bytes = 0;
  let truncated = false;
  let level: { prefix: string; entries: typeof top }[] = [{ prefix: '', entries: top }];
  /** Each tree's entries, parsed once in this listing. */
  const parsed = new Map<string, typeof top>();
  while (level.length > 0 && !truncated) {
    const blobs = level.flatMap((l) =>
      l.entries.filter((e) => typeOfMode(e.mode) === 'blob').map((e) => e.sha),
    );
    const sizes = store.getMany(repo, [...new Set(blobs)], false);
    const next: { prefix: string; entries: typeof top }[] = [];
    const subtrees: { path: string; sha: string }[] = [];
    for (const { prefix, entries } of level) {
      for (const e of entries) {
        const type = typeOfMode(e.mode);
        const path = `${prefix}${e.name}`;
        const item: Record<string, unknown> = { path, mode: apiMode(e.mode), type, sha: e.sha };
        if (type === 'blob') item.size = sizes.get(e.sha)?.size ?? 0;
        if (type !== 'commit') item.url = `${api}/${type}s/${e.sha}`;
        bytes += JSON.stringify(item).length + 1;
        if (out.length >= GIT_BOUNDS.maxRecursiveEntries || bytes > GIT_BOUNDS.maxRecursiveBytes) {
          truncated = true;
          break;
        }
        out.push(item);
        if (recursive && type === 'tree') subtrees.push({ path, sha: e.sha });
      }
      if (truncated) break;
    }
    if (!recursive || truncated) break;
    const read = store.getMany(repo, [...new Set(subtrees.map((s) => s.sha))]);
    // The next level is made only as far as the answer can go: a root of 2,000 directories that
    // are all one tree of 60,000 files parsed it 2,000 times over (120 million entries) and ran
    // the server out of memory. Each tree is parsed once however often it appears, and the level
    // stops one tree past what the 100,000 entries could hold (the next turn marks it truncated).
    let room = GIT_BOUNDS.maxRecursiveEntries - out.length;
    for (const s of subtrees) {
      if (room < 0) break;
      let entries = parsed.get(s.sha);
      if (entries === undefined) {
        const object = read.get(s.sha);
        entries = (object?.type === 'tree' && object.body !== undefined ? parseTree(object.body) : []) ?? [];
        parsed.set(s.sha, entries);
      }
      next.push({ prefix: `${s.path}/`, entries });
      room -= entries.length;
    }
    level = next;
  }
  // git's own listing (`git ls-tree -r -t`) is depth first; GitHub's is too: sort by path segments.
  if (recursive) {
    const keyed = out.map((item) => ({ item, key: pathOrderKey(item.path as string) }));
    keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (let i = 0; i < keyed.length; i++) out[i] = keyed[i]!.item;
  }
  return { sha, url: `${api}/trees/${sha}`, tree: out, truncated };
}

/**
 * A path's place in git's recursive order (a directory before its entries, names by bytes), as a
 * string compared with `<`: its UTF-8 bytes as Latin-1 characters, each `/` as NUL (a name holds
 * neither), so a segment ends before any byte a longer name could go on with. Made once a path,
 * not at each of a sort's comparisons.
 */
export function pathOrderKey(path: string): string {
  return Buffer.from(path.replaceAll('/', '\0'), 'utf8').toString('latin1');
}

/**
 * POST …/git/commits `{message, tree, parents, author?, committer?}`: 201, the commit (the
 * committer defaults to the author, both to the caller now). No branch moves: `PATCH git/refs` does.
 */
function createCommit(ctx: RestContext, repo: Repo): RestResult {
  const message = str(ctx, 'message');
  const tree = str(ctx, 'tree');
  if (message === undefined) return missing('message');
  if (message.includes('\0')) return nulIn('message');
  if (tree === undefined) return missing('tree');
  const parentsField = bodyField(ctx, 'parents') ?? [];
  if (!Array.isArray(parentsField) || !parentsField.every((p) => typeof p === 'string'))
    return fail(422, 'Invalid request.\n\n"parents" is not an array of strings.');
  // Every answer that shows the commit lists them all: 100,000 made each read of it 26 MB.
  if (parentsField.length > GIT_BOUNDS.maxParents)
    return fail(
      422,
      `Invalid request.\n\n"parents" holds at most ${GIT_BOUNDS.maxParents} commits here (docs/limits.md).`,
    );
  if (ctx.state.gitStore.tree(repo, tree) === undefined) return fail(422, 'Tree SHA does not exist');
  for (const parent of parentsField as string[])
    if (!repo.commits.has(parent)) return fail(422, 'Parent SHA does not exist or is not a commit object');
  const at = ctx.state.time.now();
  const me = ctx.state.refs.ident(actor(ctx), at);
  const author = identOf(ctx, 'author', me);
  if (author.refusal) return author.refusal;
  const committer = identOf(ctx, 'committer', me);
  if (committer.refusal) return committer.refusal;
  const commit = ctx.state.refs.makeCommit(repo, {
    message,
    at,
    parents: parentsField as string[],
    author: author.ident ?? me,
    committer: committer.ident ?? author.ident ?? me,
    tree,
  });
  const body = gitCommitObject(ctx, repo, commit);
  return { status: 201, body: JSON.stringify(body), location: body.url as string };
}

/** A commit as the Git data API gives it (`git-commit`). */
function gitCommitObject(ctx: RestContext, repo: Repo, commit: Commit): Record<string, unknown> {
  const api = `${ctx.state.apiUrl}/repos/${repo.fullName}/git`;
  const web = `${ctx.state.webUrl}/${repo.fullName}/commit`;
  const person = (ident: GitIdent) => ({ name: ident.name, email: ident.email, date: gitDate(ident) });
  return {
    sha: commit.sha,
    node_id: commit.nodeId,
    url: `${api}/commits/${commit.sha}`,
    html_url: `${web}/${commit.sha}`,
    author: person(commit.author),
    committer: person(commit.committer),
    tree: { sha: commit.tree, url: `${api}/trees/${commit.tree}` },
    message: commit.message,
    parents: commit.parents.map((sha) => ({ sha, url: `${api}/commits/${sha}`, html_url: `${web}/${sha}` })),
    verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
  };
}

/**
 * GET …/git/matching-refs/{ref}: every branch and tag whose full name (`refs/heads/…`,
 * `refs/tags/…`) starts with `refs/REF` (`heads/feat` lists `feat`, `feature-a`, …), by name.
 */
function matchingRefs(ctx: RestContext, repo: Repo): RestResult {
  const prefix = `refs/${ctx.params[2] ?? ''}`;
  const byName = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  const branches = [...repo.branches.entries()]
    .filter(([branch]) => validRefName(`refs/heads/${branch}`) && `refs/heads/${branch}`.startsWith(prefix))
    .sort(byName)
    .map(([branch, sha]) => refObject(ctx.state, repo, branch, sha));
  const tags = [...repo.tags.entries()]
    .filter(([tag]) => `refs/tags/${tag}`.startsWith(prefix))
    .sort(byName)
    .map(([tag, sha]) => tagRefObject(ctx.state, repo, tag, sha));
  const found = [...branches, ...tags];
  return { status: 200, body: JSON.stringify(found) };
}
