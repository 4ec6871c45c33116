/**
 * The turnover executor (docs/scenarios.md#turnover) and its metrics (docs/analysis.md#turnover), on real virtual-time runs of the
 * reference control plane, read back from the trace and analysed by the real analyzer.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analysisSchema } from '../src/analyze/schema.ts';
import { Rng } from '../src/base/rng.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { resolveScenarioRef } from '../src/workload/builtins.ts';
import { thinkDelay } from '../src/workload/executors/turnover.ts';
import { parseOverride } from '../src/workload/load.ts';
import { profileJsonSchema } from '../src/workload/profiles/index.ts';
import { events, runRef, spans } from './helpers/run.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();

/**
 * A small pool: 200 sessions, 40 awake, 8 swaps a second for a minute after the fill. Its window
 * is too small for the turnover budgets to judge (docs/analysis.md#turnover): run unjudged.
 */
const SMALL = [
  'turnover.registered=200',
  'turnover.awake=40',
  'turnover.target-rps=8',
  'turnover.registration-concurrency=32',
  'turnover.registration-quiet=20s',
  'turnover.steady=1m',
  'budgets=[]',
];

type Gauge = Extract<BodyRecord, { kind: 'gauge' }>;

/** The SMALL run, shared by the tests that only read it. */
let smallRun: ReturnType<typeof runRef> | undefined;
const small = () => {
  smallRun ??= runRef('turnover', SMALL);
  return smallRun;
};

function gaugeSums(records: BodyRecord[]): Array<{ t: number; sum: number }> {
  const byT = new Map<number, number>();
  for (const r of records) {
    if (r.kind === 'gauge' && r.name === 'actors') byT.set(r.t, (byT.get(r.t) ?? 0) + (r as Gauge).value);
  }
  return [...byT].map(([t, sum]) => ({ t, sum }));
}

const marker = (records: BodyRecord[], name: string) => events(records, name)[0]!.t;

describe('turnover executor', () => {
  it('the actors gauge, every second, always sums to the sessions registered', async () => {
    const { records, analysis } = await small();
    const sums = gaugeSums(records);
    const creates = spans(records, 'actor.create').map((s) => s.t);
    const registrationDone = marker(records, 'turnover.registration.done');
    const end = marker(records, 'turnover.done');
    // One sample a second, four states each, from the executor's start to the end of the run.
    expect(sums[0]!.t).toBe(Math.min(...creates));
    expect(sums.every((s, i) => i === 0 || Math.abs(s.t - sums[i - 1]!.t - 1000) < 1e-6)).toBe(true);
    expect(sums[sums.length - 1]!.t).toBeGreaterThanOrEqual(end);
    for (const { t, sum } of sums) {
      // While registering: sessions whose boot had started; afterwards exactly `registered`.
      if (t >= registrationDone) expect(sum).toBe(200);
      else {
        expect(sum).toBeGreaterThanOrEqual(creates.filter((c) => c < t).length);
        expect(sum).toBeLessThanOrEqual(creates.filter((c) => c <= t).length);
      }
    }
    expect(analysis.turnover!.registered).toBe(200);
    expect(analysis.turnover!.window!.states.total).toEqual({ min: 200, max: 200 });
    // The state series the report charts: same values as the gauge.
    const series = analysis.turnover!.states;
    expect(series.binMs).toBe(1000);
    const at = Math.floor(end / 1000) - 1;
    expect(series.awake[at]! + series.parked[at]! + series.waking[at]! + series.parking[at]!).toBe(200);
  });

  it('registration runs step 1 before each first park; `park` holds no registration parks', async () => {
    const { records, analysis } = await small();
    const registerParks = spans(records, 'actor.park_register');
    const parks = spans(records, 'actor.park');
    const steps = spans(records, 'actor.step');
    const fillDone = marker(records, 'turnover.fill.done');
    // Every session: created, step 1 (index 0), then its registration park, in that order.
    expect(new Set(registerParks.map((p) => p.session)).size).toBe(200);
    for (const park of registerParks) {
      const first = steps.find((s) => s.session === park.session)!;
      expect(first.data).toMatchObject({ index: 0, step: 'clone' });
      expect(first.labels).toMatchObject({ phase: 'register' });
      expect(Math.abs(park.t - (first.t + first.dur))).toBeLessThan(0.001);
      // The snapshot holds real state: step 1 grew the session past its base footprint.
      expect(park.data!.memoryBytes as number).toBeGreaterThan(256e6);
      expect(park.data!.dirtyBytes as number).toBeGreaterThanOrEqual(400e6);
    }
    // Turnover parks only after the fill; none of them is a registration park.
    expect(parks.length).toBeGreaterThan(0);
    expect(parks.every((p) => p.t >= fillDone)).toBe(true);
    const ops = Object.fromEntries(analysis.turnover!.operations.map((o) => [o.operation, o]));
    expect(ops.park_register!.count).toBe(registerParks.length);
    expect(ops.park!.count).toBe(parks.length);
    expect(ops.park!.latency!.count).toBe(parks.length);
  });

  it('the turnover_window row covers only what started after the fill marker', async () => {
    const { records, analysis } = await small();
    const fillDone = marker(records, 'turnover.fill.done');
    const done = marker(records, 'turnover.done');
    const w = analysis.turnover!.window!;
    expect(w.name).toBe('turnover_window');
    expect(w.startMs).toBe(fillDone);
    expect(w.endMs).toBe(done);
    expect(w.durationMs).toBeCloseTo(60_000, 6);
    const inWindow = (name: string) => spans(records, name).filter((s) => s.t >= fillDone && s.t < done);
    const row = (op: string) => w.rows.find((r) => r.operation === op)!;
    expect(row('park').count).toBe(inWindow('actor.park').length);
    expect(row('wake').count).toBe(inWindow('actor.wake').length);
    expect(row('wake_first_touch').count).toBe(inWindow('actor.wake.first_touch').length);
    expect(row('step').count).toBe(inWindow('actor.step').length);
    // The fill's wakes are in the whole-run figures, not in the window.
    const fillWakes = spans(records, 'actor.wake').filter((s) => s.labels?.phase === 'fill');
    expect(fillWakes.length).toBeGreaterThanOrEqual(40);
    expect(fillWakes.every((s) => s.t < fillDone)).toBe(true);
    const allWakes = analysis.turnover!.operations.find((o) => o.operation === 'wake')!;
    expect(allWakes.count).toBe(row('wake').count + fillWakes.length);
    // 8 swaps asked per second for 60 seconds, and the rate over the window says so.
    expect(w.swaps.asked).toBe(480);
    expect(row('wake').perSecond).toBeCloseTo(row('wake').count / 60, 2);
    const failuresInWindow = events(records, 'actor.failure').filter((e) => e.t >= fillDone && e.t < done);
    const byKind = w.failuresByKind;
    expect(byKind.busy + byKind.crashed + byKind.not_found).toBe(failuresInWindow.length);
    // The states seen in the window: 40 resident give or take the ones in flight.
    expect(w.states.awake.max).toBeLessThanOrEqual(40);
    expect(w.states.awake.min + w.states.waking.max + w.states.parking.max).toBeGreaterThanOrEqual(40 - 8);
  });

  it('asking for more swaps than idle awake sessions allow records missed swaps', async () => {
    const { records, analysis } = await runRef('turnover', [
      ...SMALL,
      'turnover.awake=10',
      'turnover.target-rps=25',
      'turnover.steady=30s',
    ]);
    const ticks = events(records, 'turnover.tick');
    const missed = events(records, 'turnover.swap.missed');
    expect(ticks).toHaveLength(30);
    for (const tick of ticks) {
      const asked = tick.data!.asked as number;
      const done = tick.data!.done as number;
      const lost = missed.filter((m) => m.t === tick.t).reduce((n, m) => n + (m.data!.count as number), 0);
      expect(asked).toBe(25);
      // Never more swaps than there were idle awake sessions, and the rest counted, not dropped.
      expect(done).toBeLessThanOrEqual(10);
      expect(done + lost).toBe(asked);
    }
    expect(missed.every((m) => m.labels?.reason === 'no-idle-awake')).toBe(true);
    const swaps = analysis.turnover!.window!.swaps;
    expect(swaps.asked).toBe(750);
    expect(swaps.missedByReason['no-idle-awake']).toBeGreaterThanOrEqual(30 * 15);
    expect(swaps.done + swaps.missed).toBe(750);
    expect(swaps.done).toBe(spans(records, 'actor.park').length);
  });

  it('with every session awake there is nothing parked to swap in: missed with reason no-parked', async () => {
    const { analysis } = await runRef('turnover', [...SMALL, 'turnover.awake=200', 'turnover.steady=10s']);
    const swaps = analysis.turnover!.window!.swaps;
    expect(swaps).toMatchObject({ asked: 80, done: 0, missed: 80 });
    expect(swaps.missedByReason['no-parked']).toBe(80);
  });

  it('by default a swap wakes a parked session every second, whether or not its user has thought', async () => {
    // The method: every second, swap target-rps sessions. 8 swaps/s over a 40 s window asks
    // 8 × 40 = 320 swaps; with 160 parked and 40 awake neither pool runs dry, so all 320 are
    // done, and none waits for a think time (20 × the profile's, longer than the window).
    const { analysis } = await runRef('turnover', [
      ...SMALL,
      'turnover.think-scale=20',
      'turnover.registration-quiet=0s',
      'turnover.steady=40s',
    ]);
    expect(analysis.turnover!.window!.swaps).toMatchObject({
      asked: 320,
      done: 320,
      missedByReason: { 'no-parked-ready': 0 },
    });
  });

  it('with the profile’s think-gate a parked session is woken only once its user has thought: long thinks miss with no-parked-ready', async () => {
    const gated = join(dir, 'coding-session-gated.yaml');
    writeFileSync(
      gated,
      `${readFileSync(new URL('../scenarios/profiles/coding-session.yaml', import.meta.url), 'utf8')}\nthink-gate: true\n`,
    );
    const { records, analysis } = await runRef('turnover', [
      ...SMALL,
      `turnover.profile=${gated}`,
      'turnover.think-scale=20',
      'turnover.registration-quiet=0s',
      'turnover.steady=40s',
    ]);
    const swaps = analysis.turnover!.window!.swaps;
    expect(swaps.missedByReason['no-parked-ready']).toBeGreaterThan(0);
    expect(swaps.done + swaps.missed).toBe(swaps.asked);
    // Every wake comes at least 0.8 × think × scale after the session's previous step ended.
    const thinks = resolveScenarioRef('turnover').scenario.turnover!.profile.steps.map((s) => s.thinkMs);
    const bySession = new Map<string, Array<Extract<BodyRecord, { kind: 'span' }>>>();
    for (const r of records) {
      if (r.kind === 'span' && (r.name === 'actor.step' || r.name === 'actor.wake') && r.session)
        bySession.set(r.session, [...(bySession.get(r.session) ?? []), r]);
    }
    let checked = 0;
    for (const list of bySession.values()) {
      list.sort((a, b) => a.t - b.t);
      list.forEach((s, i) => {
        if (s.name !== 'actor.wake' || i === 0) return;
        const previous = list[i - 1]!;
        const think = thinks[previous.data!.index as number]! * 20;
        expect(s.t - (previous.t + previous.dur)).toBeGreaterThanOrEqual(0.8 * think - 1e-6);
        checked++;
      });
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('implicit and explicit resume both give one time-to-wake sample per wake', async () => {
    for (const resume of ['implicit', 'explicit']) {
      const { records, analysis } = await runRef('turnover', [...SMALL, `turnover.resume-mode=${resume}`]);
      const wakes = spans(records, 'actor.wake');
      const touches = spans(records, 'actor.wake.first_touch');
      const t = analysis.turnover!;
      expect(t.resumeMode).toBe(resume);
      expect(wakes.every((w) => w.labels?.resume === resume)).toBe(true);
      expect(t.timeToWake.all!.count).toBe(wakes.length);
      expect(t.timeToWake[resume as 'implicit' | 'explicit']!.count).toBe(wakes.length);
      expect(t.timeToWake[resume === 'implicit' ? 'explicit' : 'implicit']).toBeNull();
      // Wakes issued: the fill's 40 and one per swap done; each woken session's first request
      // starts the instant its wake ends.
      const swapsDone = events(records, 'turnover.tick').reduce((n, e) => n + (e.data!.done as number), 0);
      expect(wakes.length).toBe(40 + swapsDone + wakes.filter((w) => w.outcome === 'error').length);
      const ok = wakes.filter((w) => w.outcome === 'ok');
      expect(touches.length).toBe(ok.length);
      const touchesOf = new Map<string | undefined, typeof touches>();
      for (const s of touches) touchesOf.set(s.session, [...(touchesOf.get(s.session) ?? []), s]);
      for (const w of ok) {
        const matching = (touchesOf.get(w.session) ?? []).filter(
          (s) => Math.abs(s.t - (w.t + w.dur)) < 0.001,
        );
        expect(matching).toHaveLength(1);
      }
    }
  });

  it('lifecycle-mode none never parks: every session stays resident and swaps are plain requests', async () => {
    const { records, analysis } = await runRef('turnover', [...SMALL, 'turnover.lifecycle-mode=none']);
    expect(spans(records, 'actor.park').length + spans(records, 'actor.park_register').length).toBe(0);
    expect(spans(records, 'actor.wake')).toHaveLength(0);
    const w = analysis.turnover!.window!;
    expect(w.states.awake).toMatchObject({ min: 200, max: 200 });
    expect(w.swaps.done).toBe(480);
    expect(w.rows.find((r) => r.operation === 'step')!.count).toBe(480);
  });

  it('the same seed gives a byte-identical trace; another seed does not', async () => {
    const a = await runRef('turnover', SMALL, join(dir, 'a'));
    const b = await runRef('turnover', SMALL, join(dir, 'b'));
    const c = await runRef('turnover', [...SMALL, 'seed=2'], join(dir, 'c'));
    const bytes = (p: string) => readFileSync(p, 'utf8');
    expect(bytes(a.outcome.tracePath)).toBe(bytes(b.outcome.tracePath));
    expect(bytes(a.outcome.tracePath)).not.toBe(bytes(c.outcome.tracePath));
    expect(analysisSchema.parse(a.analysis).turnover).toEqual(b.analysis.turnover);
  });
});

describe('turnover scenarios', () => {
  it('think-scale jitter stays within ±20 % and averages out', () => {
    const rng = new Rng(3);
    const draws = Array.from({ length: 10_000 }, () => thinkDelay(2_000, 1.5, rng));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0.8 * 3_000);
    expect(Math.max(...draws)).toBeLessThanOrEqual(1.2 * 3_000);
    const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(mean).toBeGreaterThan(2_980);
    expect(mean).toBeLessThan(3_020);
  });

  it('the built-in profiles: coding-session think times exactly, personal-assistant-light thinks long first', () => {
    const coding = resolveScenarioRef('turnover').scenario.turnover!.profile;
    expect(coding.steps).toHaveLength(20);
    expect(coding.steps.map((s) => s.thinkMs / 1000)).toEqual([
      2, 3, 4, 3, 2, 3, 2, 8, 5, 2, 2, 6, 2, 3, 2, 8, 2, 2, 3, 5,
    ]);
    const pa = resolveScenarioRef('turnover', [parseOverride('turnover.profile=personal-assistant-light')])
      .scenario.turnover!.profile;
    expect(pa.steps[0]!.thinkMs).toBe(55 * 60_000);
    expect(pa.steps.slice(1).every((s) => s.thinkMs <= 30_000)).toBe(true);
  });

  it('publishes the profile JSON Schema generated from the zod schema (docs/profile.schema.json)', () => {
    const published = JSON.parse(
      readFileSync(new URL('../docs/profile.schema.json', import.meta.url), 'utf8'),
    );
    expect(published).toEqual(JSON.parse(JSON.stringify(profileJsonSchema())));
  });

  it('turnover-large is the benchmark case: 100,000 registered, 2,000 awake, 200 swaps/s, 20 minutes', () => {
    const t = resolveScenarioRef('turnover-large').scenario.turnover!;
    expect(t).toMatchObject({ registered: 100_000, awake: 2_000, targetRps: 200, steadyMs: 1_200_000 });
  });
});
