/**
 * Who may do what in a repository, and how GitHub labels an author's tie to it. A user's role is
 * the highest of its grants: the repository's owner is `admin`, a direct collaborator has the
 * role fixtures give it, an organization's member has the organization's base role (`read`, its
 * default). `author_association` follows GitHub's definitions (the CommentAuthorAssociation
 * enum), strongest first: OWNER (owns the repository), MEMBER (a member of the organization that
 * owns it), COLLABORATOR (invited to collaborate), CONTRIBUTOR ("has previously committed to the
 * repository": here, authored a merged pull request), FIRST_TIME_CONTRIBUTOR (has opened a pull
 * request, none merged yet), NONE.
 */
import type { Repo, RoleName, User } from './objects.ts';

export type Association =
  | 'OWNER'
  | 'MEMBER'
  | 'COLLABORATOR'
  | 'CONTRIBUTOR'
  | 'FIRST_TIME_CONTRIBUTOR'
  | 'NONE';

/** The role an organization's members have on its repositories: GitHub's default base permission. */
export const ORG_MEMBER_ROLE: RoleName = 'read';

const RANK: Record<RoleName, number> = { read: 1, triage: 2, write: 3, maintain: 4, admin: 5 };

function isMember(user: User, repo: Repo): boolean {
  return repo.owner.type === 'Organization' && repo.owner.members?.has(user) === true;
}

/** The user's highest role on the repository, or null when it has none (not a collaborator). */
export function roleOf(user: User, repo: Repo): RoleName | null {
  if (user === repo.owner) return 'admin';
  let best: RoleName | null = repo.collaborators.get(user) ?? null;
  if (isMember(user, repo) && (best === null || RANK[ORG_MEMBER_ROLE] > RANK[best])) best = ORG_MEMBER_ROLE;
  return best;
}

/** The legacy base permission GitHub's permission endpoint answers: maintain is write, triage is read. */
export function basePermission(role: RoleName | null): 'admin' | 'write' | 'read' | 'none' {
  if (role === null) return 'none';
  return role === 'maintain' ? 'write' : role === 'triage' ? 'read' : role;
}

/** A collaborator's `permissions` object: each role includes the weaker ones. */
export function permissionFlags(role: RoleName | null): Record<string, boolean> {
  const rank = role === null ? 0 : RANK[role];
  return { admin: rank >= 5, maintain: rank >= 4, push: rank >= 3, triage: rank >= 2, pull: rank >= 1 };
}

export function association(user: User, repo: Repo): Association {
  if (user === repo.owner) return 'OWNER';
  if (isMember(user, repo)) return 'MEMBER';
  if (repo.collaborators.has(user)) return 'COLLABORATOR';
  if (repo.contributors.has(user)) return 'CONTRIBUTOR';
  if (repo.pullAuthors.has(user)) return 'FIRST_TIME_CONTRIBUTOR';
  return 'NONE';
}

/**
 * Whether a branch is protected: the repository's default branch, when its merges need approving
 * reviews (`requiredReviews`, GitHub's classic branch protection; REST's branch protection and
 * `protected`, GraphQL's `branchProtectionRule`).
 */
export function isProtected(repo: Repo, branch: string): boolean {
  return branch === repo.defaultBranch && repo.requiredReviews > 0;
}
