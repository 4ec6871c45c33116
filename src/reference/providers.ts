/**
 * Provider profiles for native runs (docs/reference-control-plane.md#native-runs-and-providers): how long a `claude`, `codex` or `opencode` agent
 * takes to boot, to load a saved session and to show its first activity, and what it does in a
 * turn. The numbers are chosen so that the reference control plane's own runs land on the
 * baselines behind the `native-speed` budget set (a budget is about 1.2 × its baseline; the
 * table is in docs/budgets.md#built-in-sets and budgets/native-speed.yaml): a default run passes its budgets with the
 * margin a real baseline has, and a deliberately slowed provider or control plane does not.
 *
 * Start kinds: `cold` is a new provider session (nothing to load); `warm` resumes the session a
 * previous run on the same fleet session saved, so its boot includes a `provider.session.load`.
 * Session load time grows with the saved session's size and with how many loads run at once.
 * Pure functions of a seeded Rng: the run manager (runs.ts) decides when they are drawn.
 */

import type { Rng } from '../base/rng.ts';
import type { Adapter } from '../contract/types.ts';

export type StartKind = 'cold' | 'warm';

/** A latency as profiles state it: log-normal with this median and p95 (ms). */
export interface Latency {
  median: number;
  p95: number;
}

/** What an item in a turn is (the `item` label of provider events). */
export type ItemKind = 'reasoning' | 'text' | 'tool_call';

export interface ProviderProfile {
  adapter: Adapter;
  /** Process start → ready, new session (start `cold`). */
  bootCold: Latency;
  /** Process start → ready to load the saved session (start `warm`); the load comes on top. */
  bootWarmProcess: Latency;
  /** `provider.session.load` of a session of `loadRefBytes`, with no other load running. */
  load: Latency;
  loadRefBytes: number;
  /** Each other session load in progress makes this one slower by this share. */
  loadContention: number;
  /**
   * Extra load time when the saved session was not closed cleanly (a hard kill, a crash, a
   * drain that timed out): the provider replays and repairs the transcript before it resumes.
   */
  replay: Latency;
  /** The turn is submitted → the first activity a user sees, by start kind. */
  firstActivity: Record<StartKind, Latency>;
  /** What the first activity is, as weights: tool-first agents call tools before they write. */
  habits: Record<ItemKind, number>;
  /** Between two provider events inside an item or turn. */
  eventGap: Latency;
  /** A tool execution (started → completed). */
  toolRun: Latency;
  /** Items per turn (inclusive range). */
  itemsPerTurn: [number, number];
  /** How much a turn adds to the saved session (bytes, uniform). */
  bytesPerTurn: [number, number];
  /**
   * Probability that, on a resume, the provider says `session.resumed` before its load span
   * ends (it streams the tail of the history afterwards): the `provider.session.load` span is
   * then written after the provider's next event, which is what judging has to wait for.
   */
  resumeBeforeLoadEnd: number;
  /**
   * The warm boot loads the saved session itself, with no `provider.session.load` of its own (a
   * learned profile of a provider that reports none: docs/model.md#speed). Recoveries still load.
   */
  warmBootHoldsLoad?: boolean;
}

const s = (median: number, p95: number): Latency => ({ median: median * 1000, p95: p95 * 1000 });

/**
 * Calibrated against the native-speed baselines (budget ÷ 1.2), with a margin: a cold boot sits
 * at about 0.85 × its baseline (0.7 × the budget), so a p95 over the few cold starts of a wave
 * stays inside the budget; warm boots and recoveries are slower in a wave than alone (bigger
 * sessions, loads running at once) and land near their baselines there. test/providers.test.ts
 * checks both: the profiles sampled alone, and the six built-in chaos waves judged.
 */
export const PROVIDER_PROFILES: Record<Adapter, ProviderProfile> = {
  claude: {
    adapter: 'claude',
    bootCold: s(6.6, 14.5),
    bootWarmProcess: s(0.55, 8),
    load: s(1.1, 1.8),
    loadRefBytes: 1_000_000,
    loadContention: 1.2,
    replay: s(6, 9.5),
    firstActivity: { cold: s(4.2, 9.5), warm: s(2.8, 9) },
    habits: { tool_call: 0.55, reasoning: 0.15, text: 0.3 },
    eventGap: s(0.35, 1.5),
    toolRun: s(2.5, 9),
    itemsPerTurn: [3, 7],
    bytesPerTurn: [40_000, 110_000],
    resumeBeforeLoadEnd: 0.4,
  },
  codex: {
    adapter: 'codex',
    bootCold: s(1.75, 4.8),
    bootWarmProcess: s(1.6, 8),
    load: s(2.1, 2.6),
    loadRefBytes: 1_000_000,
    loadContention: 0.22,
    replay: s(1.5, 2.3),
    firstActivity: { cold: s(1.4, 9), warm: s(2.6, 10) },
    habits: { tool_call: 0.3, reasoning: 0.6, text: 0.1 },
    eventGap: s(0.25, 1.1),
    toolRun: s(1.8, 7),
    itemsPerTurn: [3, 8],
    bytesPerTurn: [30_000, 90_000],
    resumeBeforeLoadEnd: 0.5,
  },
  opencode: {
    adapter: 'opencode',
    bootCold: s(8.8, 26),
    bootWarmProcess: s(4.5, 30),
    load: s(6, 8.5),
    loadRefBytes: 1_000_000,
    loadContention: 0.6,
    replay: s(10, 16),
    firstActivity: { cold: s(2.7, 13), warm: s(2.4, 13) },
    habits: { tool_call: 0.4, reasoning: 0.1, text: 0.5 },
    eventGap: s(0.45, 2),
    toolRun: s(3, 12),
    itemsPerTurn: [2, 6],
    bytesPerTurn: [30_000, 100_000],
    resumeBeforeLoadEnd: 0.3,
  },
};

export function draw(latency: Latency, rng: Rng): number {
  return latency.p95 <= latency.median ? latency.median : rng.lognormal(latency.median, latency.p95);
}

/**
 * `provider.session.load` duration: the profile's load at the reference size, scaled linearly
 * with the saved session's size (0.4× for an empty one, 1× at the reference, 1.6× at twice
 * it), and by (1 + contention × other loads in progress).
 */
export function loadDuration(
  profile: ProviderProfile,
  sessionBytes: number,
  concurrentLoads: number,
  rng: Rng,
): number {
  const size = 0.4 + (0.6 * sessionBytes) / profile.loadRefBytes;
  const contention = 1 + profile.loadContention * Math.max(0, concurrentLoads - 1);
  return draw(profile.load, rng) * size * contention;
}

/** The kind of the first item of a turn, by the provider's habits. */
export function firstItemKind(profile: ProviderProfile, rng: Rng): ItemKind {
  const { tool_call, reasoning, text } = profile.habits;
  const x = rng.next() * (tool_call + reasoning + text);
  if (x < tool_call) return 'tool_call';
  if (x < tool_call + reasoning) return 'reasoning';
  return 'text';
}

/** Later items: a coding agent alternates tool calls and text, with some reasoning. */
export function laterItemKind(rng: Rng): ItemKind {
  const x = rng.next();
  return x < 0.5 ? 'tool_call' : x < 0.8 ? 'text' : 'reasoning';
}

/** The latencies a learned speed profile replaces (docs/model.md#speed); the rest stays the adapter's. */
export type LearnedLatencies = Partial<
  Pick<
    ProviderProfile,
    'bootCold' | 'bootWarmProcess' | 'load' | 'loadContention' | 'replay' | 'warmBootHoldsLoad'
  > & {
    firstActivity: Partial<Record<StartKind, Latency>>;
  }
>;

/** An adapter's profile, with a learned profile's latencies over its own where there are any. */
export function profileFor(adapter: Adapter, learned?: LearnedLatencies): ProviderProfile {
  const base = PROVIDER_PROFILES[adapter];
  if (!learned) return base;
  const { firstActivity, ...rest } = learned;
  return { ...base, ...rest, firstActivity: { ...base.firstActivity, ...firstActivity } };
}
