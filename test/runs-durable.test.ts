/**
 * Native runs' durable state (what `reference serve` keeps in runs.json): a new run manager that
 * restores it after a "kill" recovers the runs as the in-process restart does, and request keys
 * make retried calls idempotent. Virtual time, an in-memory RunStore.
 */
import { describe, expect, it } from 'vitest';
import { createRng } from '../src/base/rng.ts';
import { VirtualClock } from '../src/clock/virtual.ts';
import { defaultNativeRunConfig } from '../src/reference/runs/config.ts';
import type { RunStore, RunsSnapshot } from '../src/reference/runs/durable-state.ts';
import { NativeRuns } from '../src/reference/runs/native-runs.ts';
import type { BodyRecord } from '../src/trace/schema.ts';

function setup() {
  const clock = new VirtualClock();
  const records: BodyRecord[] = [];
  let saved: RunsSnapshot | undefined;
  const store: RunStore = {
    loadRuns: () => (saved ? structuredClone(saved) : undefined),
    saveRuns: (snapshot) => {
      saved = structuredClone(snapshot);
    },
  };
  const trace = { write: (r: BodyRecord) => records.push(r) } as never;
  const make = () =>
    new NativeRuns({ clock, trace, rng: createRng(3).fork('runs'), config: defaultNativeRunConfig(), store });
  return { clock, records, store, make, saved: () => saved };
}

describe('native runs: durable state', () => {
  it('a retried start or input with the same key is not done twice', async () => {
    const { clock, make } = setup();
    const runs = make();
    const opened: Array<{ run: string }> = [];
    void (async () => {
      opened.push(await runs.startRun('s-1', 'codex', 'turn 1', 'k1'));
      opened.push(await runs.startRun('s-1', 'codex', 'turn 1', 'k1'));
      await runs.sendInput('s-1', 'turn 2', 'k2');
      await runs.sendInput('s-1', 'turn 2', 'k2');
    })();
    await clock.run({ until: 1_000 });
    expect(opened.map((o) => o.run)).toEqual(['r-0001', 'r-0001']);
    const snapshot = runs.snapshot();
    expect(snapshot.runs).toHaveLength(1);
    // The first input opened the turn or waits with the second: two inputs in all, not three.
    expect(snapshot.runs[0]!.inputs.length + snapshot.runs[0]!.turns).toBe(2);
    runs.stop();
  });

  it('a new process restores the runs after a hard kill and recovers them at ready', async () => {
    const { clock, records, make, saved } = setup();
    const first = make();
    void first.startRun('s-1', 'codex', 'run 1, turn 1', 'a');
    void first.startRun('s-2', 'codex', 'run 1, turn 1', 'b');
    await clock.run({ until: 30_000 });
    const before = saved()!;
    expect(before.runs.map((r) => r.id)).toEqual(['r-0001', 'r-0002']);
    expect(before.runs.every((r) => r.runnerPhase !== 'none')).toBe(true);
    expect(before.saved.length).toBe(2);
    // SIGKILL: the old manager just stops (nothing more is written to the store).
    first.stop();
    const killedAt = clock.now();
    const second = make();
    second.restore('hard');
    expect(saved()!.incarnation).toBe(1);
    expect(saved()!.runs.every((r) => !r.cleanSave && r.runnerPhase === 'none')).toBe(true);
    second.ready('hard');
    await clock.run({ until: killedAt + 20_000 });
    const after = records.filter((r) => r.t >= killedAt);
    const claims = after.flatMap((r) => (r.kind === 'span' && r.name === 'run.claim' ? [r] : []));
    expect(claims.map((r) => [r.data?.run, r.labels?.reason])).toEqual([
      ['r-0001', 'recovery'],
      ['r-0002', 'recovery'],
    ]);
    // Both reload their (unclean) saved session and resume.
    const loads = after.filter((r) => r.kind === 'span' && r.name === 'provider.session.load');
    expect(loads.map((r) => r.kind === 'span' && r.session).sort()).toEqual(['s-1', 's-2']);
    const resumed = after.filter(
      (r) => r.kind === 'event' && r.name === 'provider.event' && r.labels?.type === 'session.resumed',
    );
    expect(resumed).toHaveLength(2);
    // The next run on a session gets the next id: the counter survived too.
    await second.endRun('s-1');
    const next = second.startRun('s-1', 'codex', 'run 2', 'c');
    await clock.run({ until: clock.now() + 5_000 });
    expect((await next).run).toBe('r-0003');
    expect((await next).start).toBe('warm');
    second.stop();
  });

  it('after a hot restart running runners are handed over: reattached, no reload', async () => {
    const { clock, records, make } = setup();
    const first = make();
    void first.startRun('s-1', 'codex', 'turn 1', 'a');
    await clock.run({ until: 20_000 });
    await first.kill('hot');
    first.stop();
    const killedAt = clock.now();
    const second = make();
    second.restore('hot');
    second.ready('hot');
    await clock.run({ until: killedAt + 10_000 });
    const after = records.filter((r) => r.t >= killedAt);
    expect(after.some((r) => r.kind === 'span' && r.name === 'run.runner.attach')).toBe(true);
    expect(after.some((r) => r.kind === 'span' && r.name === 'provider.session.load')).toBe(false);
    expect(after.some((r) => r.kind === 'event' && r.labels?.type === 'session.resumed')).toBe(true);
    second.stop();
  });
});
