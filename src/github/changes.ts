/**
 * What a pull request changes, modelled from its commits: each commit changed one file (10
 * lines added, 2 removed, as the PR's `additions`/`deletions`/`changed_files` say), so the REST
 * files list, GraphQL `files`, and the diff and patch media types (`gh pr diff`) all describe the
 * same change and move when a commit is pushed. The text is synthetic; its size grows with the
 * commits, which is what a client's cost depends on.
 */
import { hash } from 'node:crypto';
import type { GitHubState, PullRequest } from './state.ts';

export const ADDED_PER_COMMIT = 10;
export const REMOVED_PER_COMMIT = 2;

export interface ChangedFile {
  path: string;
  /** The commit that changed it. */
  commitSha: string;
  /** Blob SHA of the file after the change. */
  blobSha: string;
  additions: number;
  deletions: number;
  /** The unified-diff hunk (what REST `patch` holds). */
  hunk: string;
}

function slug(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '-');
}

/** The files a pull request changes, in commit order. */
export function changedFiles(pull: PullRequest): ChangedFile[] {
  return filesOfCommits(pull.commits, pull.head, `pull request #${pull.issue.number}`);
}

/**
 * The files a run of commits on a branch changes (a pull request's, or what `compare` lists):
 * the commit at place i changed `src/<branch>/change-<i+1>.ts`.
 */
export function filesOfCommits(shas: readonly string[], branch: string, where: string): ChangedFile[] {
  return shas.map((sha, i) => {
    const path = `src/${slug(branch)}/change-${i + 1}.ts`;
    const added: string[] = [];
    for (let line = 1; line <= ADDED_PER_COMMIT; line++)
      added.push(`+// ${path}: line ${line} of change ${i + 1} in ${where}`);
    const hunk = [
      `@@ -1,${REMOVED_PER_COMMIT} +1,${ADDED_PER_COMMIT} @@`,
      ...Array.from({ length: REMOVED_PER_COMMIT }, (_, k) => `-// ${path}: old line ${k + 1}`),
      ...added,
    ].join('\n');
    return {
      path,
      commitSha: sha,
      blobSha: hash('sha1', `${sha}:${path}`, 'hex'),
      additions: ADDED_PER_COMMIT,
      deletions: REMOVED_PER_COMMIT,
      hunk,
    };
  });
}

function fileDiff(pull: PullRequest, file: ChangedFile): string {
  const before = hash('sha1', `${pull.baseSha}:${file.path}`, 'hex');
  return [
    `diff --git a/${file.path} b/${file.path}`,
    `index ${before.slice(0, 7)}..${file.blobSha.slice(0, 7)} 100644`,
    `--- a/${file.path}`,
    `+++ b/${file.path}`,
    file.hunk,
    '',
  ].join('\n');
}

/** The pull request as `application/vnd.github.diff`: one unified diff of every file. */
export function pullDiff(pull: PullRequest): string {
  return changedFiles(pull)
    .map((file) => fileDiff(pull, file))
    .join('');
}

/** The pull request as `application/vnd.github.patch`: one mail-formatted patch per commit. */
export function pullPatch(state: GitHubState, pull: PullRequest): string {
  const files = changedFiles(pull);
  const repo = pull.issue.repo;
  const author = pull.issue.user.login;
  return files
    .map((file, i) => {
      const commit = repo.commits.get(file.commitSha);
      const date = new Date(
        state.time.clock.toWallMs(commit?.createdAt ?? pull.issue.createdAt),
      ).toUTCString();
      const changed = file.additions + file.deletions;
      return [
        `From ${file.commitSha} Mon Sep 17 00:00:00 2001`,
        `From: ${author} <${author}@users.noreply.github.com>`,
        `Date: ${date.replace('GMT', '+0000')}`,
        `Subject: [PATCH ${i + 1}/${files.length}] ${commit?.message ?? `Update ${pull.head}`}`,
        '',
        '---',
        ` ${file.path} | ${changed} ${'+'.repeat(file.additions)}${'-'.repeat(file.deletions)}`,
        ` 1 file changed, ${file.additions} insertions(+), ${file.deletions} deletions(-)`,
        '',
        fileDiff(pull, file),
      ].join('\n');
    })
    .join('\n');
}
