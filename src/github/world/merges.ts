/**
 * The commits a pull request's merge makes, by method, as GitHub makes them ("About merge
 * methods on GitHub"):
 *
 * - `merge`: one merge commit, the base's tip and the head as parents (a fast-forward is still a
 *   merge commit on GitHub), titled `Merge pull request #N from OWNER/BRANCH`, the pull request's
 *   title as its body;
 * - `squash`: one commit with one parent, the base's tip, holding every change of the pull request,
 *   titled `TITLE (#N)` (a single commit's own title and body, else the pull request's title and
 *   the list of its commits' messages);
 * - `rebase`: each of the pull request's commits made again on the base's tip, one parent each,
 *   its author and message kept, committed by GitHub: its own change (from its parent to it)
 *   applied onto the commit made before, as `git rebase` replays it (refs.ts `pickTree`).
 *
 * `title`/`message` replace the default title and body (REST `commit_title`/`commit_message`,
 * GraphQL `commitHeadline`/`commitBody`). Trees are merged as git merges them (refs.ts
 * `mergeTrees`); a conflict makes no commit (undefined: GitHub refuses the merge).
 */
import { GITHUB_COMMITTER } from './git-objects.ts';
import type { PullRequest, User } from './objects.ts';
import type { Refs } from './refs.ts';

export type MergeMethod = 'merge' | 'squash' | 'rebase';

export interface MergeChoice {
  method: MergeMethod;
  title: string | undefined;
  message: string | undefined;
}

/** What a merge made: the base branch's new tip, and the commit GitHub reports (`merge_commit_sha`). */
export interface MadeMerge {
  tip: string;
  commit: string;
}

export function makeMerge(
  refs: Refs,
  pull: PullRequest,
  choice: MergeChoice,
  by: User,
  at: number,
): MadeMerge | undefined {
  const repo = pull.issue.repo;
  const baseTip = repo.branches.get(pull.base);
  if (baseTip === undefined) return undefined;
  const merger = refs.ident(by, at);
  const github = { ...GITHUB_COMMITTER, seconds: merger.seconds };
  const number = pull.issue.number;
  const text = (title: string, body: string) => {
    const message = choice.message ?? body;
    return message === '' ? (choice.title ?? title) : `${choice.title ?? title}\n\n${message}`;
  };
  if (choice.method === 'rebase') {
    let tip = baseTip;
    let tipTree = repo.commits.get(baseTip)?.tree;
    for (const sha of pull.commits) {
      const original = repo.commits.get(sha);
      if (original === undefined || tipTree === undefined) return undefined;
      // The commit's own change (from its parent) applied onto the tip, as git cherry-picks it.
      const tree = refs.pickTree(repo, tipTree, sha);
      if (tree === undefined) return undefined;
      tip = refs.makeCommit(repo, {
        message: original.message,
        at,
        parents: [tip],
        author: original.author,
        committer: github,
        tree,
      }).sha;
      tipTree = tree;
    }
    return { tip, commit: tip };
  }
  const tree = refs.mergeTrees(repo, baseTip, pull.headSha);
  if (tree === undefined) return undefined;
  if (choice.method === 'squash') {
    // GitHub's default: a single commit's own title and body, else the pull request's title and
    // the list of its commits' messages; `(#N)` after the title either way.
    const messages = pull.commits.map((sha) => repo.commits.get(sha)?.message ?? '');
    const single = messages.length === 1 ? messages[0]!.split('\n') : undefined;
    const title = single === undefined ? pull.issue.title : single[0]!;
    const body =
      single === undefined ? messages.map((m) => `* ${m}`).join('\n\n') : single.slice(2).join('\n');
    const commit = refs.makeCommit(repo, {
      message: text(`${title} (#${number})`, body),
      at,
      parents: [baseTip],
      author: refs.ident(pull.issue.user, at),
      committer: github,
      tree,
    });
    return { tip: commit.sha, commit: commit.sha };
  }
  const commit = refs.makeCommit(repo, {
    message: text(`Merge pull request #${number} from ${repo.owner.login}/${pull.head}`, pull.issue.title),
    at,
    parents: baseTip === pull.headSha ? [pull.headSha] : [baseTip, pull.headSha],
    author: merger,
    committer: github,
    tree,
  });
  return { tip: commit.sha, commit: commit.sha };
}
