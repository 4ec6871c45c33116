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
import { modelTriggers } from './words.ts';

/**
 * A trigger moves its session at most this many times (a chain of changes one cause explains:
 * src/reference/polling-learned.ts keeps the same bound).
 */
export const TRIGGER_MOVES = 4;

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
  /** Repositories the sessions are spread over. */
  repos: number;
  /** The replay's poll interval. */
  intervalMs: number;
  /** The machine the replay is told (host.cores, host.load), when it is told one. */
  host?: { cores?: number; load?: number };
}

/** Where an event left a session: its state, and the change that brought it there within the same moment. */
interface Place {
  state: ModelState;
  /** The last change of the chain: its lag (0: outside any cycle) and the state it left. */
  before?: { lag: number; from: ModelState };
}

/** One part of a replay the model never saw. */
export interface CoverageGap {
  /** Short: `spawning → spawning`, `event review-posted`, `restart graceful`, `repositories 10`. */
  part: string;
  /** What it is, in words. */
  what: string;
  /** It concerns the whole replay (its repositories, interval, machine): every session-cycle is made beyond what the model saw. */
  wholeRun?: boolean;
}

/**
 * How far a replay's poll interval may be from those the model's traces ran at, either way: a
 * cycle's calls are per cycle at any pace, but what a control plane caches for a while (TTLs,
 * ETags, a check every few cycles) is learned at the pace it was seen at. The `learn` teaching
 * run polls every 10 s, the cells it predicts every 30 s.
 */
export const INTERVAL_FACTOR = 4;

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/**
 * The parts of a replay beyond what the model saw that concern the whole run: more repositories
 * than its traces had, a poll interval far from theirs, a model whose calls take no client time
 * (a cycle is then only its requests' latency: it never overruns, whatever the machine), or a
 * machine told to a model whose client time is not CPU (host.load and host.cores then change
 * nothing). A model written before these were recorded is checked where it can be.
 */
export function runGaps(model: Model, world: ReplayWorld): CoverageGap[] {
  const gaps: CoverageGap[] = [];
  const whole = (part: string, what: string) => gaps.push({ part, what, wholeRun: true });
  const repos = model.coverage?.repos;
  if (repos !== undefined && repos > 0 && world.repos > repos)
    whole(
      `repositories ${world.repos}`,
      `${world.repos} repositories, more than the ${repos} its traces had: ${model.loop.scope === 'project' ? 'a poll loop per repository, all on the same cores, and ' : ''}the calls of each repository beyond them`,
    );
  const seen =
    model.coverage?.intervalMs ??
    (model.loop.intervalMs ? { min: model.loop.intervalMs, max: model.loop.intervalMs } : undefined);
  if (
    seen &&
    seen.min > 0 &&
    (world.intervalMs > seen.max * INTERVAL_FACTOR || world.intervalMs * INTERVAL_FACTOR < seen.min)
  )
    whole(
      `interval ${seconds(world.intervalMs)}`,
      `a poll interval of ${seconds(world.intervalMs)}, more than ${INTERVAL_FACTOR} times from the ${seen.min === seen.max ? seconds(seen.min) : `${seconds(seen.min)} to ${seconds(seen.max)}`} its traces ran at: what a cycle re-reads or caches at that pace was never seen`,
    );
  const ct = model.cycleTime;
  const onCores = ct.cpuMsPerCall + ct.launchMsPerCall + ct.spawnCpuMs > 0;
  if (model.sessions.cycles.length > 0 && !onCores && ct.waitMsPerCall === 0)
    whole(
      'client time',
      'no client time: its traces’ cycles were fitted to none (cycleTime all 0), so a replayed cycle is only its requests’ latency and never outlasts its interval, whatever the machine',
    );
  else if (!onCores && world.host && (world.host.load !== undefined || world.host.cores !== undefined))
    whole(
      'host',
      `the machine told (${[world.host.cores !== undefined ? `host.cores ${world.host.cores}` : '', world.host.load !== undefined ? `host.load ${world.host.load}` : ''].filter(Boolean).join(', ')}) changes nothing: its client time is not CPU (no launch or CPU per call), so no load or core count slows it`,
    );
  return gaps;
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
  const dwell = (states: Iterable<ModelState>, while_: string) => {
    for (const s of states)
      if (!TERMINAL.has(s)) profile(s, s, `a session polled in ${s} ${while_}, staying there`);
  };
  /**
   * An event on sessions where `states` left them: where it leaves them. A trigger moves a session
   * on from each state it reaches while a rule of the model says so (the replay's rule, at most
   * TRIGGER_MOVES changes), so the walk follows that chain. A rule's lag counts the session's
   * cycles from the event: the cycles before the change find it where the last change left it,
   * or, after a change outside any cycle (lag 0, at some time), in either of the two states. An
   * event at the same moment as the one before it (a PR opened at its session's spawn) finds the
   * session where that one's chain left it, in the same way.
   */
  const step = (states: readonly Place[], on: ModelTrigger): Place[] => {
    if (seen[on] === 0) gap(`event ${on}`, `${EVENT_WORDS[on]}: its traces never showed one`);
    const next = new Map<string, Place>();
    const reach = (place: Place) =>
      next.set(`${place.state}|${place.before?.lag}|${place.before?.from}`, place);
    const follow = (place: Place, moves: number) => {
      const { state: from, before } = place;
      const rules = model.sessions.transitions.filter((t) => t.from === from && t.on === on);
      if (rules.length === 0 || moves >= TRIGGER_MOVES) {
        reach(place);
        return;
      }
      for (const rule of rules) {
        const lags = Object.keys(rule.afterCycles).map(Number);
        // A change made in the session's k-th cycle after the event: that cycle moves it.
        if (lags.some((k) => k >= 1))
          profile(
            from,
            rule.to,
            `the cycle that moves a session from ${from} to ${rule.to} after ${EVENT_WORDS[on]}`,
          );
        // Cycles that find it in `from` before this change, staying there.
        if (lags.some((k) => k - Math.max(1, before?.lag ?? 1) >= 1)) {
          const eitherState = before?.lag === 0 && profiles.has(`${before.from}→${before.from}`);
          if (!eitherState) dwell([from], `after ${EVENT_WORDS[on]}`);
        }
        if (rule.to === from) reach(place);
        else follow({ state: rule.to, before: { lag: Math.min(...lags), from } }, moves + 1);
      }
    };
    for (const place of states) follow(place, 0);
    return [...next.values()];
  };
  let states: Place[] = [{ state: 'spawning' }];
  const polled = new Set<ModelState>();
  /** After an event: the states it left sessions in, polled there for a while or met at once by the next. */
  const after = (next: Place[], dwells: boolean, while_: string): Place[] => {
    if (!dwells) return next;
    const reached = [...new Set(next.map((p) => p.state))];
    dwell(reached, while_);
    for (const s of reached) polled.add(s);
    return reached.map((state) => ({ state }));
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
    step(
      [...polled].map((state) => ({ state })),
      'restart',
    );
    const kinds = restartCounts(model);
    for (const kind of new Set(world.restarts))
      if (model.coverage && !kinds[kind])
        gap(
          `restart ${kind}`,
          `a ${kind} restart: its traces never showed one (its outage is the reference’s default)`,
        );
  }
  if (world.merges) step(states, 'merged');
  return [...gaps.values(), ...runGaps(model, world)];
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
    if (g.part.startsWith('repositories '))
      extra.push(`as many repositories: --set topology.repos=${g.part.slice('repositories '.length)}`);
    if (g.part.startsWith('interval '))
      extra.push(
        `the replay's interval: --set polling.interval=${g.part.slice('interval '.length).replace(' ', '')}`,
      );
    if (g.part === 'client time' || g.part === 'host')
      extra.push(
        'a target whose calls take time on its machine, timed on the real clock (--target ao, http, module)',
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
