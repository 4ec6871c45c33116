/** Sessions by state, as `Target.sessionCounts` answers, from a target's own map of states. */
import type { SessionState } from '../contract/types.ts';

export function countSessionStates(states: Iterable<SessionState>): Partial<Record<SessionState, number>> {
  const counts: Partial<Record<SessionState, number>> = {};
  for (const state of states) counts[state] = (counts[state] ?? 0) + 1;
  return counts;
}
