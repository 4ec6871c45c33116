/**
 * The reference control plane's actors (park/wake) on the virtual clock: timings follow the
 * documented model, failures of each kind get their reaction, and both resume modes work.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { VirtualClock } from '../src/clock/index.ts';
import type { ActorStepRequest, FailureRates } from '../src/contract/types.ts';
import { type ActorModel, defaultActorModel } from '../src/reference/actor-model.ts';
import { ActorHost, type ActorHostConfig } from '../src/reference/actors.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { MemorySink } from '../src/trace/writer.ts';

/** The default model with every random part fixed, so durations are exact. */
const exact: ActorModel = {
  ...defaultActorModel,
  suspend: {
    ...defaultActorModel.suspend,
    parkFixed: { median: 300, p95: 300 },
    wakeFixed: { median: 500, p95: 500 },
  },
  pause: {
    ...defaultActorModel.pause,
    parkFixed: { median: 40, p95: 40 },
    wakeFixed: { median: 60, p95: 60 },
  },
  createFixed: { median: 1_000, p95: 1_000 },
  transferNoiseP95: 1,
  stepNoiseP95: 1,
};
const NO_FAILURES: FailureRates = { busy: 0, crashed: 0, notFound: 0 };
const MB = 1e6;
const base = { memoryBytes: 100 * MB, diskBytes: 1_000 * MB };
const max = { memoryBytes: 4_000 * MB, diskBytes: 20_000 * MB };

function host(config: Partial<ActorHostConfig> = {}, model = exact) {
  const clock = new VirtualClock();
  const sink = new MemorySink();
  const actors = new ActorHost({
    clock,
    rng: new Rng(7),
    trace: sink,
    config: { lifecycle: 'suspend', resume: 'implicit', failures: NO_FAILURES, model, ...config },
  });
  /** Runs `fn` on the clock to completion; returns its value and the run time it took. */
  const run = async <T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> => {
    const start = clock.now();
    const p = fn();
    await clock.run();
    return { value: await p, ms: clock.now() - start };
  };
  const spans = (name: string) =>
    sink.records.filter(
      (r): r is Extract<BodyRecord, { kind: 'span' }> => r.kind === 'span' && r.name === name,
    );
  const failures = () =>
    sink.records.filter(
      (r): r is Extract<BodyRecord, { kind: 'event' }> => r.kind === 'event' && r.name === 'actor.failure',
    );
  return { clock, sink, actors, run, spans, failures };
}

const step = (ops: ActorStepRequest['ops'], name = 'work'): ActorStepRequest => ({
  name,
  index: 1,
  ops,
  max,
});

describe('actors: the timing model', () => {
  it('park and wake times grow with memory and disk, as documented', async () => {
    const h = host();
    await h.run(() => h.actors.create('a', base, 'register'));
    // Grow the session: 400 MB more memory, 600 MB written to disk.
    await h.run(() =>
      h.actors.step(
        'a',
        step([
          { op: 'memory-fill', bytes: 400 * MB },
          { op: 'disk-write', bytes: 600 * MB },
        ]),
        'register',
      ),
    );
    expect(h.actors.footprint('a')).toEqual({ memoryBytes: 500 * MB, diskBytes: 1_600 * MB });
    const park = await h.run(() => h.actors.park('a', 'turnover'));
    // 300 ms + 500 MB at 800 MB/s + 600 MB dirty at 200 MB/s.
    expect(park.ms).toBeCloseTo(300 + 625 + 3_000, 6);
    expect(park.value).toEqual({ ok: true, state: 'parked' });
    const wake = await h.run(() => h.actors.wake('a', 'turnover'));
    // 500 ms + 500 MB at 1 GB/s + the 1.6 GB disk's block map at 20 GB/s.
    expect(wake.ms).toBeCloseTo(500 + 500 + 80, 6);
    // Parking again: nothing written since the last snapshot, so only memory moves.
    const again = await h.run(() => h.actors.park('a', 'turnover'));
    expect(again.ms).toBeCloseTo(300 + 625, 6);
    expect(h.spans('actor.park').map((s) => s.data?.dirtyBytes)).toEqual([600 * MB, 0]);
  });

  it('pause is node-local: faster, and the disk does not move', async () => {
    const h = host({ lifecycle: 'pause' });
    await h.run(() => h.actors.create('a', base, 'register'));
    await h.run(() => h.actors.step('a', step([{ op: 'disk-write', bytes: 600 * MB }]), 'register'));
    expect((await h.run(() => h.actors.park('a', 'turnover'))).ms).toBeCloseTo(40 + 100 / 4, 6);
    expect((await h.run(() => h.actors.wake('a', 'turnover'))).ms).toBeCloseTo(60 + 100 / 6, 6);
  });

  it('a step costs its operations; the first request after a wake pays the first touch', async () => {
    const h = host();
    await h.run(() => h.actors.create('a', base, 'register'));
    const ops: ActorStepRequest['ops'] = [
      { op: 'ingest', bytes: 10 * MB }, // 20 ms + 100 ms
      { op: 'cpu', ms: 250 },
      { op: 'disk-read', bytes: 50 * MB }, // 100 ms
      { op: 'ping', count: 3 }, // 3 ms
    ];
    const plain = await h.run(() => h.actors.step('a', step(ops), 'register'));
    expect(plain.ms).toBeCloseTo(4 * 2 + 120 + 250 + 100 + 3, 6);
    expect(h.spans('actor.wake.first_touch')).toHaveLength(0);
    await h.run(() => h.actors.park('a', 'turnover'));
    const woken = await h.run(() => h.actors.step('a', step(ops), 'turnover'));
    const wake = h.spans('actor.wake')[0]!;
    const touch = h.spans('actor.wake.first_touch')[0]!;
    // Implicit: the request woke the session; 25 % of 110 MB paged in at 400 MB/s on the first op.
    expect(wake.labels).toEqual({ mode: 'suspend', resume: 'implicit', phase: 'turnover' });
    expect(touch.t).toBeCloseTo(wake.t + wake.dur, 3);
    expect(touch.dur).toBeCloseTo(2 + 120 + (0.25 * 110 * MB) / ((400 * MB) / 1000), 3);
    expect(woken.ms).toBeCloseTo(wake.dur + plain.ms + (0.25 * 110 * MB) / ((400 * MB) / 1000), 3);
    expect(h.spans('actor.step')).toHaveLength(2);
  });

  it('growth stops at the profile maximum', async () => {
    const h = host();
    await h.run(() => h.actors.create('a', base, 'register'));
    const big = { name: 'big', index: 0, ops: [{ op: 'memory-fill' as const, bytes: 10_000 * MB }], max };
    await h.run(() => h.actors.step('a', big, 'register'));
    expect(h.actors.footprint('a').memoryBytes).toBe(max.memoryBytes);
  });
});

describe('actors: resume modes', () => {
  it('explicit: a request to a parked session is refused; a wake call first', async () => {
    const h = host({ resume: 'explicit' });
    await h.run(() => h.actors.create('a', base, 'register'));
    await h.run(() => h.actors.park('a', 'register'));
    await expect(h.actors.step('a', step([{ op: 'ping', count: 1 }]), 'turnover')).rejects.toThrow(
      /parked: resume-mode explicit needs a wake first/,
    );
    await h.run(() => h.actors.wake('a', 'turnover'));
    await h.run(() => h.actors.step('a', step([{ op: 'ping', count: 1 }]), 'turnover'));
    expect(h.spans('actor.wake')[0]!.labels).toEqual({
      mode: 'suspend',
      resume: 'explicit',
      phase: 'turnover',
    });
    expect(h.spans('actor.wake.first_touch')[0]!.labels).toMatchObject({ resume: 'explicit' });
    expect(h.actors.stateOf('a')).toBe('awake');
  });

  it('lifecycle none never parks', async () => {
    const h = host({ lifecycle: 'none' });
    await h.run(() => h.actors.create('a', base, 'register'));
    await expect(h.actors.park('a', 'turnover')).rejects.toThrow(/never parked/);
  });

  it('registration parks are named apart from turnover parks', async () => {
    const h = host();
    await h.run(() => h.actors.create('a', base, 'register'));
    await h.run(() => h.actors.park('a', 'register'));
    await h.run(() => h.actors.wake('a', 'turnover'));
    await h.run(() => h.actors.park('a', 'turnover'));
    expect(h.spans('actor.park_register')).toHaveLength(1);
    expect(h.spans('actor.park')).toHaveLength(1);
  });
});

describe('actors: failures and reactions', () => {
  it('busy: retried with growing backoff, then given up; the session stays where it was', async () => {
    const h = host({ failures: { busy: 1, crashed: 0, notFound: 0 } });
    const created = await h.run(() => h.actors.create('a', base, 'register'));
    // Even the boot was busy every time: registered, never booted, parked without a snapshot.
    expect(created.value).toEqual({ ok: false, state: 'parked' });
    const f = h.failures();
    expect(f.map((e) => e.labels?.reaction)).toEqual(['retry', 'retry', 'retry', 'give_up']);
    expect(f.every((e) => e.labels?.kind === 'busy' && e.labels?.op === 'create')).toBe(true);
    // 4 busy answers (20 ms) and backoffs of 250, 500, 1000 ms (±20 %).
    const gaps = f.slice(1).map((e, i) => e.t - f[i]!.t - 20);
    expect(gaps[0]).toBeGreaterThanOrEqual(200);
    expect(gaps[0]).toBeLessThanOrEqual(300);
    expect(gaps[2]).toBeGreaterThanOrEqual(800);
    expect(gaps[2]).toBeLessThanOrEqual(1200);
    expect(h.spans('actor.create')[0]!.outcome).toBe('error');
    const wake = await h.run(() => h.actors.wake('a', 'turnover'));
    expect(wake.value).toEqual({ ok: false, state: 'parked' });
    expect(h.spans('actor.wake')[0]).toMatchObject({ outcome: 'error', data: { attempts: 4, cold: true } });
    expect(h.actors.counts()).toEqual({ awake: 0, parked: 1, waking: 0, parking: 0 });
  });

  it('not_found on park: nothing is saved, and the next wake boots a fresh session', async () => {
    const h = host({ failures: { busy: 0, crashed: 0, notFound: 1 } });
    await h.run(() => h.actors.create('c', base, 'register'));
    await h.run(() => h.actors.step('c', step([{ op: 'memory-fill', bytes: 900 * MB }]), 'register'));
    expect(h.actors.footprint('c').memoryBytes).toBe(1_000 * MB);
    const parked = await h.run(() => h.actors.park('c', 'register'));
    // One rule (docs/trace-format.md): an operation answered by a replacement is `ok` with
    // `replaced: true`; only one that failed for good is `error`. The park ends parked (cold).
    expect(parked.value).toEqual({ ok: true, state: 'parked' });
    expect(h.failures()[0]!.labels).toEqual({
      mode: 'suspend',
      op: 'park',
      kind: 'not_found',
      reaction: 'replace',
    });
    expect(h.spans('actor.park_register')[0]).toMatchObject({ outcome: 'ok', data: { replaced: true } });
    expect(h.actors.footprint('c')).toEqual(base);
    // A cold wake boots a fresh session (not_found is not drawn for a boot): 1 s + 1 GB image at 1 GB/s.
    const woke = await h.run(() => h.actors.wake('c', 'turnover'));
    expect(woke.value).toEqual({ ok: true, state: 'awake' });
    expect(woke.ms).toBeCloseTo(2_000, 6);
    expect(h.spans('actor.wake')[0]!.data).toMatchObject({ cold: true, attempts: 1 });
  });

  it('crashed boots are replaced at once, up to the attempt limit', async () => {
    const h = host({ failures: { busy: 0, crashed: 1, notFound: 0 } });
    const created = await h.run(() => h.actors.create('a', base, 'register'));
    expect(created.value).toEqual({ ok: false, state: 'parked' });
    expect(h.failures().map((e) => e.labels?.reaction)).toEqual(['replace', 'replace', 'replace', 'give_up']);
    expect(h.actors.counts()).toEqual({ awake: 0, parked: 1, waking: 0, parking: 0 });
  });

  it('not_found and crashed on a warm wake are replaced', async () => {
    for (const kind of ['crashed', 'notFound'] as const) {
      const h = host();
      await h.run(() => h.actors.create('a', base, 'register'));
      await h.run(() => h.actors.step('a', step([{ op: 'memory-fill', bytes: 400 * MB }]), 'register'));
      await h.run(() => h.actors.park('a', 'register'));
      // Failures from now on: only the wake sees them.
      h.actors.setFailureRates({ ...NO_FAILURES, [kind]: 1 });
      const woke = await h.run(() => h.actors.wake('a', 'turnover'));
      expect(woke.value).toEqual({ ok: true, state: 'awake' });
      const f = h.failures();
      expect(f).toHaveLength(1);
      expect(f[0]!.labels).toMatchObject({
        op: 'wake',
        kind: kind === 'notFound' ? 'not_found' : 'crashed',
        reaction: 'replace',
      });
      expect(h.spans('actor.wake')[0]).toMatchObject({ outcome: 'ok', data: { replaced: true } });
      expect(h.actors.footprint('a')).toEqual(base);
    }
  });
});
