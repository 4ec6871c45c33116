/**
 * The poll loop's overrun rule, read off its `poll.cycle` spans (docs/model.md#the-overrun-rule):
 * after a cycle that outlasted its interval, does the loop's next cycle start on the interval's
 * grid (the ticks that came during the cycle were skipped, as a setInterval with a busy guard
 * does) or right when the overrunning cycle ended (a loop that starts the next cycle at once)?
 */
import { defaultOverrunRule, type OverrunRule } from '../model/words.ts';

/** One recorded cycle of a loop (`loop`: its project, or '' for one loop for all). */
export interface LoopCycle {
  loop: string;
  t: number;
  end: number;
  intervalMs: number | undefined;
}

/** How the cycles after overruns started: on the grid, at once, or neither (unclear). */
export interface OverrunVotes {
  skip: number;
  immediate: number;
  unclear: number;
}

/** Fewer overruns that tell than this, and the traces are not taken to show a rule. */
export const OVERRUN_VOTES_NEEDED = 3;
/** A start this close to the previous cycle's end is "at once": 5 % of the interval, at most 1 s. */
const IMMEDIATE_SHARE = 0.05;
const IMMEDIATE_MAX_MS = 1_000;
/**
 * A start this close to a whole number of intervals after the previous one is on the grid: a
 * loaded Node event loop fires setInterval ticks late and the lateness carries over to the next
 * ticks (agent-orchestrator's drifted by up to 3.5 s a tick at 30 s on a loaded machine).
 */
const GRID_SHARE = 0.2;

/**
 * Votes of every overrunning cycle followed by another of its loop in the same life of the
 * control plane (`restarts`: when it came back; a restart starts a new grid).
 */
export function overrunVotes(cycles: readonly LoopCycle[], restarts: readonly number[]): OverrunVotes {
  const votes: OverrunVotes = { skip: 0, immediate: 0, unclear: 0 };
  const byLoop = new Map<string, LoopCycle[]>();
  for (const c of cycles) {
    const list = byLoop.get(c.loop);
    if (list) list.push(c);
    else byLoop.set(c.loop, [c]);
  }
  for (const list of byLoop.values()) {
    list.sort((a, b) => a.t - b.t);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1]!;
      const next = list[i]!;
      const interval = prev.intervalMs;
      if (interval === undefined || interval <= 0 || prev.end - prev.t <= interval) continue;
      // The restarted loop's first cycle may be recorded a moment before its `controlplane.ready`.
      if (restarts.some((r) => r > prev.end && r < next.end)) continue;
      const ticks = Math.round((next.t - prev.t) / interval);
      // At once is decisive: under `skip` it needs the overrun to end just before a tick.
      if (next.t - prev.end <= Math.min(IMMEDIATE_MAX_MS, IMMEDIATE_SHARE * interval)) votes.immediate++;
      else if (ticks >= 2 && Math.abs(next.t - prev.t - ticks * interval) <= GRID_SHARE * interval)
        votes.skip++;
      else votes.unclear++;
    }
  }
  return votes;
}

/** The rule the votes show, and the fit note that says how it was decided. */
export function decideOverrun(
  votes: OverrunVotes,
  targets: ReadonlyArray<string | null>,
): { rule: OverrunRule; note: string } {
  const told = votes.skip + votes.immediate;
  const seen = `${told + votes.unclear} overrunning cycle${told + votes.unclear === 1 ? '' : 's'} followed by another`;
  const counts = `${votes.skip} on the interval's grid, ${votes.immediate} at once, ${votes.unclear} unclear`;
  if (told < OVERRUN_VOTES_NEEDED || votes.skip === votes.immediate) {
    const rule = defaultOverrunRule(targets);
    const why = rule === 'skip' ? "agent-orchestrator's" : "the reference loop's";
    const which = told < OVERRUN_VOTES_NEEDED ? 'too few overruns to tell' : 'the overruns disagree';
    return {
      rule,
      note: `loop.overrun ${rule}: ${which} (${seen}: ${counts}); ${rule} is ${why}, the default for these traces`,
    };
  }
  const rule: OverrunRule = votes.skip > votes.immediate ? 'skip' : 'immediate';
  return { rule, note: `loop.overrun ${rule}: ${seen}, ${counts}` };
}
