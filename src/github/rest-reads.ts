/**
 * Reads a control plane makes of a repository as a whole, and of an organization: every pull
 * request's review comments and every issue's events at once (how a poller finds what changed
 * with one request a repository), an organization, a repository's contributors, languages and
 * topics (topics also written), and its branch protection (the default branch's required
 * approving reviews, the one rule the world enforces) with its rulesets (none: the world uses
 * classic protection). docs/github-emulator.md, "What it serves", says what each models.
 */

import { treeObject } from './rest-contents.ts';
import { historyOf } from './rest-git.ts';
import {
  cachedList,
  commentsListed,
  fail,
  listOf,
  notFound,
  notOfType,
  numberParam,
  pagedList,
  paginate,
  type RestContext,
  type RestResult,
  type RestRouter,
  unchanged,
  withRepo,
} from './rest-kit.ts';
import { issueJson, organizationSimple, reviewCommentObject, userObject } from './shapes.ts';
import { issueEventObject, listedEvents } from './shapes-timeline.ts';
import type { GitHubState, Issue, IssueEvent, PullRequest, Repo, ReviewComment, User } from './state.ts';
import { USER_CREATED_AT, USER_UPDATED_AT } from './state.ts';
import { isProtected, roleOf } from './world/access.ts';

export function addReadRoutes(r: RestRouter): void {
  // Every pull request's review comments (a literal segment: never a pull request numbered
  // "comments"): `sort` created or updated, `direction`, `since`, paged.
  r.add(
    'GET',
    '/repos/{owner}/{repo}/pulls/comments',
    'pulls/comments#list-review-comments-in-a-repository',
    (ctx) =>
      withRepo(ctx, (repo) =>
        pagedList(
          ctx,
          repo.issuesVersion,
          () => {
            const all: { pull: PullRequest; comment: ReviewComment }[] = [];
            for (const pull of repo.pulls.values())
              for (const comment of pull.reviewComments) all.push({ pull, comment });
            return commentsListed(ctx, all, (found) => found.comment);
          },
          ({ pull, comment }) => reviewCommentObject(ctx.state, pull, comment),
        ),
      ),
  );

  // Every issue's and pull request's events, newest first, each with its issue.
  r.add(
    'GET',
    '/repos/{owner}/{repo}/issues/events',
    'issues/events#list-issue-events-for-a-repository',
    (ctx) =>
      withRepo(ctx, (repo) => {
        const version = repo.issuesVersion;
        const hit = unchanged(ctx, version);
        if (hit) return hit;
        const page = paginate(ctx, repoEvents(repo));
        return {
          status: 200,
          body: listOf(page.items.map(({ issue, event }) => eventWithIssue(ctx.state, issue, event))),
          version,
          page: page.page,
        };
      }),
  );
  r.add('GET', '/repos/{owner}/{repo}/issues/events/{event_id}', 'issues/events#get-an-issue-event', (ctx) =>
    withRepo(ctx, (repo) => {
      const found = eventIndex(repo).get(numberParam(ctx.params[2]));
      if (found === undefined) return notFound();
      return {
        status: 200,
        body: eventWithIssue(ctx.state, found.issue, found.event),
        version: found.issue.version,
      };
    }),
  );

  r.add('GET', '/orgs/{org}', 'orgs/orgs#get-an-organization', (ctx) => {
    const org = ctx.state.findUser(ctx.params[0]!);
    if (org === undefined || org.type !== 'Organization') return notFound();
    return {
      status: 200,
      body: JSON.stringify(organizationFull(ctx.state, org, ctx.user)),
      version: ctx.state.refs.reposVersion,
      lastModified: USER_UPDATED_AT,
    };
  });

  r.add('GET', '/repos/{owner}/{repo}/contributors', 'repos/repos#list-repository-contributors', (ctx) =>
    withRepo(ctx, (repo) => listContributors(ctx, repo)),
  );

  r.add('GET', '/repos/{owner}/{repo}/languages', 'repos/repos#list-repository-languages', (ctx) =>
    withRepo(ctx, (repo) => {
      const tip = ctx.state.refs.commit(repo, repo.defaultBranch);
      const body =
        tip === undefined
          ? undefined
          : ctx.state.gitStore.treeAnswer(repo, `${tip.tree}:languages`, () =>
              languagesOf(ctx, repo, tip.tree),
            );
      return { status: 200, body: body ?? '{}', version: repo.pushVersion };
    }),
  );

  const topics = '/repos/{owner}/{repo}/topics';
  r.add('GET', topics, 'repos/repos#get-all-repository-topics', (ctx) =>
    withRepo(ctx, (repo) => ({
      status: 200,
      body: JSON.stringify({ names: repo.topics }),
      version: repo.pushVersion,
    })),
  );
  r.add('PUT', topics, 'repos/repos#replace-all-repository-topics', (ctx) =>
    withRepo(ctx, (repo) => {
      const names = readTopics(ctx);
      if (!Array.isArray(names)) return names;
      ctx.state.updateRepo(repo, { topics: names });
      return { status: 200, body: JSON.stringify({ names: repo.topics }) };
    }),
  );

  // Beside `…/branches/{branch+}` (rest-kit.ts tries this longer route first): a branch whose
  // name ends in `/protection` is read with its slash encoded (`%2F`), as Octokit sends it.
  r.add(
    'GET',
    '/repos/{owner}/{repo}/branches/{branch}/protection',
    'branches/branch-protection#get-branch-protection',
    (ctx) =>
      withRepo(ctx, (repo) => {
        // Only the repository's admins read its protection; anyone else is answered 404, as
        // GitHub answers what a token may not see.
        if (ctx.user === undefined || roleOf(ctx.user, repo) !== 'admin') return notFound();
        const branch = ctx.params[2]!;
        if (!repo.branches.has(branch)) return fail(404, 'Branch not found');
        if (!isProtected(repo, branch)) return fail(404, 'Branch not protected');
        return {
          status: 200,
          body: JSON.stringify(protectionObject(ctx.state, repo, branch)),
          version: repo.pushVersion,
        };
      }),
  );

  // The rules a branch is under from rulesets: none, the world protects with classic branch
  // protection (a branch need not exist, as GitHub says).
  r.add(
    'GET',
    '/repos/{owner}/{repo}/rules/branches/{branch+}',
    'repos/rules#get-rules-for-a-branch',
    (ctx) =>
      withRepo(ctx, () =>
        pagedList(
          ctx,
          1,
          () => [],
          (rule: object) => rule,
        ),
      ),
  );
}

/** An issue event as the repository's lists give it: with its issue. */
function eventWithIssue(state: GitHubState, issue: Issue, event: IssueEvent): string {
  return `${JSON.stringify(issueEventObject(state, issue, event)).slice(0, -1)},"issue":${issueJson(state, issue)}}`;
}

type RepoEvent = { issue: Issue; event: IssueEvent };

/** Every issue's listed events, newest first (ties by id, the later first), kept until an issue changes. */
function repoEvents(repo: Repo): RepoEvent[] {
  return cachedList(repo, 'issues/events', repo.issuesVersion, () => {
    const all: RepoEvent[] = [];
    for (const issue of repo.issues.values())
      for (const event of listedEvents(issue)) all.push({ issue, event });
    return all.sort((a, b) => b.event.createdAt - a.event.createdAt || b.event.id - a.event.id);
  });
}

/** The repository's events by id, kept until an issue changes. */
const eventIndexes = new WeakMap<Repo, { version: number; byId: Map<number, RepoEvent> }>();

function eventIndex(repo: Repo): Map<number, RepoEvent> {
  const kept = eventIndexes.get(repo);
  if (kept !== undefined && kept.version === repo.issuesVersion) return kept.byId;
  const byId = new Map(repoEvents(repo).map((found) => [found.event.id, found]));
  eventIndexes.set(repo, { version: repo.issuesVersion, byId });
  return byId;
}

/**
 * GitHub's `organization-full`: what anyone sees, and for its members what GitHub shows its
 * owners (the world has no owner role: a member is shown what an owner is).
 */
function organizationFull(state: GitHubState, org: User, viewer: User | undefined): Record<string, unknown> {
  const repos = [...state.repos.values()].filter((r) => r.owner === org);
  const privateRepos = repos.filter((r) => r.private).length;
  const visible: Record<string, unknown> = {
    ...organizationSimple(state, org),
    ...(org.name === null ? {} : { name: org.name }),
    is_verified: false,
    has_organization_projects: true,
    has_repository_projects: true,
    public_repos: repos.length - privateRepos,
    public_gists: 0,
    followers: 0,
    following: 0,
    html_url: userObject(state, org).html_url,
    type: 'Organization',
    created_at: state.time.iso(USER_CREATED_AT),
    updated_at: state.time.iso(USER_UPDATED_AT),
    archived_at: null,
  };
  if (viewer === undefined || org.members?.has(viewer) !== true) return visible;
  return {
    ...visible,
    total_private_repos: privateRepos,
    owned_private_repos: privateRepos,
    private_gists: 0,
    disk_usage: 0,
    collaborators: 0,
    billing_email: null,
    default_repository_permission: 'read',
    members_can_create_repositories: true,
    two_factor_requirement_enabled: false,
    members_allowed_repository_creation_type: 'all',
    members_can_create_public_repositories: true,
    members_can_create_private_repositories: true,
    members_can_create_internal_repositories: false,
    members_can_create_pages: true,
    members_can_fork_private_repositories: false,
    members_can_create_public_pages: true,
    members_can_create_private_pages: true,
    web_commit_signoff_required: false,
    plan: { name: 'free', space: 976562499, private_repos: 10000, filled_seats: org.members.size, seats: 0 },
  };
}

type Contributor =
  | { user: User; contributions: number }
  | { name: string; email: string; contributions: number };

/** Each repository's contributors, kept until a push or a new user (who may be an author's account). */
const contributorLists = new WeakMap<Repo, { version: number; list: Contributor[] }>();

/**
 * GET …/contributors: the authors of the default branch's commits (its newest MAX_LISTED_COMMITS,
 * rest-git.ts), most commits first: those with an account (an author email GitHub ties to a
 * login, `LOGIN@users.noreply.github.com`), and with `anon` also those without, by name and
 * email. 204 for a repository without commits, as GitHub answers an empty one.
 */
function listContributors(ctx: RestContext, repo: Repo): RestResult {
  const tip = ctx.state.refs.commit(repo, repo.defaultBranch);
  if (tip === undefined) return { status: 204, body: '' };
  const version = Math.max(repo.pushVersion, ctx.state.usersVersion);
  const anon = ctx.query.get('anon');
  const withAnon = anon === '1' || anon === 'true';
  return pagedList(
    ctx,
    version,
    () => {
      let kept = contributorLists.get(repo);
      if (kept === undefined || kept.version !== version) {
        kept = { version, list: contributorsOf(ctx.state, repo, tip.sha) };
        contributorLists.set(repo, kept);
      }
      return withAnon ? kept.list : kept.list.filter((c) => 'user' in c);
    },
    (c) =>
      'user' in c
        ? { ...userObject(ctx.state, c.user), contributions: c.contributions }
        : { email: c.email, name: c.name, type: 'Anonymous', contributions: c.contributions },
  );
}

function contributorsOf(state: GitHubState, repo: Repo, tip: string): Contributor[] {
  const users = new Map<User, number>();
  const anonymous = new Map<string, { name: string; email: string; contributions: number }>();
  for (const commit of historyOf(repo, repo.commits.get(tip)!)) {
    const user = state.userOfIdent(commit.author);
    if (user !== undefined) users.set(user, (users.get(user) ?? 0) + 1);
    else {
      const email = commit.author.email.toLowerCase();
      const seen = anonymous.get(email);
      if (seen === undefined) anonymous.set(email, { name: commit.author.name, email, contributions: 1 });
      else seen.contributions++;
    }
  }
  const out: Contributor[] = [
    ...[...users].map(([user, contributions]) => ({ user, contributions })),
    ...anonymous.values(),
  ];
  const name = (c: Contributor) => ('user' in c ? c.user.login : c.email).toLowerCase();
  return out.sort((a, b) => b.contributions - a.contributions || (name(a) < name(b) ? -1 : 1));
}

/** File extensions and the language GitHub (Linguist) names for them: programming and markup only, as GitHub counts. */
const LANGUAGES: Record<string, string> = {
  ts: 'TypeScript',
  tsx: 'TypeScript',
  mts: 'TypeScript',
  cts: 'TypeScript',
  js: 'JavaScript',
  jsx: 'JavaScript',
  mjs: 'JavaScript',
  cjs: 'JavaScript',
  py: 'Python',
  go: 'Go',
  rs: 'Rust',
  java: 'Java',
  kt: 'Kotlin',
  swift: 'Swift',
  rb: 'Ruby',
  php: 'PHP',
  c: 'C',
  h: 'C',
  cc: 'C++',
  cpp: 'C++',
  hpp: 'C++',
  cs: 'C#',
  scala: 'Scala',
  sh: 'Shell',
  bash: 'Shell',
  html: 'HTML',
  css: 'CSS',
  scss: 'SCSS',
  vue: 'Vue',
  lua: 'Lua',
  zig: 'Zig',
};

/**
 * GET …/languages: the bytes of the default branch's files by language, most first, from the
 * file extensions (LANGUAGES): the recursive tree's listing and its bound (100,000 entries,
 * docs/limits.md), made once per tree. `{}` when no file is in a language it knows (a README
 * alone, as every fixture repository starts; GitHub counts no prose or data either).
 */
function languagesOf(ctx: RestContext, repo: Repo, tree: string): string {
  const listed = treeObject(ctx, repo, tree, true);
  const bytes = new Map<string, number>();
  for (const item of (listed?.tree ?? []) as { path: string; type: string; size?: number }[]) {
    if (item.type !== 'blob') continue;
    const dot = item.path.lastIndexOf('.');
    const language =
      dot < 0 || dot < item.path.lastIndexOf('/')
        ? undefined
        : LANGUAGES[item.path.slice(dot + 1).toLowerCase()];
    if (language !== undefined) bytes.set(language, (bytes.get(language) ?? 0) + (item.size ?? 0));
  }
  return JSON.stringify(Object.fromEntries([...bytes].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))));
}

/** GitHub's bounds on a repository's topics ("Classifying your repository with topics"). */
export const TOPIC_BOUNDS = { maxTopics: 20, maxChars: 50 } as const;

/** GitHub's words for a topic name it refuses. */
const TOPIC_RULE =
  'Topics must start with a lowercase letter or number, consist of 50 characters or less, and can include hyphens.';

/**
 * The topics of a `PUT …/topics` (`names`, saved in lower case, each once), or GitHub's refusal:
 * the schema's for a body without `names` or with a non-string name, 422 `invalid` for a name
 * breaking GitHub's rule or past 20 topics.
 */
function readTopics(ctx: RestContext): string[] | RestResult {
  const body = ctx.body as { names?: unknown } | undefined;
  const names = body !== null && typeof body === 'object' ? body.names : undefined;
  if (names === undefined) return fail(422, `Invalid request.\n\n"names" wasn't supplied.`);
  if (!Array.isArray(names)) return notOfType('names', names, 'an array');
  const bad = names.find((n) => typeof n !== 'string');
  if (bad !== undefined) return notOfType('names/items', bad, 'a string');
  const topics = [...new Set((names as string[]).map((n) => n.trim().toLowerCase()))].filter((n) => n !== '');
  const invalid = topics.some((n) => n.length > TOPIC_BOUNDS.maxChars || !/^[a-z0-9][a-z0-9-]*$/.test(n));
  // GitHub's "Validation Failed (simple)": its errors are plain messages.
  if (invalid) return fail(422, 'Validation Failed', { errors: [TOPIC_RULE] });
  if (topics.length > TOPIC_BOUNDS.maxTopics)
    return fail(422, 'Validation Failed', {
      errors: [`A repository cannot have more than ${TOPIC_BOUNDS.maxTopics} topics.`],
    });
  return topics;
}

/**
 * GitHub's `branch-protection` of a protected branch: its required approving reviews (no stale
 * review dismissed, no code owners), no required status checks or signatures, admins not held
 * to it, and the rest of GitHub's switches off.
 */
function protectionObject(state: GitHubState, repo: Repo, branch: string): Record<string, unknown> {
  const url = `${state.apiUrl}/repos/${repo.fullName}/branches/${encodeURIComponent(branch)}/protection`;
  const off = { enabled: false };
  return {
    url,
    required_pull_request_reviews: {
      url: `${url}/required_pull_request_reviews`,
      dismiss_stale_reviews: false,
      require_code_owner_reviews: false,
      require_last_push_approval: false,
      required_approving_review_count: repo.requiredReviews,
    },
    required_signatures: { url: `${url}/required_signatures`, enabled: false },
    enforce_admins: { url: `${url}/enforce_admins`, enabled: false },
    required_linear_history: off,
    allow_force_pushes: off,
    allow_deletions: off,
    block_creations: off,
    required_conversation_resolution: off,
    lock_branch: off,
    allow_fork_syncing: off,
  };
}
