/**
 * GitHub's closing keywords: a pull request into the default branch whose body says `Closes #N`
 * (or close, closed, fix, fixes, fixed, resolve, resolves, resolved; any case; `OWNER/REPO#N`
 * for the same repository too) is linked to issue N, and merging it closes the issue ("Linking
 * a pull request to an issue using a keyword"). The emulator links one issue per pull request:
 * the first its body names.
 */
import type { Issue, Repo } from './objects.ts';

const CLOSING = /\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:([\w.-]+\/[\w.-]+))?#(\d{1,9})\b/gi;

/** The first issue of this repository the body names after a closing keyword, if any. */
export function closingIssue(repo: Repo, body: string): Issue | undefined {
  for (const match of body.matchAll(CLOSING)) {
    if (match[1] !== undefined && match[1].toLowerCase() !== repo.fullName.toLowerCase()) continue;
    const issue = repo.issues.get(Number(match[2]));
    if (issue !== undefined && issue.pull === undefined) return issue;
  }
  return undefined;
}
