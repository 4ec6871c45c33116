/**
 * Milestones (REST "Milestones"): listed (`state`, `sort` by due date or completeness,
 * `direction`, paged), made, read, edited and deleted by number; an issue put in one with
 * `milestone` on its create or edit. The state and its rules are world/milestones.ts's;
 * docs/github-emulator.md, "What it serves".
 */
import {
  actor,
  bodyField,
  mutate,
  notFound,
  notOfType,
  numberParam,
  pagedList,
  type RestContext,
  type RestResult,
  type RestRouter,
  unchanged,
  validation,
  withRepo,
} from './rest-kit.ts';
import { milestoneObject } from './shapes.ts';
import type { Milestone, Repo } from './state.ts';
import type { MilestoneInput } from './world/milestones.ts';

export function addMilestoneRoutes(r: RestRouter): void {
  const milestones = '/repos/{owner}/{repo}/milestones';
  r.add('GET', milestones, 'issues/milestones#list-milestones', (ctx) =>
    withRepo(ctx, (repo) =>
      pagedList(
        ctx,
        repo.milestonesVersion,
        () => listed(ctx, repo),
        (m) => milestoneObject(ctx.state, repo, m),
      ),
    ),
  );
  r.add('POST', milestones, 'issues/milestones#create-a-milestone', (ctx) =>
    withRepo(ctx, (repo) => {
      const input = milestoneInput(ctx);
      if ('status' in input) return input;
      const title = input.title;
      if (title === undefined) return validation('Milestone', 'title');
      return mutate(() => {
        const m = ctx.state.milestones.create(repo, { ...input, title }, actor(ctx));
        const body = milestoneObject(ctx.state, repo, m);
        return { status: 201, body: JSON.stringify(body), location: body.url as string };
      }, 'Milestone');
    }),
  );
  const one = `${milestones}/{milestone_number}`;
  r.add('GET', one, 'issues/milestones#get-a-milestone', (ctx) =>
    withMilestone(ctx, (repo, m) => {
      const hit = unchanged(ctx, m.version);
      if (hit) return hit;
      return { status: 200, body: JSON.stringify(milestoneObject(ctx.state, repo, m)), version: m.version };
    }),
  );
  r.add('PATCH', one, 'issues/milestones#update-a-milestone', (ctx) =>
    withMilestone(ctx, (repo, m) => {
      const input = milestoneInput(ctx);
      if ('status' in input) return input;
      return mutate(() => {
        ctx.state.milestones.update(repo, m, input);
        return { status: 200, body: JSON.stringify(milestoneObject(ctx.state, repo, m)) };
      }, 'Milestone');
    }),
  );
  r.add('DELETE', one, 'issues/milestones#delete-a-milestone', (ctx) =>
    withMilestone(ctx, (repo, m) => {
      ctx.state.milestones.delete(repo, m);
      return { status: 204, body: '' };
    }),
  );
}

function withMilestone(ctx: RestContext, fn: (repo: Repo, m: Milestone) => RestResult): RestResult {
  return withRepo(ctx, (repo) => {
    const m = repo.milestones.get(numberParam(ctx.params[2]));
    return m === undefined ? notFound() : fn(repo, m);
  });
}

/** GET …/milestones: `state` (open by default, closed, all), `sort` (due_on, completeness), `direction` (asc). */
function listed(ctx: RestContext, repo: Repo): Milestone[] {
  const state = ctx.query.get('state') ?? 'open';
  const desc = ctx.query.get('direction') === 'desc';
  const byCompleteness = ctx.query.get('sort') === 'completeness';
  const key = (m: Milestone): number => {
    if (!byCompleteness) return m.dueOn ?? Number.POSITIVE_INFINITY;
    const { open, closed } = ctx.state.milestones.counts(repo, m);
    return open + closed === 0 ? 0 : closed / (open + closed);
  };
  return [...repo.milestones.values()]
    .filter((m) => state === 'all' || m.state === state)
    .sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      const order = x < y ? -1 : x > y ? 1 : a.number - b.number;
      return desc ? -order : order;
    });
}

/** The body's milestone fields, each of its documented type. */
function milestoneInput(ctx: RestContext): MilestoneInput | RestResult {
  const input: MilestoneInput = {};
  const title = bodyField(ctx, 'title');
  if (title !== undefined) {
    if (typeof title !== 'string') return notOfType('title', title, 'a string');
    input.title = title;
  }
  const state = bodyField(ctx, 'state');
  if (state !== undefined) {
    if (state !== 'open' && state !== 'closed') return notOfType('state', state, 'one of ["open", "closed"]');
    input.state = state;
  }
  const description = bodyField(ctx, 'description');
  if (description !== undefined) {
    if (description !== null && typeof description !== 'string')
      return notOfType('description', description, 'a string');
    input.description = description;
  }
  const due = bodyField(ctx, 'due_on');
  if (due !== undefined) {
    const wall = typeof due === 'string' ? Date.parse(due) : Number.NaN;
    if (due !== null && Number.isNaN(wall)) return notOfType('due_on', due, 'a date-time');
    input.dueOn = due === null ? null : ctx.state.time.fromWall(wall);
  }
  return input;
}

/**
 * An issue write's `milestone`: a milestone's number (or its digits as a string), null for none,
 * undefined when not given; GitHub's 422 `invalid` for a number that is no milestone here.
 */
export function milestoneOfWrite(
  ctx: RestContext,
  repo: Repo,
): { milestone: Milestone | null | undefined } | RestResult {
  const value = bodyField(ctx, 'milestone');
  if (value === undefined) return { milestone: undefined };
  if (value === null) return { milestone: null };
  const number = typeof value === 'number' ? value : typeof value === 'string' ? numberParam(value) : -1;
  const milestone = repo.milestones.get(number);
  return milestone === undefined ? validation('Issue', 'milestone', 'invalid') : { milestone };
}
