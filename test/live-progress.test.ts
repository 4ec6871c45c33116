/** The progress line of a live run shows native runs and a restart under way. */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/clock/virtual.ts';
import type { Target } from '../src/contract/types.ts';
import { ProgressLine } from '../src/live/progress.ts';
import { LiveStats } from '../src/live/stats.ts';

describe('the live progress line', () => {
  it('counts native runs and turns, and says when a restart is under way', async () => {
    const stats = new LiveStats();
    const event = (name: string, t: number) => stats.add({ kind: 'event', name, t, session: 's-1' });
    for (let i = 0; i < 3; i++) event('run.created', i);
    event('run.ended', 4);
    for (let i = 0; i < 5; i++)
      stats.add({ kind: 'span', name: 'run.turn', t: i, dur: 1, outcome: 'ok', session: 's-1' });
    event('controlplane.restart', 10);
    const target = { sessionCounts: async () => ({ working: 3 }) } as unknown as Target;
    const line = () =>
      new ProgressLine({
        clock: new VirtualClock(),
        durationMs: 60_000,
        stats,
        target,
        out: { write: () => true },
      }).line();
    expect(await line()).toContain('sessions working 3 · calls 0.0/s (0)');
    expect(await line()).toContain('runs 2 active (3 started, 5 turns) · restarts 1 (restarting)');
    event('controlplane.ready', 12);
    expect(await line()).toMatch(/restarts 1$/);
  });
});
