/**
 * Attribution by content: which session a request was for, read from what it asked about, for
 * clients that cannot send fleetbench's attribution headers or use a token per session (the
 * `gh pr …` and `gh issue …` subcommands an orchestrator shells out to). A session is registered
 * with its repository, branch and issue (admin API `register-session`); a request is then the
 * session's when everything it names (a pull request by number, a branch, an issue, a head
 * commit) belongs to that one session. A request that names several sessions' things (a batch
 * query of 25 pull requests, a list of every open PR) or none stays unattributed: it is shared
 * cost, and the analysis shows it as such rather than guessing.
 *
 * It also carries the poll cycle a registered client is in (`set-cycle`), per repository, so
 * the calls of an orchestrator whose loop cannot tag its own requests still get a cycle id.
 * Headers and per-session tokens win over all of this: it only fills what they leave empty.
 */
import type { ApiSource } from '../trace/schema.ts';
import type { GitHubState } from './state.ts';
import type { Touched } from './touched.ts';

interface RepoIndex {
  branches: Map<string, string>;
  issues: Map<number, string>;
  /** The cycle under way for this repository's sessions, if the client says so. */
  cycle?: number;
}

export interface ContentAttributionResult {
  session?: string;
  cycle?: number;
  source?: ApiSource;
}

export class ContentAttribution {
  private readonly repos = new Map<string, RepoIndex>();
  /** Source of calls inside a cycle and outside any (e.g. lifecycle and cli). */
  sources: { inCycle: ApiSource; outside: ApiSource } | undefined;
  /**
   * The session a branch nobody registered belongs to, when the client names its branches itself
   * (a control plane of the user's, docs/command-target.md): asked once per unknown branch, and
   * an answer is registered.
   */
  inferBranch: ((repo: string, branch: string) => string | undefined) | undefined;

  constructor(private readonly state: GitHubState) {
    this.inferBranch = undefined;
  }

  get size(): number {
    return this.repos.size;
  }

  private index(repo: string): RepoIndex {
    let index = this.repos.get(repo);
    if (!index) {
      index = { branches: new Map(), issues: new Map() };
      this.repos.set(repo, index);
    }
    return index;
  }

  register(input: { session: string; repo: string; branch?: string; issue?: number }): void {
    const index = this.index(input.repo);
    if (input.branch) index.branches.set(input.branch, input.session);
    if (input.issue !== undefined) index.issues.set(input.issue, input.session);
  }

  /** The poll cycle now under way for `repo` (undefined: between cycles). */
  setCycle(repo: string, cycle: number | undefined): void {
    this.index(repo).cycle = cycle;
  }

  private inferred(repo: string, index: RepoIndex, branch: string): string | undefined {
    const session = this.inferBranch?.(repo, branch);
    if (session !== undefined) index.branches.set(branch, session);
    return session;
  }

  /** The one session everything in `touched` belongs to, and the repository's cycle. */
  resolve(touched: Touched): ContentAttributionResult {
    const repo = touched.repo;
    if (repo === undefined) return {};
    const index = this.repos.get(repo);
    if (index === undefined) return {};
    const out: ContentAttributionResult = {};
    if (index.cycle !== undefined) out.cycle = index.cycle;
    if (this.sources) out.source = index.cycle !== undefined ? this.sources.inCycle : this.sources.outside;
    let session: string | undefined;
    let ambiguous = false;
    const claim = (owner: string | undefined) => {
      if (owner === undefined) {
        ambiguous = true;
        return;
      }
      if (session === undefined) session = owner;
      else if (session !== owner) ambiguous = true;
    };
    const repoState = this.state.repos.get(repo);
    const branchOwner = (branch: string) => index.branches.get(branch) ?? this.inferred(repo, index, branch);
    for (const branch of touched.branches) claim(branchOwner(branch));
    for (const number of touched.pulls) {
      const head = repoState?.pulls.get(number)?.head;
      claim(head === undefined ? undefined : branchOwner(head));
    }
    for (const number of touched.issues) {
      const issue = repoState?.issues.get(number);
      if (issue?.pull) claim(branchOwner(issue.pull.head));
      else claim(index.issues.get(number));
    }
    for (const sha of touched.shas) {
      let owner: string | undefined;
      if (repoState)
        for (const pull of repoState.pulls.values())
          if (pull.headSha === sha || pull.head === sha) {
            owner = branchOwner(pull.head);
            break;
          }
      claim(owner);
    }
    if (session !== undefined && !ambiguous) out.session = session;
    return out;
  }
}
