/**
 * Fixtures: the GitHub world the emulator starts from. Either generated from a seed and sizes
 * (`generateFixtures({ repos: 10, issuesPerRepo: 8 })`) or loaded from a YAML/JSON file
 * (`loadFixturesFile`), validated with errors that name the file, line and field path.
 * Field names follow GitHub's REST JSON (snake_case) so a fixture reads like an API answer.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InputFileError } from '../base/errors.ts';
import type { Rng } from '../base/rng.ts';
import { describeZodIssues, issuePath } from '../base/validation.ts';
import { parseYamlInput } from '../base/yaml-input.ts';
import { sources } from '../trace/schema.ts';
import { IDENTITY_KINDS } from './config.ts';
import { ISSUE_BOUNDS, LABEL_BOUNDS } from './world/bounds.ts';

const login = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-_.[\]]*$/, 'expected a GitHub login');
const repoName = z.string().regex(/^[A-Za-z0-9._-]+$/, 'expected a repository name');
const sha = z.string().regex(/^[0-9a-f]{40}$/, 'expected a 40-hex-digit commit SHA');
const positiveInt = z.number().int().positive();

export const CHECK_STATUSES = ['queued', 'in_progress', 'completed'] as const;
export const CHECK_CONCLUSIONS = [
  'success',
  'failure',
  'neutral',
  'cancelled',
  'skipped',
  'timed_out',
  'action_required',
  'stale',
] as const;
export const STATUS_STATES = ['error', 'failure', 'pending', 'success'] as const;
export const REVIEW_STATES = ['APPROVED', 'CHANGES_REQUESTED', 'COMMENTED', 'DISMISSED'] as const;
/** GitHub's base repository roles, weakest first. */
export const ROLE_NAMES = ['read', 'triage', 'write', 'maintain', 'admin'] as const;

const checkSchema = z
  .object({
    name: z.string().min(1),
    status: z.enum(CHECK_STATUSES).optional(),
    conclusion: z.enum(CHECK_CONCLUSIONS).nullable().optional(),
  })
  .strict();

const statusSchema = z
  .object({
    context: z.string().min(1),
    state: z.enum(STATUS_STATES),
    description: z.string().optional(),
    target_url: z.string().optional(),
  })
  .strict();

const commentSchema = z.object({ user: login.optional(), body: z.string() }).strict();

const reviewSchema = z
  .object({ user: login.optional(), state: z.enum(REVIEW_STATES), body: z.string().optional() })
  .strict();

const reviewCommentSchema = z
  .object({
    user: login.optional(),
    body: z.string(),
    path: z.string().optional(),
    line: positiveInt.optional(),
  })
  .strict();

/** GitHub's bounds (ISSUE_BOUNDS): a title of 1 to 256 characters, up to 100 labels of 1 to 50. */
const title = z.string().min(1).max(ISSUE_BOUNDS.maxTitleChars);
const labels = z
  .array(z.string().min(1).max(ISSUE_BOUNDS.maxLabelNameChars))
  .max(ISSUE_BOUNDS.maxLabels)
  .optional();

const issueSchema = z
  .object({
    number: positiveInt.optional(),
    title,
    body: z.string().optional(),
    state: z.enum(['open', 'closed']).optional(),
    user: login.optional(),
    labels,
    assignees: z.array(login).max(ISSUE_BOUNDS.maxAssignees).optional(),
    comments: z.array(commentSchema).optional(),
  })
  .strict();

const pullSchema = z
  .object({
    number: positiveInt.optional(),
    title,
    body: z.string().optional(),
    head: z.string().min(1).describe('head branch name'),
    base: z.string().min(1).optional(),
    head_sha: sha.optional(),
    state: z.enum(['open', 'closed', 'merged']).optional(),
    draft: z.boolean().optional(),
    user: login.optional(),
    issue: positiveInt.optional().describe('number of the issue this PR closes'),
    mergeable: z.boolean().nullable().optional(),
    labels,
    checks: z.array(checkSchema).optional(),
    statuses: z.array(statusSchema).optional(),
    reviews: z.array(reviewSchema).optional(),
    review_comments: z.array(reviewCommentSchema).optional(),
    comments: z.array(commentSchema).optional(),
  })
  .strict();

/** A label of the repository's table, as `POST /repos/{owner}/{repo}/labels` takes it. */
const labelSchema = z
  .object({
    name: z.string().min(1).max(ISSUE_BOUNDS.maxLabelNameChars),
    color: z
      .string()
      .regex(/^#?[0-9a-fA-F]{6}$/, 'expected six hex digits')
      .optional(),
    description: z.string().max(LABEL_BOUNDS.maxDescriptionChars).optional(),
  })
  .strict();

/** A direct collaborator and the role GitHub's permission endpoint names (default `write`). */
const collaboratorSchema = z.object({ login, role_name: z.enum(ROLE_NAMES).optional() }).strict();

const repoSchema = z
  .object({
    owner: login,
    name: repoName,
    private: z.boolean().optional(),
    description: z.string().optional(),
    default_branch: z.string().min(1).optional(),
    required_reviews: z.number().int().nonnegative().optional(),
    allow_merge_commit: z.boolean().optional(),
    allow_squash_merge: z.boolean().optional(),
    allow_rebase_merge: z.boolean().optional(),
    delete_branch_on_merge: z.boolean().optional(),
    allow_auto_merge: z.boolean().optional(),
    labels: z.array(labelSchema).max(LABEL_BOUNDS.maxPerRepo).optional(),
    collaborators: z.array(collaboratorSchema).optional(),
    branches: z.array(z.object({ name: z.string().min(1), sha: sha.optional() }).strict()).optional(),
    issues: z.array(issueSchema).optional(),
    pulls: z.array(pullSchema).optional(),
  })
  .strict();

const userSchema = z
  .object({
    login,
    name: z.string().optional(),
    type: z.enum(['User', 'Bot', 'Organization']).optional(),
    /** An organization's members: MEMBER on its repositories, collaborators with read access. */
    members: z.array(login).optional(),
  })
  .strict();

const tokenSchema = z
  .object({
    token: z.string().min(8),
    user: login.optional(),
    kind: z.enum(IDENTITY_KINDS).exclude(['unauthenticated', 'installation']).optional(),
    repo: z.string().optional().describe('owner/name, for an actions token'),
    session: z.string().optional(),
    source: z.enum(sources).optional(),
    project: z.string().optional(),
  })
  .strict();

export const fixturesSchema = z
  .object({
    /** The login new tokens and admin mutations act as when none is named. */
    default_user: login.optional(),
    /** Origin of web links (`html_url`, GraphQL `url`), e.g. https://github.com. */
    web_url: z
      .string()
      .regex(/^https?:\/\/[^/\s]+\/?$/, 'expected an origin such as https://github.com')
      .optional(),
    users: z.array(userSchema).optional(),
    tokens: z.array(tokenSchema).optional(),
    repos: z.array(repoSchema).min(1),
  })
  .strict();

export type Fixtures = z.infer<typeof fixturesSchema>;
export type RepoFixture = z.infer<typeof repoSchema>;
export type IssueFixture = z.infer<typeof issueSchema>;
export type PullFixture = z.infer<typeof pullSchema>;
export type TokenFixture = z.infer<typeof tokenSchema>;

export const DEFAULT_USER = 'fleet-agent';
export const DEFAULT_OWNER = 'fleetbench';

/** Cross-reference checks zod cannot express: unique repos and numbers, linked issues exist. */
export function checkFixtures(fixtures: Fixtures): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  const repos = new Set<string>();
  fixtures.users?.forEach((user, u) => {
    if (user.members !== undefined && user.type !== 'Organization')
      problems.push({ path: ['users', u, 'members'], message: 'only an Organization has members' });
  });
  fixtures.repos.forEach((repo, r) => {
    const full = `${repo.owner}/${repo.name}`.toLowerCase();
    if (repos.has(full))
      problems.push({ path: ['repos', r, 'name'], message: `duplicate repository ${full}` });
    repos.add(full);
    const labelNames = new Set<string>();
    repo.labels?.forEach((label, l) => {
      const key = label.name.toLowerCase();
      if (labelNames.has(key))
        problems.push({
          path: ['repos', r, 'labels', l, 'name'],
          message: `label ${label.name} is declared twice (names are case-insensitive)`,
        });
      labelNames.add(key);
    });
    const numbers = new Set<number>();
    const issueNumbers = new Set<number>();
    const claim = (n: number | undefined, path: (string | number)[]) => {
      if (n === undefined) return;
      if (numbers.has(n)) problems.push({ path, message: `number ${n} is already used in ${full}` });
      numbers.add(n);
    };
    repo.issues?.forEach((issue, i) => {
      claim(issue.number, ['repos', r, 'issues', i, 'number']);
      if (issue.number !== undefined) issueNumbers.add(issue.number);
    });
    repo.pulls?.forEach((pull, p) => {
      claim(pull.number, ['repos', r, 'pulls', p, 'number']);
    });
    // Issues without a number take the next free ones, in file order, before pull requests.
    let next = 1;
    for (const issue of repo.issues ?? []) {
      if (issue.number !== undefined) continue;
      while (numbers.has(next)) next++;
      numbers.add(next);
      issueNumbers.add(next);
    }
    repo.pulls?.forEach((pull, p) => {
      if (pull.issue !== undefined && !issueNumbers.has(pull.issue)) {
        problems.push({
          path: ['repos', r, 'pulls', p, 'issue'],
          message: `no issue #${pull.issue} in ${full}`,
        });
      }
    });
  });
  fixtures.tokens?.forEach((token, t) => {
    if (token.kind === 'actions' && (token.repo === undefined || !repos.has(token.repo.toLowerCase()))) {
      problems.push({
        path: ['tokens', t, 'repo'],
        message: 'an actions token needs the owner/name of a fixture repo',
      });
    }
  });
  return problems;
}

/** Reads and validates a YAML or JSON fixtures file; errors read `file:line: path: reason`. */
export function loadFixturesFile(file: string): Fixtures {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputFileError('E_FIXTURES', file, undefined, `cannot read: ${(error as Error).message}`);
  }
  const { doc, lineCounter, error } = parseYamlInput(text);
  if (error) throw new InputFileError('E_FIXTURES', file, error.line, error.message);
  const lineOf = (path: readonly PropertyKey[]): number | undefined => {
    // Walk up until a node with a position exists (a missing field points at its parent).
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n) as (string | number)[], true) as
        | { range?: [number] }
        | undefined;
      if (node && typeof node === 'object' && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  const parsed = fixturesSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputFileError('E_FIXTURES', file, lineOf(issue.path), describeZodIssues([issue], 1)[0]!);
  }
  const problem = checkFixtures(parsed.data)[0];
  if (problem) {
    throw new InputFileError(
      'E_FIXTURES',
      file,
      lineOf(problem.path),
      `${issuePath(problem.path)}: ${problem.message}`,
    );
  }
  return parsed.data;
}

export interface GenerateFixturesOptions {
  repos: number;
  issuesPerRepo: number;
  /** Open pull requests per repo, each on its own branch and linked to one of the issues. */
  pullsPerRepo?: number;
  owner?: string;
  user?: string;
}

const VERBS = [
  'Fix',
  'Add',
  'Refactor',
  'Document',
  'Speed up',
  'Remove',
  'Handle',
  'Test',
  'Migrate',
  'Guard',
];
const NOUNS = [
  'session restore',
  'poll loop',
  'ETag cache',
  'webhook retry',
  'rate-limit backoff',
  'review parser',
  'branch cleanup',
  'CI status check',
  'token refresh',
  'dashboard query',
  'config loader',
  'worktree setup',
];
const LABELS = ['bug', 'enhancement', 'documentation', 'good first issue', 'agent'];

/** "1 repo with 60 open issues", "10 repos with 8 each": deterministic from the Rng. */
export function generateFixtures(options: GenerateFixturesOptions, rng: Rng): Fixtures {
  const owner = options.owner ?? DEFAULT_OWNER;
  const user = options.user ?? DEFAULT_USER;
  const pulls = options.pullsPerRepo ?? 0;
  if (!Number.isInteger(options.repos) || options.repos < 1)
    throw new RangeError('repos must be a positive integer');
  if (!Number.isInteger(options.issuesPerRepo) || options.issuesPerRepo < 0) {
    throw new RangeError('issuesPerRepo must be a non-negative integer');
  }
  if (!Number.isInteger(pulls) || pulls < 0 || pulls > Math.max(options.issuesPerRepo, 0)) {
    throw new RangeError('pullsPerRepo must be between 0 and issuesPerRepo (each PR closes one issue)');
  }
  const repos: RepoFixture[] = [];
  for (let r = 1; r <= options.repos; r++) {
    const issues: IssueFixture[] = [];
    for (let i = 1; i <= options.issuesPerRepo; i++) {
      issues.push({
        number: i,
        title: `${rng.pick(VERBS)} ${rng.pick(NOUNS)} (#${i})`,
        body: `Generated issue ${i} of ${owner}/repo-${r}.`,
        labels: rng.chance(0.5) ? [rng.pick(LABELS)] : [],
      });
    }
    const pullFixtures: PullFixture[] = [];
    for (let p = 1; p <= pulls; p++) {
      pullFixtures.push({
        title: `Fix #${p}: ${issues[p - 1]!.title}`,
        body: `Closes #${p}`,
        head: `agent/issue-${p}`,
        issue: p,
        user,
        checks: [{ name: 'ci', status: 'completed', conclusion: 'success' }],
      });
    }
    // The agent and the reviewers can push, as a control plane's accounts must (COLLABORATOR).
    const collaborators = [user, 'reviewer-1', 'reviewer-2'].map((login) => ({
      login,
      role_name: 'write' as const,
    }));
    repos.push({ owner, name: `repo-${r}`, issues, pulls: pullFixtures, collaborators });
  }
  return {
    default_user: user,
    users: [
      { login: user },
      { login: 'reviewer-1' },
      { login: 'reviewer-2' },
      { login: owner, type: 'Organization' },
    ],
    repos,
  };
}
