/**
 * A repository's milestones (REST "Milestones"): numbered from 1 in the repository, titles
 * unique, open or closed, an issue in at most one. An issue's answer embeds its milestone with
 * its open and closed issue counts, so a change of the milestone, or of any issue in it (state.ts
 * `restamp` moves the milestone's version too), moves `issueVersion` of every issue in it. Bounds
 * in MILESTONE_BOUNDS
 * (docs/limits.md).
 */
import { longerThan, MILESTONE_BOUNDS } from './bounds.ts';
import { GitHubStateError, type Issue, type Milestone, nodeId, type Repo, type User } from './objects.ts';
import type { WorldTime } from './time.ts';

export interface MilestoneInput {
  title?: string;
  state?: 'open' | 'closed';
  description?: string | null;
  /** Run time, or null for none. */
  dueOn?: number | null;
}

function refused(message: string, field: string, code?: string): GitHubStateError {
  return new GitHubStateError(422, message, field, code);
}

/** The version an issue's answer has: its own, or its milestone's when that moved later. */
export function issueVersion(issue: Issue): number {
  const milestone = issue.milestone;
  return milestone == null ? issue.version : Math.max(issue.version, milestone.version);
}

export class Milestones {
  constructor(
    private readonly time: WorldTime,
    /** A new version for an issue whose answer changed though it did not (state.ts `restamp`). */
    private readonly restamp: (issue: Issue) => void,
  ) {}

  /** The open and closed issues (and pull requests) in it, counted once per version. */
  counts(repo: Repo, milestone: Milestone): { open: number; closed: number } {
    const hit = milestone.counts;
    if (hit !== undefined && hit.version === milestone.version) return hit;
    let open = 0;
    let closed = 0;
    for (const issue of repo.issues.values())
      if (issue.milestone === milestone) issue.state === 'open' ? open++ : closed++;
    milestone.counts = { version: milestone.version, open, closed };
    return milestone.counts;
  }

  create(repo: Repo, input: MilestoneInput & { title: string }, by: User): Milestone {
    if (repo.milestones.size >= MILESTONE_BOUNDS.maxPerRepo)
      throw refused(
        `a repository holds at most ${MILESTONE_BOUNDS.maxPerRepo} milestones (docs/limits.md)`,
        'title',
      );
    this.check(repo, undefined, input);
    const at = this.time.now();
    const id = this.time.id();
    const state = input.state ?? 'open';
    const milestone: Milestone = {
      id,
      nodeId: nodeId('MI', id),
      number: repo.nextMilestone++,
      title: input.title,
      description: input.description ?? null,
      state,
      dueOn: input.dueOn ?? null,
      creator: by,
      createdAt: at,
      updatedAt: at,
      closedAt: state === 'closed' ? at : null,
      version: 0,
    };
    repo.milestones.set(milestone.number, milestone);
    this.stamp(repo, milestone);
    return milestone;
  }

  update(repo: Repo, milestone: Milestone, input: MilestoneInput): Milestone {
    this.check(repo, milestone, input);
    const at = this.time.now();
    if (input.title !== undefined) milestone.title = input.title;
    if (input.description !== undefined) milestone.description = input.description;
    if (input.dueOn !== undefined) milestone.dueOn = input.dueOn;
    if (input.state !== undefined && input.state !== milestone.state) {
      milestone.state = input.state;
      milestone.closedAt = input.state === 'closed' ? at : null;
    }
    milestone.updatedAt = at;
    this.stamp(repo, milestone);
    return milestone;
  }

  /** Deleted: its issues are in none. */
  delete(repo: Repo, milestone: Milestone): void {
    repo.milestones.delete(milestone.number);
    for (const issue of repo.issues.values())
      if (issue.milestone === milestone) {
        issue.milestone = null;
        this.restamp(issue);
      }
    this.stamp(repo, milestone);
  }

  /** The issue put in `milestone` (or in none): both milestones' counts change. */
  assign(issue: Issue, milestone: Milestone | null): void {
    const before = issue.milestone ?? null;
    if (before === milestone) return;
    issue.milestone = milestone;
    if (before !== null) this.stamp(issue.repo, before);
    this.restamp(issue);
  }

  /**
   * A new version for the milestone, its list, and the issues' lists (each issue in it embeds it:
   * `issueVersion` moves with it).
   */
  private stamp(repo: Repo, milestone: Milestone): void {
    milestone.version = repo.milestonesVersion = repo.issuesVersion = this.time.bump();
  }

  /** GitHub's refusals: a title not blank and not another milestone's, the lengths. */
  private check(repo: Repo, self: Milestone | undefined, input: MilestoneInput): void {
    const title = input.title;
    if (title !== undefined) {
      if (title.trim() === '') throw refused("title can't be blank", 'title', 'missing_field');
      if (longerThan(title, MILESTONE_BOUNDS.maxTitleChars))
        throw refused(`title is too long (maximum is ${MILESTONE_BOUNDS.maxTitleChars} characters)`, 'title');
      for (const other of repo.milestones.values())
        if (other !== self && other.title === title)
          throw refused('title already exists', 'title', 'already_exists');
    }
    if (input.description != null && longerThan(input.description, MILESTONE_BOUNDS.maxDescriptionChars))
      throw refused(
        `description is too long (maximum is ${MILESTONE_BOUNDS.maxDescriptionChars} characters)`,
        'description',
      );
  }
}
