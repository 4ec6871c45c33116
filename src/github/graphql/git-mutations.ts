/**
 * The GraphQL side of refs and commits, what a bot that writes through GraphQL sends: createRef,
 * updateRef and deleteRef (a branch made, moved, deleted) and createCommitOnBranch (files added
 * and deleted as one commit on a branch: the GraphQL counterpart of `PUT …/contents`), with
 * GitHub's input and payload types. Each does what the REST route does (rest-git.ts,
 * rest-contents.ts): the same refs, the same git objects, the same push (open pull requests on
 * the branch take the commit, webhooks are told). docs/github-emulator.md, "GraphQL".
 */

import { BODY_LIMITS } from '../../base/limits.ts';
import type { Repo } from '../state.ts';
import { decodeBase64, EditWork, pathProblem, type TreeEdit } from '../world/git-store.ts';
import { CommitNode, RefNode } from './commits.ts';
import {
  change,
  type GqlContext,
  type MutationInput as Input,
  notFound,
  repoById,
  unprocessable,
} from './context.ts';

/** A Ref's node id (RefNode's: base64 of `ref:REPOSITORY_ID:BRANCH`): its repository and branch. */
function refById(ctx: GqlContext, id: string): { repo: Repo; branch: string } {
  const match = /^ref:(\d+):(.+)$/s.exec(Buffer.from(id, 'base64').toString('utf8'));
  const repo =
    match === null ? undefined : [...ctx.state.repos.values()].find((r) => r.id === Number(match[1]));
  const branch = match?.[2];
  if (repo === undefined || branch === undefined || !repo.branches.has(branch))
    throw notFound(`Could not resolve to a node with the global id of '${id}'.`);
  ctx.touched = repo.fullName;
  ctx.state.touched?.branches.push(branch);
  return { repo, branch };
}

/** A commit's file changes as tree edits, each path and content checked as the contents API checks them. */
function fileEdits(
  additions: readonly { path: string; contents: string }[],
  deletions: readonly { path: string }[],
  put: (bytes: Buffer) => string,
): TreeEdit[] {
  const checked = (path: string) => {
    const problem = pathProblem(path, 'path');
    if (problem !== undefined) throw unprocessable(`${problem}: ${path.slice(0, 200)}`);
    return path;
  };
  const edits: TreeEdit[] = [];
  for (const { path } of deletions) edits.push({ path: checked(path), entry: null });
  for (const { path, contents } of additions) {
    const bytes = decodeBase64(contents);
    if (bytes === undefined) throw unprocessable(`The contents of ${checked(path)} are not valid Base64`);
    edits.push({ path: checked(path), entry: { mode: '100644', sha: put(bytes) } });
  }
  return edits;
}

export const gitMutations = {
  createRef({ input }: Input<{ repositoryId: string; name: string; oid: string }>, ctx: GqlContext) {
    const repo = repoById(ctx, input.repositoryId);
    const branch = change(() => ctx.state.createBranch(repo, input.name, input.oid, ctx.viewer));
    ctx.state.touched?.branches.push(branch);
    return { clientMutationId: input.clientMutationId ?? null, ref: new RefNode(ctx.state, repo, branch) };
  },

  updateRef({ input }: Input<{ refId: string; oid: string; force?: boolean | null }>, ctx: GqlContext) {
    const { repo, branch } = refById(ctx, input.refId);
    change(() => {
      if (ctx.state.refs.checkRefUpdate(repo, branch, input.oid, input.force === true))
        ctx.state.branchPushed(repo, branch, input.oid, ctx.state.time.now(), ctx.viewer);
    });
    return { clientMutationId: input.clientMutationId ?? null, ref: new RefNode(ctx.state, repo, branch) };
  },

  deleteRef({ input }: Input<{ refId: string }>, ctx: GqlContext) {
    const { repo, branch } = refById(ctx, input.refId);
    change(() => ctx.state.deleteBranch(repo, branch, ctx.viewer));
    return { clientMutationId: input.clientMutationId ?? null };
  },

  createCommitOnBranch(
    {
      input,
    }: Input<{
      branch: { id?: string | null; repositoryNameWithOwner?: string | null; branchName?: string | null };
      expectedHeadOid: string;
      message: { headline: string; body?: string | null };
      fileChanges?: {
        additions?: { path: string; contents: string }[] | null;
        deletions?: { path: string }[] | null;
      } | null;
    }>,
    ctx: GqlContext,
  ) {
    let repo: Repo;
    let branch: string;
    if (input.branch.id) ({ repo, branch } = refById(ctx, input.branch.id));
    else {
      const name = input.branch.repositoryNameWithOwner ?? '';
      const found = ctx.state.repos.get(name.toLowerCase());
      if (found === undefined) throw notFound(`Could not resolve to a Repository with the name '${name}'.`);
      repo = found;
      ctx.touched = repo.fullName;
      branch = (input.branch.branchName ?? '').replace(/^refs\/heads\//, '');
      ctx.state.touched?.branches.push(branch);
    }
    const tip = repo.branches.get(branch);
    if (tip === undefined) throw notFound(`A ref named "refs/heads/${branch}" does not exist.`);
    // GitHub's words when the branch moved since the client read it (as clients report them).
    if (tip !== input.expectedHeadOid)
      throw unprocessable(
        `Expected branch to point to "${input.expectedHeadOid}" but it did not. Pull and try again.`,
      );
    const head = repo.commits.get(tip)!;
    const store = ctx.state.gitStore;
    const additions = input.fileChanges?.additions ?? [];
    // One request's commits take at most a request body of contents, however often aliases repeat
    // a variable: 100 aliases of one 3.5 MB file held the server 4.5 s (docs/limits.md).
    ctx.gitWork ??= { edit: new EditWork(), contentChars: 0 };
    const work = ctx.gitWork;
    for (const { contents } of additions) work.contentChars += contents.length;
    if (work.contentChars > BODY_LIMITS.github)
      throw unprocessable(
        `the file contents of one request's commits are at most ${BODY_LIMITS.github} characters of Base64 (docs/limits.md)`,
      );
    const edits = fileEdits(additions, input.fileChanges?.deletions ?? [], (bytes) =>
      change(() => store.put(repo, 'blob', bytes)),
    );
    const base = head.tree !== undefined && store.tree(repo, head.tree) !== undefined ? head.tree : undefined;
    const tree = change(() => store.editTree(repo, base, edits, work.edit));
    const at = ctx.state.time.now();
    const me = ctx.state.refs.ident(ctx.viewer, at);
    const message = input.message.body
      ? `${input.message.headline}\n\n${input.message.body}`
      : input.message.headline;
    // git's fsck refuses a commit whose message holds a NUL (nulInCommit), as GitHub does.
    if (message.includes('\0')) throw unprocessable('The commit message contains a NUL character');
    const commit = change(() =>
      ctx.state.refs.makeCommit(repo, { message, at, parents: [tip], author: me, committer: me, tree }),
    );
    change(() => ctx.state.branchPushed(repo, branch, commit.sha, at, ctx.viewer));
    return {
      clientMutationId: input.clientMutationId ?? null,
      commit: new CommitNode(ctx.state, repo, commit),
      ref: new RefNode(ctx.state, repo, branch),
    };
  },
};
