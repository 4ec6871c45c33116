/**
 * What a learned model covers (docs/model.md#coverage): the states its sessions were polled in,
 * the events that happened to them, the restarts and the scale its traces showed. Before a replay
 * runs, the run's world (what its scenario will make happen to each session) is walked through
 * the model's transitions: every state a session would be polled in, every cycle that would move
 * it and every event it would meet must have been seen, or the replay would invent it from the
 * nearest profile. Such a replay is refused unless extrapolation is allowed; the replay then
 * counts the session-cycles it made from profiles the model never saw (src/reference/polling-learned.ts).
 */
import type { Model, ModelCoverage, ModelState, ModelTrigger } from './format.ts';
import { modelTriggers } from './format.ts';

/** Restart kinds a run can make (the contract's; repeated here, below the contract layer's users). */
export type ReplayRestartKind = 'hard' | 'graceful' | 'hot';

/** What a run's scenario will make happen to its sessions, as far as a learned replay is concerned. */
export interface ReplayWorld {
  /** Sessions the run starts. */
  sessions: number;
  /** Sessions per poll loop at most (a per-project model polls each repository on its own). */
  sessionsPerLoop: number;
  /** A session can be polled before its PR opens (the PR opens some time after the spawn). */
  prLater: boolean;
  /** CI completes some time after a push (a `ci-completed` event); at once, there is none. */
  ciLater: boolean;
  /** Review bursts; each reviewed session's agent then pushes a fix. */
  reviews: boolean;
  /** The fix comes some time after the review. */
  fixLater: boolean;
  /** PRs are merged. */
  merges: boolean;
  restarts: readonly ReplayRestartKind[];
}

/** One part of a replay the model never saw. */
export interface CoverageGap {
  /** Short: `spawning → spawning`, `event review-posted`, `restart graceful`. */
  part: string;
  /** What it is, in words. */
  what: string;
}

/**
 * How many times the traces showed each event (the model's coverage). An older model did not
 * record them: an event its rules or rows name was seen (as often as they say), any other is
 * unknown (undefined), neither seen nor unseen: only its states are checked.
 */
export function eventCounts(model: Model): Record<ModelTrigger, number | undefined> {
  const out = Object.fromEntries(modelTriggers.map((on) => [on, model.coverage ? 0 : undefined])) as Record<
    ModelTrigger,
    number | undefined
  >;
  if (model.coverage) {
    for (const on of modelTriggers) out[on] = model.coverage.events[on] ?? 0;
    return out;
  }
  const seen = (on: ModelTrigger, n: number) => {
    if (n > 0) out[on] = Math.max(out[on] ?? 0, n);
  };
  for (const t of model.sessions.transitions) seen(t.on, t.samples);
  for (const e of model.events) seen(e.on, e.samples);
  if (model.sessions.review) seen('review-posted', model.sessions.review.samples);
  seen('created', model.sessions.spawn.samples);
  seen(
    'restart',
    Object.values(model.restartOutageMs).reduce((a, r) => a + (r?.samples ?? 0), 0),
  );
  return out;
}

/** Restarts by kind the traces showed (an older model: its outages' samples). */
export function restartCounts(model: Model): ModelCoverage['restarts'] {
  if (model.coverage) return model.coverage.restarts;
  const out: ModelCoverage['restarts'] = {};
  for (const [kind, outage] of Object.entries(model.restartOutageMs))
    if (outage) out[kind as ReplayRestartKind] = outage.samples;
  return out;
}

/** The session-cycles the model learned per (state at the start → at the end), by `from→to`. */
export function profileSamples(model: Model): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of model.sessions.cycles) if (p.samples > 0) out.set(`${p.from}→${p.to}`, p.samples);
  return out;
}

const TERMINAL: ReadonlySet<ModelState> = new Set(['merged', 'closed']);

const EVENT_WORDS: Record<ModelTrigger, string> = {
  created: 'a session created (its spawn)',
  'pr-opened': 'a PR opened',
  'ci-completed': 'CI completing',
  'review-posted': 'a review posted',
  pushed: 'a push (the agent’s fix)',
  merged: 'a PR merged',
  restart: 'a control-plane restart',
};

/**
 * The parts of a replay of `world` the model never saw: states a session would be polled in and
 * stay, cycles that would move it, events it would meet, restarts of a kind. Walked through the
 * model's own transitions, in the order the world makes things happen to a session.
 */
export function coverageGaps(model: Model, world: ReplayWorld): CoverageGap[] {
  const seen = eventCounts(model);
  const profiles = profileSamples(model);
  const gaps = new Map<string, CoverageGap>();
  const gap = (part: string, what: string) => {
    if (!gaps.has(part)) gaps.set(part, { part, what });
  };
  const profile = (from: ModelState, to: ModelState, what: string) => {
    if (!profiles.has(`${from}→${to}`)) gap(`${from} → ${to}`, what);
  };
  /** Every state a session polled in must have its stay profile. */
  const dwell = (states: ReadonlySet<ModelState>, while_: string) => {
    for (const s of states)
      if (!TERMINAL.has(s)) profile(s, s, `a session polled in ${s} ${while_}, staying there`);
  };
  /** An event on sessions in `states`: the states it leaves them in. */
  const step = (states: ReadonlySet<ModelState>, on: ModelTrigger): Set<ModelState> => {
    if (seen[on] === 0) gap(`event ${on}`, `${EVENT_WORDS[on]}: its traces never showed one`);
    const next = new Set<ModelState>();
    for (const from of states) {
      const rules = model.sessions.transitions.filter((t) => t.from === from && t.on === on);
      if (rules.length === 0) next.add(from);
      for (const rule of rules) {
        next.add(rule.to);
        const lags = Object.keys(rule.afterCycles).map(Number);
        // A change made in the session's k-th cycle after the event: that cycle moves it, and
        // the cycles before it find it where it was.
        if (lags.some((k) => k >= 1))
          profile(
            from,
            rule.to,
            `the cycle that moves a session from ${from} to ${rule.to} after ${EVENT_WORDS[on]}`,
          );
        if (lags.some((k) => k >= 2)) dwell(new Set([from]), `after ${EVENT_WORDS[on]}`);
      }
    }
    return next;
  };
  let states: Set<ModelState> = new Set(['spawning']);
  const polled = new Set<ModelState>();
  const after = (next: Set<ModelState>, dwells: boolean, while_: string) => {
    if (dwells) {
      dwell(next, while_);
      for (const s of next) polled.add(s);
    }
    return next;
  };
  states = after(step(states, 'created'), world.prLater, 'before its PR opens');
  states = after(step(states, 'pr-opened'), true, 'with its PR open');
  if (world.ciLater) states = after(step(states, 'ci-completed'), true, 'after its CI completed');
  if (world.reviews) {
    states = after(step(states, 'review-posted'), world.fixLater, 'after a review, before the fix');
    states = after(step(states, 'pushed'), true, 'after the fix');
    if (world.ciLater) states = after(step(states, 'ci-completed'), true, 'after the fix’s CI completed');
  }
  if (world.restarts.length > 0) {
    step(polled, 'restart');
    const kinds = restartCounts(model);
    for (const kind of new Set(world.restarts))
      if (model.coverage && !kinds[kind])
        gap(
          `restart ${kind}`,
          `a ${kind} restart: its traces never showed one (its outage is the reference’s default)`,
        );
  }
  if (world.merges) step(states, 'merged');
  return [...gaps.values()];
}

/** The scale the model saw against the replay's, when the replay is beyond it (a line for its header). */
export function scaleNote(model: Model, world: ReplayWorld): string | undefined {
  const seen =
    model.coverage?.scale.sessions ?? Math.max(0, ...model.provenance.traces.map((t) => t.sessions));
  if (seen === 0 || world.sessionsPerLoop <= seen) return undefined;
  return `${world.sessionsPerLoop} sessions a cycle, ${(world.sessionsPerLoop / seen).toFixed(1)} times the ${seen} its traces polled at once: the cycle time is carried beyond the cycles it was fitted on`;
}

/** The teaching scenario that shows what `gaps` name, or what to add to it (docs/model.md#the-teaching-run). */
export function teachingHint(gaps: readonly CoverageGap[]): string {
  const extra: string[] = [];
  for (const g of gaps) {
    if (g.part === 'event merged' || g.part.includes('merged'))
      extra.push('merges: --set sessions.merge-after=1m');
    if (g.part === 'restart graceful' || g.part === 'restart hot')
      extra.push(
        `a ${g.part.slice('restart '.length)} restart: --set faults.1.kind=${g.part.slice('restart '.length)}`,
      );
  }
  const unique = [...new Set(extra)];
  return `the teaching scenario \`learn\` shows sessions polled before their PRs open, PRs opening, CI, a review burst and a hard restart: learn from a run of it (fleetbench run learn --target …; fleetbench model learn TRACE)${unique.length > 0 ? `, with ${unique.join(' and ')}` : ''}; or run anyway with --allow-extrapolation`;
}

/** What the model covers, in a few lines (`model show`, `model learn`). */
export function coverageLines(model: Model): string[] {
  const stays: string[] = [];
  const moves: string[] = [];
  for (const p of model.sessions.cycles)
    (p.from === p.to ? stays : moves).push(
      `${p.from === p.to ? p.from : `${p.from} → ${p.to}`} ${p.samples}`,
    );
  const events = eventCounts(model);
  const seen = modelTriggers.filter((on) => (events[on] ?? 0) > 0);
  const never = modelTriggers.filter((on) => events[on] === 0);
  const unknown = modelTriggers.filter((on) => events[on] === undefined);
  const restarts = Object.entries(restartCounts(model))
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  const scale = model.coverage?.scale;
  return [
    `coverage: sessions polled and staying in ${stays.join(', ') || 'no state'} (session-cycles); cycles that moved them: ${moves.join(', ') || 'none'}`,
    `coverage: events ${seen.map((on) => `${on} ${events[on]}`).join(', ') || 'none'}${restarts ? ` (restarts: ${restarts})` : ''}; ${model.coverage ? `never seen: ${never.join(', ') || 'none'}` : `not recorded: ${unknown.join(', ') || 'none'} (an older model: told from its profiles)`}`,
    ...(scale
      ? [`coverage: at most ${scale.sessions} sessions and ${scale.callsPerCycle} calls in one poll cycle`]
      : []),
  ];
}
