/**
 * Which session something belongs to, for a control plane fleetbench has no adapter for
 * (docs/command-target.md, "Attribution"): it names its branches, its agents' prompts and its
 * working directories itself, so fleetbench reads them. A session is one piece of work, named by
 * its id (`s-0001`), its issue (`#12`, `/issues/12`, `issue-12`), its title, or a task id its
 * control plane answered when the work was created. A text that names exactly one session is
 * that session's; one that names several, or none, is nobody's (the control plane's own cost),
 * never a guess.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { SessionState } from '../../contract/types.ts';
import type { GitHubState } from '../../github/state.ts';

export interface CommandSession {
  id: string;
  repo: string;
  /** The issue the work is (issue work), if any. */
  issue?: number | undefined;
  title: string;
  /** Other names the control plane gave it (a task id from its HTTP answer). */
  aliases: string[];
  state: SessionState;
  pr?: { number: number; headSha: string };
}

/** Titles shorter than this are too common to name a session. */
const MIN_TITLE = 12;
const MAX_TEXT = 64 * 1024;

/**
 * Issue numbers a text names: `#12`, `issue 12`, `issue-12`, `issues/12` always; with `bare`
 * (a branch name) also a number standing alone (`fix/12-x`), never one inside a word or a hash.
 * A prompt's bare numbers (`--max-turns 5`) name nothing.
 */
function numbersIn(text: string, bare: boolean): number[] {
  const out: number[] = [];
  for (const match of text.matchAll(/(?:^|[^A-Za-z0-9&])#(\d{1,7})(?=$|[^A-Za-z0-9])/g))
    out.push(Number(match[1]));
  for (const match of text.matchAll(/issues?[-_ /]?(\d{1,7})(?=$|[^0-9])/gi)) out.push(Number(match[1]));
  if (bare)
    for (const match of text.matchAll(/(?:^|[^A-Za-z0-9])(\d{1,7})(?=$|[^A-Za-z0-9])/g))
      out.push(Number(match[1]));
  return [...new Set(out)];
}

export class SessionBook {
  readonly sessions = new Map<string, CommandSession>();
  /** Branches known to be a session's (an agent of that session works on it): repo → branch → session. */
  private readonly branches = new Map<string, Map<string, string>>();

  constructor(private readonly state: GitHubState) {}

  add(session: CommandSession): void {
    this.sessions.set(session.id, session);
  }

  /**
   * The one session `text` names (an agent's command line, a branch, a pull request's title and
   * body), within `repo` when known; undefined when none or several.
   */
  fromText(raw: string, repo?: string, bareNumbers = false): string | undefined {
    const text = raw.slice(0, MAX_TEXT);
    const found = new Set<string>();
    // A GitHub URL names its repository and number exactly.
    for (const match of text.matchAll(
      /github\.com\/([\w.-]+\/[\w.-]+?)(?:\.git)?\/(issues|pull)\/(\d{1,7})/g,
    )) {
      const id = this.byNumber(match[1] as string, Number(match[3]), match[2] === 'pull');
      if (id) found.add(id);
    }
    for (const session of this.sessions.values()) {
      if (repo !== undefined && session.repo !== repo) continue;
      if (text.includes(session.id)) found.add(session.id);
      else if (session.title.length >= MIN_TITLE && text.includes(session.title)) found.add(session.id);
      else if (session.aliases.some((alias) => alias.length >= 4 && text.includes(alias)))
        found.add(session.id);
    }
    if (found.size === 0)
      for (const number of numbersIn(text, bareNumbers)) {
        const id = repo === undefined ? this.byNumberAnywhere(number) : this.byNumber(repo, number, true);
        if (id) found.add(id);
      }
    return found.size === 1 ? [...found][0] : undefined;
  }

  /** The session of issue or pull request `number` in `repo` (a PR through its linked issue or head). */
  private byNumber(repo: string, number: number, orPull: boolean): string | undefined {
    for (const session of this.sessions.values())
      if (session.repo === repo && (session.issue === number || session.pr?.number === number))
        return session.id;
    if (!orPull) return undefined;
    const pull = this.state.repos.get(repo)?.pulls.get(number);
    if (pull?.linkedIssue != null) return this.byNumber(repo, pull.linkedIssue, false);
    return undefined;
  }

  private byNumberAnywhere(number: number): string | undefined {
    const ids = [...this.sessions.values()].filter((s) => s.issue === number).map((s) => s.id);
    return ids.length === 1 ? ids[0] : undefined;
  }

  /** `branch` is `session`'s: an agent attributed to the session works on it. */
  claimBranch(repo: string, branch: string, session: string): void {
    let branches = this.branches.get(repo);
    if (!branches) {
      branches = new Map();
      this.branches.set(repo, branches);
    }
    if (!branches.has(branch)) branches.set(branch, session);
  }

  /**
   * The session a branch belongs to: claimed by a session's agent, else its name, else the pull
   * requests opened from it (their linked issue, title and body).
   */
  fromBranch(repo: string, branch: string): string | undefined {
    const claimed = this.branches.get(repo)?.get(branch);
    if (claimed) return claimed;
    const byName = this.fromText(branch, repo, true);
    if (byName) return byName;
    const pulls = this.state.repos.get(repo)?.pulls;
    if (!pulls) return undefined;
    for (const pull of pulls.values()) {
      if (pull.head !== branch) continue;
      if (pull.linkedIssue != null) {
        const linked = this.byNumber(repo, pull.linkedIssue, false);
        if (linked) return linked;
      }
      const named = this.fromText(`${pull.issue.title}\n${pull.issue.body}`, repo);
      if (named) return named;
    }
    return undefined;
  }
}

/**
 * The branch and GitHub repository of a git checkout at `cwd` (a worktree's `.git` file points
 * at its own HEAD), read from its files: no git process per look.
 */
export function checkoutOf(cwd: string): { branch?: string; repo?: string } {
  let dir = cwd;
  for (let depth = 0; depth < 8; depth++) {
    const dotGit = join(dir, '.git');
    if (existsSync(dotGit)) return readCheckout(dotGit);
    const parent = join(dir, '..');
    if (parent === dir) break;
    dir = parent;
  }
  return {};
}

function readCheckout(dotGit: string): { branch?: string; repo?: string } {
  try {
    let gitDir = dotGit;
    if (statSync(dotGit).isFile()) {
      const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
      if (!pointer) return {};
      gitDir = isAbsolute(pointer) ? pointer : join(dotGit, '..', pointer);
    }
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8');
    const branch = /^ref: refs\/heads\/(.+)$/m.exec(head)?.[1]?.trim();
    // A worktree's config is its main repository's (`commondir`).
    const common = existsSync(join(gitDir, 'commondir'))
      ? join(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim())
      : gitDir;
    const config = existsSync(join(common, 'config')) ? readFileSync(join(common, 'config'), 'utf8') : '';
    const repo = /url\s*=\s*(?:https:\/\/|git@)github\.com[/:]([\w.-]+\/[\w.-]+?)(?:\.git)?\s*$/m.exec(
      config,
    )?.[1];
    return { ...(branch ? { branch } : {}), ...(repo ? { repo } : {}) };
  } catch {
    return {};
  }
}
