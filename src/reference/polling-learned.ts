/**
 * The `learned` strategy: a model learned from real runs' traces (docs/model.md), replayed by the
 * reference control plane at any scale. It is a model of cost, not a control plane: it does not
 * read GitHub's answers to decide anything. What happened to each session's PR comes from the
 * run's world as it happens (a PR opened, CI completed, a review posted, a push, a merge); the
 * model says after how many of the session's cycles that moved it to which state, and what each of
 * its cycles costs meanwhile, keyed by the state the cycle found it in and the one it left it in.
 *
 * Every call is a real request to the run's emulator, attributed as the learned operation, so the
 * trace and every figure of the analysis are computed as for any other run. A call is carried by a
 * request of the same protocol, route and points: the learned route with the session's repository,
 * PR, issue and head filled in; GraphQL as a small query of the learned cost. Every random choice
 * (how many calls of a fractional mean, which lag) comes from the run's seed.
 */

import { sample } from '../base/distribution.ts';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import type { SessionState } from '../contract/types.ts';
import { eventCounts, TRIGGER_MOVES } from '../model/coverage.ts';
import type {
  Model,
  ModelCalls,
  ModelOperation,
  ModelState,
  ModelTransition,
  ModelTrigger,
} from '../model/format.ts';
import type { ClientTime } from './client-time.ts';
import type { CallAttribution, GitHubClient, GitHubResult } from './github-client.ts';
import type { CycleStats, PollEnv } from './polling.ts';
import { CallCounter } from './polling.ts';
import type { SessionRecord } from './sessions.ts';

/** What the world did to a session's PR (the run's World, docs/model.md#what-the-replay-knows). */
export interface ObservedWorldEvent {
  kind: string;
  session: string;
  number?: number;
  headSha?: string;
  commentIds?: number[];
}

const TRIGGER_OF: Record<string, ModelTrigger> = {
  'pr-opened': 'pr-opened',
  'ci-completed': 'ci-completed',
  'review-posted': 'review-posted',
  pushed: 'pushed',
  merged: 'merged',
};

/** A trigger not yet acted on is dropped after this many of the session's cycles. */
const TRIGGER_PATIENCE = 20;

/** A session's cycles after an event the model never saw that are counted as extrapolated (its rows' reach). */
const UNSEEN_EVENT_CYCLES = 3;

/** What a replay made from profiles its model saw, and from those it never saw (docs/model.md#coverage). */
export interface ReplayCoverage {
  sessionCycles: number;
  /** Session-cycles replayed from a profile the model never saw, by part (`spawning → spawning`, `after review-posted`). */
  extrapolated: Record<string, number>;
  /** Calls the model planned (spawns, cycles, shared), and calls the replay made. */
  plannedCalls: number;
  madeCalls: number;
}

interface Trigger {
  on: ModelTrigger;
  at: number;
  /** The session's cycles that started since. */
  seen: number;
  /** The changes it made so far (at most TRIGGER_MOVES). */
  moves: number;
  /** Drawn when a rule first applies: the cycle count it takes effect at, and the state. */
  plan?: { lag: number; to: ModelState; from: ModelState; scheduled?: boolean };
}

interface ReplayedSession {
  spawned: boolean;
  triggers: Trigger[];
  /** Events whose extra calls apply to the next cycles: the trigger and the cycles since. */
  recent: Array<{ on: ModelTrigger; seen: number }>;
  /** Events the model never saw, and the session's cycles since: those cycles are extrapolated. */
  unseen: Array<{ on: ModelTrigger; seen: number }>;
  review?: { commentIds: number[]; seen: number; lag: number };
}

export interface LearnedHooks {
  setState(session: SessionRecord, to: SessionState): void;
  /** The world opened or moved the session's PR: the carriers name it from now on. */
  setPr(session: SessionRecord, pr: { number: number; headSha: string }): void;
  /** The control plane tells the agent of a review (agent.review.received), whose reaction follows. */
  reviewTold(session: SessionRecord, commentIds: number[]): void;
  sessionById(id: string): SessionRecord | undefined;
  /**
   * A part of the replay beyond the model that concerns the whole run (its repositories, interval,
   * machine: src/model/coverage.ts runGaps), allowed: every session-cycle is counted under it.
   */
  wholeRunGap?: string;
}

function split(repo: string): { owner: string; name: string } {
  const i = repo.indexOf('/');
  return { owner: repo.slice(0, i), name: repo.slice(i + 1) };
}

export class LearnedReplay {
  private readonly sessions = new Map<string, ReplayedSession>();
  /** Per loop (project), cycles since the last restart: the restart rows of `events` apply to the first ones. */
  private readonly loopsSinceRestart = new Map<string, number>();
  private readonly profiles = new Map<string, ModelCalls>();
  private readonly etags = new Map<string, string>();
  /** Events its traces never showed. */
  private readonly unseenEvents: ReadonlySet<ModelTrigger>;
  private readonly covered = {
    sessionCycles: 0,
    extrapolated: new Map<string, number>(),
    planned: 0,
    made: 0,
  };

  constructor(
    readonly model: Model,
    private readonly rng: Rng,
    private readonly clock: Clock,
    private readonly hooks: LearnedHooks,
  ) {
    for (const p of model.sessions.cycles) this.profiles.set(`${p.from}→${p.to}`, p.calls);
    const counts = eventCounts(model);
    this.unseenEvents = new Set((Object.keys(counts) as ModelTrigger[]).filter((on) => counts[on] === 0));
  }

  /** What the replay made from seen profiles and what it extrapolated, and its calls planned and made. */
  coverage(): ReplayCoverage {
    const { sessionCycles, extrapolated, planned, made } = this.covered;
    return {
      sessionCycles,
      extrapolated: Object.fromEntries([...extrapolated].sort((a, b) => b[1] - a[1])),
      plannedCalls: planned,
      madeCalls: made,
    };
  }

  private stateOf(id: string): ReplayedSession {
    let s = this.sessions.get(id);
    if (!s) {
      s = { spawned: false, triggers: [], recent: [], unseen: [] };
      this.sessions.set(id, s);
    }
    return s;
  }

  /** Sessions a loop polls: spawned ones not yet merged or closed (the model knows every state). */
  pollable(records: readonly SessionRecord[]): SessionRecord[] {
    return records.filter(
      (r) => r.state !== 'merged' && r.state !== 'closed' && this.sessions.get(r.id)?.spawned === true,
    );
  }

  /** A new session: its spawn's own work and calls, then it is the loops' to poll. */
  async spawn(
    record: SessionRecord,
    clientTime: ClientTime,
    call: (operation: string) => Promise<unknown>,
  ): Promise<void> {
    const s = this.stateOf(record.id);
    s.triggers.push({ on: 'created', at: this.clock.now(), seen: 0, moves: 0 });
    if (this.unseenEvents.has('created')) s.unseen.push({ on: 'created', seen: 0 });
    // A creation that moves the session outside any cycle (lag 0) takes effect after its delay
    // (drawn now only when the model has such a rule: the others are drawn at its first cycle).
    if (this.rulesFor('spawning', 'created').some((r) => Object.hasOwn(r.afterCycles, '0')))
      this.applyImmediate(record.id);
    await clientTime.work(this.model.cycleTime.spawnCpuMs);
    for (const c of this.model.sessions.spawn.calls)
      for (let i = this.draw(c.mean); i > 0; i--) {
        this.covered.planned++;
        await call(c.operation);
      }
    s.spawned = true;
  }

  world(event: ObservedWorldEvent): void {
    const on = TRIGGER_OF[event.kind];
    if (!on) return;
    const s = this.stateOf(event.session);
    const record = this.hooks.sessionById(event.session);
    if (record && event.kind === 'pr-opened' && event.number !== undefined)
      this.hooks.setPr(record, { number: event.number, headSha: event.headSha ?? '' });
    if (record?.pr && event.kind === 'pushed' && event.headSha)
      this.hooks.setPr(record, { number: record.pr.number, headSha: event.headSha });
    s.triggers.push({ on, at: this.clock.now(), seen: 0, moves: 0 });
    if (this.unseenEvents.has(on)) s.unseen.push({ on, seen: 0 });
    this.applyImmediate(event.session);
    if (this.model.events.some((e) => e.on === on)) s.recent.push({ on, seen: 0 });
    const review = this.model.sessions.review;
    if (on === 'review-posted' && review)
      s.review = {
        commentIds: event.commentIds ?? [],
        seen: 0,
        lag: this.drawHistogram(review.toldAfterCycles, 1),
      };
  }

  /** The control plane is ready again after a restart: a trigger for every session, and its loops start over. */
  restarted(): void {
    const at = this.clock.now();
    for (const [id, s] of this.sessions) {
      s.triggers.push({ on: 'restart', at, seen: 0, moves: 0 });
      if (this.unseenEvents.has('restart')) s.unseen.push({ on: 'restart', seen: 0 });
      if (this.model.events.some((e) => e.on === 'restart')) s.recent.push({ on: 'restart', seen: 0 });
      this.applyImmediate(id);
    }
    for (const loop of this.loopsSinceRestart.keys()) this.loopsSinceRestart.set(loop, 0);
  }

  /** Rules that take effect outside a cycle (lag 0 in the model): after their learned delay. */
  private applyImmediate(id: string): void {
    const s = this.sessions.get(id)!;
    const record = this.hooks.sessionById(id);
    if (!record) return;
    for (const trigger of [...s.triggers]) {
      if (trigger.plan?.scheduled) continue;
      const planned = this.plan(trigger, record.state as ModelState);
      if (planned && planned.lag === 0) this.changeOutsideCycle(id, trigger, planned);
    }
  }

  /** A rule of lag 0: the change happens its learned delay after the trigger, outside any cycle. */
  private changeOutsideCycle(id: string, trigger: Trigger, planned: NonNullable<Trigger['plan']>): void {
    const s = this.sessions.get(id)!;
    const rule = this.rulesFor(planned.from, trigger.on).find((r) => r.to === planned.to);
    const delay = rule?.afterMs
      ? sample(
          rule.afterMs.p95 > rule.afterMs.p50 && rule.afterMs.p50 > 0
            ? { kind: 'lognormal', median: rule.afterMs.p50, p95: rule.afterMs.p95 }
            : { kind: 'fixed', ms: rule.afterMs.p50 },
          this.rng,
        )
      : 0;
    planned.scheduled = true;
    this.clock.setTimeout(
      () => {
        // Superseded: the session moved on and the trigger was planned again from there.
        if (trigger.plan !== planned) return;
        const current = this.hooks.sessionById(id);
        if (current && current.state === planned.from) {
          this.hooks.setState(current, planned.to);
          this.moved(s, trigger);
          // The same cause may move it on from there at once (its next rule of lag 0).
          this.applyImmediate(id);
        } else trigger.plan = undefined;
      },
      Math.max(0, trigger.at + delay - this.clock.now()),
    );
  }

  /**
   * A trigger made a change: it may explain the next one from the new state, TRIGGER_MOVES times
   * at most. One cause may explain a chain of changes (a creation: spawning → working outside a
   * cycle, then working → pr_open two cycles later), as the learner reads them (each change's
   * cause is the latest trigger of its kind before it); the coverage walk follows the same chains.
   */
  private moved(s: ReplayedSession, trigger: Trigger): void {
    trigger.plan = undefined;
    if (++trigger.moves >= TRIGGER_MOVES) s.triggers = s.triggers.filter((t) => t !== trigger);
  }

  private rulesFor(from: ModelState, on: ModelTrigger): ModelTransition[] {
    return this.model.sessions.transitions.filter((t) => t.from === from && t.on === on);
  }

  /** Draws which state a trigger moves the session to, and after how many of its cycles. */
  private plan(trigger: Trigger, from: ModelState): Trigger['plan'] {
    if (trigger.plan && trigger.plan.from === from) return trigger.plan;
    const rules = this.rulesFor(from, trigger.on);
    if (rules.length === 0) return undefined;
    const total = rules.reduce((a, r) => a + r.samples, 0);
    let pick = this.rng.next() * total;
    let rule = rules[0]!;
    for (const r of rules) {
      pick -= r.samples;
      if (pick < 0) {
        rule = r;
        break;
      }
    }
    trigger.plan = { lag: this.drawHistogram(rule.afterCycles, 1), to: rule.to, from };
    return trigger.plan;
  }

  private drawHistogram(histogram: Record<string, number>, fallback: number): number {
    const entries = Object.entries(histogram).map(([k, n]) => [Number(k), n] as const);
    const total = entries.reduce((a, [, n]) => a + n, 0);
    if (total === 0) return fallback;
    let pick = this.rng.next() * total;
    for (const [value, n] of entries) {
      pick -= n;
      if (pick < 0) return value;
    }
    return entries.at(-1)![0];
  }

  /** A non-negative count for a mean: its whole part, plus one with the chance of its fraction. */
  private draw(mean: number): number {
    const whole = Math.floor(Math.abs(mean));
    const n = whole + (this.rng.next() < Math.abs(mean) - whole ? 1 : 0);
    return Math.sign(mean) * n;
  }

  /** One session's part of a cycle: the state it ends in, and its calls in order. */
  private planSession(record: SessionRecord): { to: ModelState; calls: string[]; told?: number[] } {
    const s = this.stateOf(record.id);
    const from = record.state as ModelState;
    let to = from;
    for (const trigger of s.triggers) trigger.seen++;
    // The latest news first: a PR found in the same cycle as the spawn is what the session shows.
    for (const trigger of [...s.triggers].reverse()) {
      const planned = this.plan(trigger, from);
      // A rule of lag 0 for the state the session is in now: outside the cycle, after its delay.
      if (planned && planned.lag === 0) {
        if (!planned.scheduled) this.changeOutsideCycle(record.id, trigger, planned);
        continue;
      }
      if (planned && planned.lag > 0 && trigger.seen >= planned.lag) {
        to = planned.to;
        this.moved(s, trigger);
        break;
      }
    }
    s.triggers = s.triggers.filter((t) => t.seen < TRIGGER_PATIENCE);
    const exact = this.profiles.get(`${from}→${to}`);
    const profile =
      exact ??
      this.profiles.get(`${from}→${from}`) ??
      this.model.sessions.cycles.find((p) => p.from === from)?.calls ??
      [];
    // Coverage: from a profile the model saw, unless it is one of the first cycles after an event it never saw.
    for (const u of s.unseen) u.seen++;
    s.unseen = s.unseen.filter((u) => u.seen <= UNSEEN_EVENT_CYCLES);
    this.covered.sessionCycles++;
    const part =
      exact === undefined
        ? `${from} → ${to}`
        : s.unseen.length > 0
          ? `after ${s.unseen[0]!.on}`
          : this.hooks.wholeRunGap;
    if (part !== undefined)
      this.covered.extrapolated.set(part, (this.covered.extrapolated.get(part) ?? 0) + 1);
    const counts = new Map<string, number>();
    const order: string[] = [];
    const add = (calls: ModelCalls) => {
      for (const c of calls) {
        if (!counts.has(c.operation)) order.push(c.operation);
        counts.set(c.operation, (counts.get(c.operation) ?? 0) + this.draw(c.mean));
      }
    };
    add(profile);
    for (const event of s.recent) {
      event.seen++;
      const extra = this.model.events.find((e) => e.on === event.on && e.afterCycle === event.seen);
      if (extra) add(extra.perSession);
    }
    s.recent = s.recent.filter((e) => this.model.events.some((x) => x.on === e.on && x.afterCycle > e.seen));
    const calls: string[] = [];
    for (const op of order) for (let i = counts.get(op)!; i > 0; i--) calls.push(op);
    this.covered.planned += calls.length;
    let told: number[] | undefined;
    if (s.review) {
      s.review.seen++;
      if (s.review.seen >= s.review.lag) {
        told = s.review.commentIds;
        s.review = undefined;
      }
    }
    return { to, calls, ...(told ? { told } : {}) };
  }

  /** The shared calls of one loop's cycle: per project, and per repository with sessions. */
  private planShared(loop: string, repos: readonly string[]): Array<{ operation: string; repo: string }> {
    const since = (this.loopsSinceRestart.get(loop) ?? Number.POSITIVE_INFINITY) + 1;
    this.loopsSinceRestart.set(loop, since);
    const out: Array<{ operation: string; repo: string }> = [];
    const project = repos[0]!;
    const counts = new Map<string, number>();
    const add = (calls: ModelCalls) => {
      for (const c of calls) counts.set(c.operation, (counts.get(c.operation) ?? 0) + this.draw(c.mean));
    };
    add(this.model.shared.perProject);
    const restart = this.model.events.find((e) => e.on === 'restart' && e.afterCycle === since);
    if (restart) add(restart.perProject);
    for (const [operation, n] of counts) for (let i = 0; i < n; i++) out.push({ operation, repo: project });
    for (const repo of repos)
      for (const c of this.model.shared.perRepo)
        for (let i = this.draw(c.mean); i > 0; i--) out.push({ operation: c.operation, repo });
    this.covered.planned += out.length;
    return out;
  }

  /** A learned call as a request: the learned protocol, route and points, for this session or repo. */
  async call(
    client: GitHubClient | CallCounter,
    operation: string,
    attr: CallAttribution,
    where: { repo: string; session?: SessionRecord },
  ): Promise<GitHubResult | undefined> {
    const op = this.model.operations[operation];
    if (!op) return undefined;
    this.covered.made++;
    const named: CallAttribution = { ...attr, op: op.op };
    if (op.protocol === 'graphql') return client.graphql(this.graphqlCarrier(op, where), named);
    const path = this.restCarrier(op, where);
    const key = `${operation}|${where.session?.id ?? where.repo}`;
    const conditional = op.points < 0.5;
    const result = await client.get(path, named, conditional ? this.etags.get(key) : undefined);
    if (conditional && result?.etag) this.etags.set(key, result.etag);
    return result;
  }

  /**
   * A GraphQL query of the learned cost: one point for a small read; k points (GitHub's cost, docs
   * on rate limits: 1 + 100 + 100·(k−1) requests, /100) for k−1 review threads of 100 PRs.
   */
  private graphqlCarrier(op: ModelOperation, where: { repo: string; session?: SessionRecord }): string {
    const { owner, name } = split(where.repo);
    const repo = `repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)})`;
    const points = this.draw(op.points);
    if (points >= 2)
      return `query { ${repo} { pullRequests(first: 100) { nodes { reviewThreads(first: ${Math.min(100, points - 1)}) { nodes { comments(first: 1) { totalCount } } } } } } }`;
    const pr = where.session?.pr;
    return pr
      ? `query { ${repo} { pullRequest(number: ${pr.number}) { number state } } }`
      : `query { ${repo} { name } }`;
  }

  /** The learned route with this session's things in it; a repository read where it has none of them. */
  private restCarrier(op: ModelOperation, where: { repo: string; session?: SessionRecord }): string {
    const { owner, name } = split(where.repo);
    const s = where.session;
    const values: Record<string, string | undefined> = {
      owner,
      repo: name,
      pull_number: s?.pr ? String(s.pr.number) : undefined,
      number: s?.pr ? String(s.pr.number) : undefined,
      issue_number: s ? String(s.issue) : undefined,
      ref: s?.pr?.headSha || undefined,
      sha: s?.pr?.headSha || undefined,
      commit_sha: s?.pr?.headSha || undefined,
      branch: s?.branch,
    };
    let missing = false;
    const path = op.route.replace(/\{([a-z_]+)\}/g, (_, key: string) => {
      const value = values[key];
      if (value === undefined) missing = true;
      return encodeURIComponent(value ?? '');
    });
    return missing ? `/repos/${owner}/${name}` : path;
  }

  /**
   * One loop's cycle: its shared calls, then its sessions at once (at most `loop.parallel`), each
   * making its profile's calls one after another, through the client's time per call.
   */
  async runCycle(
    env: PollEnv,
    sessions: SessionRecord[],
    cycle: number,
    loop: string,
    clientTime: ClientTime,
    limiterFor: (n: number) => { all<T>(tasks: Array<() => Promise<T>>): Promise<T[]> },
  ): Promise<CycleStats> {
    const calls = new CallCounter(env);
    // The machine's other load: this cycle's client CPU is slower or faster by a learned spread.
    const spread = this.model.cycleTime.cycleSpread;
    const slowdown = spread > 1 ? this.rng.lognormal(1, spread) : 1;
    const timed = async (
      operation: string,
      attr: CallAttribution,
      where: { repo: string; session?: SessionRecord },
    ) => {
      await clientTime.beforeCall(slowdown);
      if (!env.alive()) return undefined;
      return this.call(calls, operation, attr, where);
    };
    if (sessions.length > 0) {
      const repos = [...new Set(sessions.map((s) => s.repo))].sort();
      for (const shared of this.planShared(loop, repos))
        await timed(shared.operation, env.attr(shared.operation, undefined, cycle), { repo: shared.repo });
    }
    const parallel = this.model.loop.parallel === 0 ? Math.max(1, sessions.length) : this.model.loop.parallel;
    await limiterFor(parallel).all(
      sessions.map((session) => async () => {
        const plan = this.planSession(session);
        for (const operation of plan.calls) {
          if (!env.alive()) return;
          await timed(operation, env.attr(operation, session, cycle), { repo: session.repo, session });
        }
        if (!env.alive()) return;
        if (plan.to !== session.state) this.hooks.setState(session, plan.to);
        if (plan.told) this.hooks.reviewTold(session, plan.told);
      }),
    );
    return { calls: calls.calls };
  }

  /** The agent's calls after it is told of a review: per review, then per comment (replies to each). */
  agentCalls(): { perReaction: ModelCalls; perComment: ModelCalls } {
    return {
      perReaction: this.model.sessions.review?.perReaction ?? [],
      perComment: this.model.sessions.review?.perComment ?? [],
    };
  }

  operation(key: string): ModelOperation | undefined {
    return this.model.operations[key];
  }

  countOf(mean: number): number {
    return Math.max(0, this.draw(mean));
  }
}
