/**
 * The reference strategy `ao-0.2` against the counts read off agent-orchestrator 0.2.0's source
 * (scm-github's getPRState/getCISummary/getReviewDecision/getMergeability, the lifecycle
 * manager's review backlog), for S2 (PRs open, CI green, no review):
 *   legacy gh: pr view state (1) + checks refused, pr view state again (1) → ci_failed;
 *              review threads (1 GraphQL) + inline comments (1 REST) = 3 GraphQL + 1 core = 4.
 *   current gh: pr view state (1) + pr checks (1, SUCCESS) + pr view reviewDecision (1);
 *              REVIEW_REQUIRED (the fixture repos require a review) skips mergeability;
 *              review threads (1) + inline comments (1 REST) = 4 GraphQL + 1 core = 5.
 */
import { describe, expect, it } from 'vitest';
import { runRef } from './helpers/run.ts';

const sets = (gh: string) => [
  'polling.strategy=ao-0.2',
  `polling.ao-gh=${gh}`,
  'duration=5m',
  'markers.steady-start=2m',
];

describe('reference strategy ao-0.2 (agent-orchestrator 0.2.0)', () => {
  it('legacy gh: 4 calls per session per cycle, 3 GraphQL and 1 core, none conditional', async () => {
    const { analysis } = await runRef('S2-T1-5', sets('legacy'));
    const floor = analysis.api.pollingFloor.steady!.perSessionCycle;
    expect(floor.all!.mean).toBe(4);
    expect(floor.graphql!.mean).toBe(3);
    expect(floor.core!.mean).toBe(1);
    expect(analysis.api.totals.conditional).toBe(0);
  });

  it('current gh: 5 calls per session per cycle (checks and review decision, no mergeability)', async () => {
    const { analysis } = await runRef('S2-T1-5', sets('current'));
    const floor = analysis.api.pollingFloor.steady!.perSessionCycle;
    expect(floor.all!.mean).toBe(5);
    expect(floor.graphql!.mean).toBe(4);
    expect(floor.core!.mean).toBe(1);
  });

  it('gh process time queues on the cores: 20 calls × 500 ms on 2 cores make a cycle of at least 5 s', async () => {
    const { analysis } = await runRef('S2-T1-5', [
      ...sets('legacy'),
      'polling.ao-gh-process=500ms',
      'polling.ao-cpus=2',
    ]);
    const cycles = analysis.controlPlane.pollCycles!;
    // 5 sessions × 4 calls = 20 gh processes a cycle, 500 ms of CPU each, 2 at a time: ≥ 5,000 ms.
    expect(cycles.durationMs!.p50!).toBeGreaterThanOrEqual(5_000);
    // And the quota is unchanged: the same 4 calls per session per cycle.
    expect(analysis.api.pollingFloor.steady!.perSessionCycle.all!.mean).toBe(4);
  });
});
