/**
 * Issue and pull request search, one implementation for REST `GET /search/issues` and GraphQL
 * `search(type: ISSUE)`: GitHub's query syntax (keywords and `qualifier:value`, `-` to negate,
 * quoted values), the qualifiers control planes and `gh` send, GitHub's query bounds (256
 * characters of keywords, five AND/OR/NOT), and the first 1,000 results reachable.
 *
 * Qualifiers: `repo:`, `user:`/`org:`/`owner:` (negated: excluded), `is:`/`type:` (`pr`, `issue`, `open`, `closed`,
 * `merged`, `unmerged`, `draft`), `state:`, `draft:`, `label:` (comma-separated: any of them),
 * `no:label|assignee`, `author:`, `assignee:`, `mentions:`, `commenter:`, `involves:`,
 * `reviewed-by:`, `review-requested:` (no review requests are modelled: matches nothing),
 * `review:none|required|approved|changes_requested`, `head:`, `base:`, `linked:pr|issue`,
 * `created:`/`updated:`/`closed:`/`merged:` (dates and ranges), `in:title|body|comments`,
 * `archived:`, `sort:field-direction`; `@me` names the viewer. An unknown qualifier is a keyword,
 * as on GitHub. Keywords match words of the title, body and comments, case-insensitively.
 */
import { type GitHubState, type Issue, type PullRequest, type Repo, sortIssues, type User } from './state.ts';

/** GitHub: "Are longer than 256 characters (not including operators or qualifiers)." */
export const MAX_KEYWORD_CHARS = 256;
/** GitHub: "Have more than five AND, OR, or NOT operators." */
export const MAX_OPERATORS = 5;
/**
 * A whole query, qualifiers included, is at most this long: fleetbench's bound (GitHub documents
 * none beyond the 256 characters of keywords), far above what a client sends (a hundred `repo:`
 * qualifiers), so that reading one query stays a matter of milliseconds.
 */
export const MAX_QUERY_CHARS = 4_096;
/** GitHub: "provides up to 1,000 results for each search". */
export const MAX_RESULTS = 1_000;

/**
 * The search work one request may do, in checks: every issue looked at, times the qualifiers
 * tested on it, plus the text read to match keywords and mentions (one check per
 * TEXT_CHARS_PER_CHECK characters of a title, body or comment examined). A deterministic
 * stand-in for GitHub's search time limit ("we limit how long any individual query can run …
 * search returns all matches that were found prior to the timeout"). Without it one query of
 * thousands of qualifiers, thousands of aliased GraphQL searches for a few points, or one
 * keyword search over an issue holding twenty 5 MB comments, kept the server busy for seconds
 * to a minute per request. Five million checks (at most 80 million characters read) take well
 * under a second here; a control plane's search over 1,500 issues with six qualifiers takes
 * 10,500.
 */
export const MAX_SEARCH_CHECKS = 5_000_000;
/** Characters of text a keyword or mention test reads for one check: the search's cost is the text it reads. */
export const TEXT_CHARS_PER_CHECK = 16;
/**
 * Reading a query costs checks too, per character (about what parsing a character costs against
 * checking an issue): a GraphQL request of a thousand aliased searches whose queries match no
 * repository still spends its budget.
 */
export const CHECKS_PER_QUERY_CHAR = 10;

/** What is left of a request's search work (GraphQL searches of one request share it). */
export interface SearchBudget {
  /** Checks left; below zero once a test found it short (the search stops there). */
  left: number;
}

export interface SearchResult {
  issues: Issue[];
  /** False when the budget ran out first: `issues` is what was found until then. */
  complete: boolean;
}

/** A query GitHub refuses (422 over REST, an error over GraphQL). */
export class SearchQueryError extends Error {}

type Test = (issue: Issue) => boolean;
/**
 * A test that reads an issue's text (keywords, `mentions:`): it charges the budget for what it
 * reads, field by field, and gives up (false, the budget left below zero) when the next field
 * would cost more than is left.
 */
type TextTest = (issue: Issue, budget: SearchBudget) => boolean;

export type SearchSort = 'created' | 'updated' | 'comments' | 'best-match';

export interface ParsedSearch {
  tests: Test[];
  /** Tests that read text, run after the cheap ones pass. */
  textTests: TextTest[];
  /** Repositories named by `repo:` (any of them), lower-cased; undefined: every repository. */
  repos?: Set<string>;
  /** Owners named by `user:`/`org:`/`owner:`, lower-cased. */
  owners?: Set<string>;
  /** Repositories and owners a negated qualifier (`-repo:`, `-org:`…) excludes, lower-cased. */
  excludedRepos?: Set<string>;
  excludedOwners?: Set<string>;
  sort?: { field: SearchSort; desc: boolean };
}

interface Token {
  negated: boolean;
  key?: string;
  value: string;
}

function tokenize(q: string): Token[] {
  const out: Token[] = [];
  const re = /(-?)(?:([A-Za-z][A-Za-z_-]*):)?("([^"]*)"?|\S+)/g;
  for (let m = re.exec(q); m !== null; m = re.exec(q)) {
    const value = m[4] ?? m[3]!;
    out.push({ negated: m[1] === '-', key: m[2]?.toLowerCase(), value });
  }
  return out;
}

/** A case-insensitive matcher of a literal: found without lower-casing (copying) the text it reads. */
function literal(text: string): RegExp {
  return new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
}

/**
 * Charges the budget for reading `text` once per matcher; false when what is left does not cover
 * it (the budget is then marked spent, and the search stops).
 */
function charge(budget: SearchBudget, text: string, matchers: number): boolean {
  const cost = Math.ceil(text.length / TEXT_CHARS_PER_CHECK) * matchers;
  if (budget.left < cost) {
    budget.left = -1;
    return false;
  }
  budget.left -= cost;
  return true;
}

/** The issue's texts a keyword search reads, in the order GitHub's `in:` names them. */
function* texts(issue: Issue, fields: ReadonlySet<string>): Generator<string> {
  if (fields.has('title')) yield issue.title;
  if (fields.has('body')) yield issue.body;
  if (fields.has('comments')) for (const comment of issue.comments) yield comment.body;
}

/** Keywords all found and excluded words none, over the fields read one at a time. */
function keywordTest(keywords: string[], excluded: string[], fields: ReadonlySet<string>): TextTest {
  const wanted = keywords.map(literal);
  const unwanted = excluded.map(literal);
  return (issue, budget) => {
    const found = wanted.map(() => false);
    let missing = wanted.length;
    for (const text of texts(issue, fields)) {
      if (!charge(budget, text, wanted.length + unwanted.length)) return false;
      for (const re of unwanted) if (re.test(text)) return false;
      for (let k = 0; k < wanted.length; k++) {
        if (!found[k] && wanted[k]!.test(text)) {
          found[k] = true;
          missing--;
        }
      }
      if (missing === 0 && unwanted.length === 0) return true;
    }
    return missing === 0;
  };
}

/** `>=2026-01-01`, `<2026-01-02T10:00:00Z`, `2026-01-01..2026-01-31`, `2026-01-01` (that day). */
function dateTest(value: string, at: (issue: Issue) => number | null, wall: (t: number) => number): Test {
  const parse = (text: string, end: boolean): number => {
    if (text === '*') return end ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
    const ms = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
    if (Number.isNaN(ms)) throw new SearchQueryError(`invalid date '${text}'`);
    return end && text.length === 10 ? ms + 86_400_000 - 1 : ms;
  };
  let lo = Number.NEGATIVE_INFINITY;
  let hi = Number.POSITIVE_INFINITY;
  const range = value.indexOf('..');
  if (range >= 0) {
    lo = parse(value.slice(0, range), false);
    hi = parse(value.slice(range + 2), true);
  } else if (value.startsWith('>=')) lo = parse(value.slice(2), false);
  else if (value.startsWith('>')) lo = parse(value.slice(1), true) + 1;
  else if (value.startsWith('<=')) hi = parse(value.slice(2), true);
  else if (value.startsWith('<')) hi = parse(value.slice(1), false) - 1;
  else {
    lo = parse(value, false);
    hi = parse(value, true);
  }
  return (issue) => {
    const t = at(issue);
    if (t === null) return false;
    const ms = wall(t);
    return ms >= lo && ms <= hi;
  };
}

const pullOf = (issue: Issue): PullRequest | undefined => issue.pull;

/** Where `mentions:` looks: the body and the comments. */
const MENTION_FIELDS: ReadonlySet<string> = new Set(['body', 'comments']);

/**
 * Parses a query for a viewer (`@me`). Throws SearchQueryError for what GitHub answers 422.
 */
export function parseSearch(state: GitHubState, q: string, viewer: User | undefined): ParsedSearch {
  if (q.length > MAX_QUERY_CHARS)
    throw new SearchQueryError(
      `The search is longer than ${MAX_QUERY_CHARS} characters, qualifiers included (fleetbench's bound).`,
    );
  const tokens = tokenize(q);
  const parsed: ParsedSearch = { tests: [], textTests: [] };
  const keywords: string[] = [];
  const excluded: string[] = [];
  let operators = 0;
  let keywordChars = 0;
  const fields = new Set(['title', 'body', 'comments']);
  const login = (value: string): string => {
    if (value === '@me') {
      if (!viewer) throw new SearchQueryError('@me needs an authenticated user');
      return viewer.login.toLowerCase();
    }
    return value.toLowerCase();
  };
  const wall = (t: number) => state.time.clock.toWallMs(t);
  for (const token of tokens) {
    const { key, value } = token;
    if (key === undefined) {
      if (value === 'AND' || value === 'OR' || value === 'NOT') {
        operators++;
        continue;
      }
      keywordChars += value.length;
      (token.negated ? excluded : keywords).push(value.toLowerCase());
      continue;
    }
    const v = value.toLowerCase();
    let test: Test | { text: TextTest } | undefined;
    switch (key) {
      case 'repo': {
        const into = token.negated ? 'excludedRepos' : 'repos';
        parsed[into] ??= new Set();
        parsed[into].add(v);
        continue;
      }
      case 'user':
      case 'org':
      case 'owner': {
        const into = token.negated ? 'excludedOwners' : 'owners';
        parsed[into] ??= new Set();
        parsed[into].add(v);
        continue;
      }
      case 'in':
        fields.clear();
        for (const field of v.split(',')) fields.add(field);
        continue;
      case 'sort': {
        const [field, direction] = v.split('-') as [string, string | undefined];
        if (field === 'created' || field === 'updated' || field === 'comments')
          parsed.sort = { field, desc: direction !== 'asc' };
        continue;
      }
      default:
        test = qualifierTest(state, key, value, login, wall);
    }
    if (test === undefined) {
      // An unknown qualifier is a keyword, as on GitHub.
      const text = `${key}:${value}`.toLowerCase();
      keywordChars += text.length;
      keywords.push(text);
      continue;
    }
    if (typeof test === 'object') {
      const t = test.text;
      parsed.textTests.push(token.negated ? (i, b) => !t(i, b) && b.left >= 0 : t);
      continue;
    }
    const t = test;
    parsed.tests.push(token.negated ? (i) => !t(i) : t);
  }
  if (keywordChars > MAX_KEYWORD_CHARS)
    throw new SearchQueryError(`The search is longer than ${MAX_KEYWORD_CHARS} characters.`);
  if (operators > MAX_OPERATORS)
    throw new SearchQueryError(`The search contains more than ${MAX_OPERATORS} AND / OR / NOT operators.`);
  if (keywords.length > 0 || excluded.length > 0)
    parsed.textTests.push(keywordTest(keywords, excluded, fields));
  // GitHub refuses a search naming a repository or an owner it does not have (422), rather than
  // answering nothing: a typo in `repo:` or `org:` is an error, not an empty result.
  const unknownRepo = [...(parsed.repos ?? [])].some((name) => {
    const slash = name.indexOf('/');
    return slash < 0 || state.findRepo(name.slice(0, slash), name.slice(slash + 1)) === undefined;
  });
  const unknownOwner = [...(parsed.owners ?? [])].some((login) => state.findUser(login) === undefined);
  if (unknownRepo || unknownOwner)
    throw new SearchQueryError(
      'The listed users and repositories cannot be searched either because the resources do not exist or you do not have permission to view them.',
    );
  return parsed;
}

/**
 * The test of one qualifier that filters issues one by one (`is:`, `label:`, `author:`,
 * `created:`, ...), or undefined for a qualifier the emulator does not know (a keyword then).
 */
function qualifierTest(
  state: GitHubState,
  key: string,
  value: string,
  login: (value: string) => string,
  wall: (t: number) => number,
): Test | { text: TextTest } | undefined {
  const v = value.toLowerCase();
  switch (key) {
    case 'is':
    case 'type':
    case 'state':
      return stateTest(key, v);
    case 'draft':
      return (i) => pullOf(i)?.draft === (v === 'true');
    case 'label': {
      const names = new Set(value.split(',').map((n) => n.toLowerCase()));
      return (i) => i.labels.some((l) => names.has(l.name.toLowerCase()));
    }
    case 'no':
      if (v === 'label') return (i) => i.labels.length === 0;
      if (v === 'assignee') return (i) => i.assignees.length === 0;
      if (v === 'milestone' || v === 'project') return () => true;
      return undefined;
    case 'author': {
      const who = login(value);
      return (i) => i.user.login.toLowerCase() === who;
    }
    case 'assignee': {
      const who = login(value);
      return (i) => i.assignees.some((u) => u.login.toLowerCase() === who);
    }
    case 'mentions': {
      const who = literal(`@${login(value)}`);
      return {
        text: (i, budget) => {
          for (const text of texts(i, MENTION_FIELDS)) {
            if (!charge(budget, text, 1)) return false;
            if (who.test(text)) return true;
          }
          return false;
        },
      };
    }
    case 'commenter': {
      const who = login(value);
      return (i) => i.comments.some((c) => c.user.login.toLowerCase() === who);
    }
    case 'reviewed-by': {
      const who = login(value);
      return (i) => pullOf(i)?.reviews.some((r) => r.user.login.toLowerCase() === who) ?? false;
    }
    case 'involves': {
      const who = login(value);
      return (i) =>
        i.user.login.toLowerCase() === who ||
        i.assignees.some((u) => u.login.toLowerCase() === who) ||
        i.comments.some((c) => c.user.login.toLowerCase() === who) ||
        (pullOf(i)?.reviews.some((r) => r.user.login.toLowerCase() === who) ?? false);
    }
    case 'review-requested':
    case 'team-review-requested':
      login(value);
      return () => false;
    case 'review': {
      const decision = (i: Issue) => {
        const pull = pullOf(i);
        return pull ? state.reviewDecision(pull) : undefined;
      };
      if (v === 'none') return (i) => pullOf(i) !== undefined && pullOf(i)!.reviews.length === 0;
      if (v === 'required') return (i) => decision(i) === 'REVIEW_REQUIRED';
      if (v === 'approved') return (i) => decision(i) === 'APPROVED';
      if (v === 'changes_requested') return (i) => decision(i) === 'CHANGES_REQUESTED';
      return undefined;
    }
    case 'head':
      return (i) => pullOf(i)?.head === value;
    case 'base':
      return (i) => pullOf(i)?.base === value;
    case 'linked':
      if (v === 'pr') return (i) => !i.pull && linkedPull(i.repo, i.number);
      if (v === 'issue') return (i) => pullOf(i)?.linkedIssue != null;
      return undefined;
    case 'created':
      return dateTest(value, (i) => i.createdAt, wall);
    case 'updated':
      return dateTest(value, (i) => i.updatedAt, wall);
    case 'closed':
      return dateTest(value, (i) => i.closedAt, wall);
    case 'merged':
      return dateTest(value, (i) => pullOf(i)?.mergedAt ?? null, wall);
    case 'archived':
      // No repository is archived.
      return () => v === 'false';
    case 'language':
    case 'milestone':
    case 'project':
      return () => false;
  }
  return undefined;
}

function stateTest(key: string, v: string): Test | undefined {
  if (v === 'pr' || v === 'pull-request') return (i) => i.pull !== undefined;
  if (v === 'issue') return (i) => i.pull === undefined;
  if (v === 'open' || v === 'closed') return (i) => i.state === v;
  if (key === 'is' && v === 'merged') return (i) => pullOf(i)?.merged === true;
  if (key === 'is' && v === 'unmerged')
    return (i) => pullOf(i) !== undefined && !pullOf(i)!.merged && i.state === 'closed';
  if (key === 'is' && v === 'draft') return (i) => pullOf(i)?.draft === true;
  if (key === 'is' && (v === 'public' || v === 'unlocked')) return () => true;
  if (key === 'is' && (v === 'private' || v === 'locked' || v === 'archived')) return () => false;
  return undefined;
}

function linkedPull(repo: Repo, number: number): boolean {
  for (const pull of repo.pulls.values()) if (pull.linkedIssue === number) return true;
  return false;
}

/**
 * The issues and pull requests a query finds, sorted: by `sort` (REST parameter or `sort:`
 * qualifier; created, updated or comments), else "best match", modelled as newest first. Stops
 * when the request's search budget is spent (`complete: false`).
 */
export function runSearch(
  state: GitHubState,
  parsed: ParsedSearch,
  sort?: { field: SearchSort; desc: boolean },
  budget: SearchBudget = { left: MAX_SEARCH_CHECKS },
): SearchResult {
  const found: Issue[] = [];
  const checks = parsed.tests.length + 1;
  const { tests, textTests } = parsed;
  let complete = true;
  scan: for (const repo of state.repos.values()) {
    if (parsed.repos && !parsed.repos.has(repo.fullName.toLowerCase())) continue;
    if (parsed.owners && !parsed.owners.has(repo.owner.login.toLowerCase())) continue;
    if (parsed.excludedRepos?.has(repo.fullName.toLowerCase())) continue;
    if (parsed.excludedOwners?.has(repo.owner.login.toLowerCase())) continue;
    for (const issue of repo.issues.values()) {
      if (budget.left < checks) {
        complete = false;
        break scan;
      }
      budget.left -= checks;
      if (!tests.every((t) => t(issue))) continue;
      // The text is read last, and only for issues the qualifiers kept: its cost is what it reads.
      const matched = textTests.every((t) => t(issue, budget));
      if (budget.left < 0) {
        complete = false;
        break scan;
      }
      if (matched) found.push(issue);
    }
  }
  const order = sort ?? parsed.sort ?? { field: 'best-match', desc: true };
  const issues = sortIssues(found, order.field === 'best-match' ? 'created' : order.field, order.desc);
  return { issues, complete };
}
