/**
 * The `turnover` executor (SPEC §5): with a large pool of registered sessions and a fixed number
 * resident, what does swapping idle awake sessions with parked ones at a target rate cost?
 *
 * 1. Registration: create `registered` sessions, `registration-concurrency` at a time. Each runs
 *    step 1 of its profile as soon as it serves (so its snapshot holds real memory and disk
 *    state), then parks (`actor.park_register`, kept apart from turnover parks).
 * 2. Fill: once registration has been idle for `registration-quiet`, wake sessions until
 *    `awake` are resident, `fill-concurrency` at a time; then the `turnover.fill.done` marker.
 * 3. Turnover: every second, swap `target-rps` sessions: park the idle awake session idle the
 *    longest, and wake the parked session whose user has waited the longest. A woken session
 *    runs its next step at once (busy), and is idle again when the step ends. A swap that cannot
 *    happen on schedule is counted with its reason (`turnover.swap.missed`), never silently
 *    skipped. With `steady`, turnover stops after that long (`turnover.done`), in-flight
 *    operations finish, and the run ends.
 *
 * As the method says, a swap wakes a parked session every second whether or not its user's
 * think time has passed. A profile with `think-gate: true` wakes (in the fill and in swaps) only
 * sessions whose user has sent the next request, a think time after the previous step ended
 * (× think-scale, ±20 % seeded jitter); a swap with none ready is missed `no-parked-ready`.
 * All along, a gauge of sessions by state (`actors` {state}) every second; the states sum to
 * the sessions registered.
 *
 * `lifecycle-mode: none` never parks: registration leaves every session resident, fill has
 * nothing to do, and each "swap" is the next request to the session idle the longest.
 */

import { type ActorPhase, type ActorStepRequest, actorStates } from '../../contract/types.ts';
import { FleetbenchError } from '../../errors.ts';
import type { Rng } from '../../rng.ts';
import type { Executor } from '../scenario.ts';
import type { ExecutorContext } from './index.ts';
import { IdleQueue, ReadyHeap } from './turnover-pools.ts';

type TurnoverExecutor = Extract<Executor, { type: 'turnover' }>;
export type MissReason = 'no-idle-awake' | 'no-parked' | 'no-parked-ready';

const TICK_MS = 1_000;
/** A registration without any session to wait for: how long to wait before looking again. */
const IDLE_POLL_MS = 1_000;
const MAX_STEPS = 65_535;

/** A think time as a session experiences it: × think-scale, with ±20 % seeded jitter. */
export function thinkDelay(thinkMs: number, scale: number, rng: Rng): number {
  return thinkMs * scale * rng.uniform(0.8, 1.2);
}

export async function runTurnover(executor: TurnoverExecutor, ctx: ExecutorContext): Promise<void> {
  const cfg = executor.turnover;
  const { clock, trace, markers, signal } = ctx;
  const target = ctx.target;
  /**
   * A call in flight when the run stops is dropped, not failed: a remote target (http) answers
   * it with an error once its run is over, which is no fault of the run.
   */
  const dropAfterStop =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      fn.apply(target, args).catch((error: unknown) => {
        if (signal.aborted) return new Promise<R>(() => undefined);
        throw error;
      });
  const createActor = dropAfterStop(target.createActor!);
  const parkActor = dropAfterStop(target.parkActor!);
  const wakeActor = dropAfterStop(target.wakeActor!);
  const actorStep = dropAfterStop(target.actorStep!);
  const actorCounts = dropAfterStop(target.actorCounts!);
  const profile = cfg.profile;
  if (profile.steps.length > MAX_STEPS)
    throw new FleetbenchError('E_PROFILE', `a profile has at most ${MAX_STEPS} steps`);
  const steps: ActorStepRequest[] = profile.steps.map((s, index) => ({
    name: s.name,
    index,
    ops: s.ops,
    max: profile.max,
  }));
  const thinkRng = ctx.rng.fork('think');
  const never = cfg.lifecycleMode === 'none';
  const thinkGate = profile.thinkGate;
  const explicit = cfg.resumeMode === 'explicit';

  const n = cfg.registered;
  const width = Math.max(4, String(n).length);
  const ids: string[] = new Array(n);
  for (let i = 0; i < n; i++) ids[i] = `a-${String(i + 1).padStart(width, '0')}`;
  /** Next step to run (0-based); after the last step a session starts over at step 2. */
  const nextStep = new Uint16Array(n);
  /** When the session's user sends its next request. */
  const readyAt = new Float64Array(n);
  const idle = new IdleQueue(n);
  const parked = new ReadyHeap(n, readyAt);
  const restart = steps.length > 1 ? 1 : 0;
  let inFlight = 0;
  let onDrained: (() => void) | undefined;

  const stepDone = (i: number, k: number) => {
    readyAt[i] = clock.now() + thinkDelay(profile.steps[k]!.thinkMs, cfg.thinkScale, thinkRng);
    nextStep[i] = k + 1 < steps.length ? k + 1 : restart;
  };
  const started = () => {
    inFlight++;
  };
  const finished = () => {
    inFlight--;
    if (inFlight === 0 && onDrained) onDrained();
  };

  // The gauge: sessions by state, every second from the start.
  const t0 = clock.now();
  let gaugeTick = 0;
  const sample = async () => {
    if (signal.aborted) return;
    const counts = await actorCounts();
    if (signal.aborted) return; // answered after the run ended
    const t = clock.now();
    for (const state of actorStates) {
      trace.write({ kind: 'gauge', name: 'actors', t, value: counts[state], labels: { state } });
    }
    gaugeTick++;
    if (!signal.aborted) clock.setTimeout(() => void sample(), t0 + gaugeTick * TICK_MS - clock.now());
  };
  void sample();

  /** Park an awake idle session; it joins the pool its reply says it is in. */
  const park = async (i: number, phase: ActorPhase) => {
    started();
    const reply = await parkActor(ids[i]!, phase);
    if (reply.state === 'parked') parked.push(i);
    else idle.push(i);
    finished();
  };

  /** Wake a parked session for its next step (a wake call first in explicit mode) and run it. */
  const wakeAndStep = async (i: number, phase: ActorPhase): Promise<boolean> => {
    started();
    try {
      const id = ids[i]!;
      if (explicit && !(await wakeActor(id, phase)).ok) {
        parked.push(i);
        return false;
      }
      const k = nextStep[i]!;
      if (!(await actorStep(id, steps[k]!, phase)).ok) {
        parked.push(i);
        return false;
      }
      stepDone(i, k);
      idle.push(i);
      return true;
    } finally {
      finished();
    }
  };

  // 1. Registration.
  let next = 0;
  const registerOne = async (i: number) => {
    const id = ids[i]!;
    if (!(await createActor(id, profile.base, 'register')).ok) {
      // Never booted: parked without a snapshot, step 1 still to run.
      readyAt[i] = clock.now();
      parked.push(i);
      return;
    }
    await actorStep(id, steps[0]!, 'register');
    stepDone(i, 0);
    if (never) idle.push(i);
    else await park(i, 'register');
  };
  const registrars = Array.from({ length: Math.min(cfg.registrationConcurrency, n) }, async () => {
    while (next < n && !signal.aborted) await registerOne(next++);
  });
  await Promise.all(registrars);
  if (signal.aborted) return;
  markers.emit('turnover.registration.done', { registered: n });

  // 2. Fill, once registration has been quiet long enough.
  await clock.sleep(cfg.registrationQuietMs, signal).catch(() => undefined);
  if (signal.aborted) return;
  markers.emit('turnover.fill.start');
  const need = never ? 0 : Math.max(0, cfg.awake - idle.size);
  let claimed = 0;
  const takeReady = async (): Promise<number> => {
    for (;;) {
      if (signal.aborted) return -1;
      const top = parked.peek();
      const wait = top < 0 ? IDLE_POLL_MS : thinkGate ? readyAt[top]! - clock.now() : 0;
      if (wait <= 0) return parked.pop();
      await clock.sleep(wait, signal).catch(() => undefined);
    }
  };
  const fillers = Array.from({ length: Math.min(cfg.fillConcurrency, Math.max(need, 1)) }, async () => {
    while (claimed < need && !signal.aborted) {
      claimed++;
      const i = await takeReady();
      if (i < 0) return;
      if (!(await wakeAndStep(i, 'fill'))) claimed--;
    }
  });
  await Promise.all(fillers);
  if (signal.aborted) return;
  markers.emit('turnover.fill.done', { awake: idle.size });

  // 3. Turnover, one batch of swaps a second from the marker.
  const fillDoneAt = clock.now();
  let stopped = false;
  if (cfg.steadyMs !== undefined) {
    clock.setTimeout(() => {
      stopped = true;
      markers.emit('turnover.done');
      if (inFlight === 0) ctx.endRun();
      else onDrained = () => ctx.endRun();
    }, cfg.steadyMs);
  }
  let owed = 0;
  let tick = 0;
  const swapTick = () => {
    if (signal.aborted || stopped) return;
    owed += cfg.targetRps;
    const asked = Math.floor(owed + 1e-9);
    owed -= asked;
    const missed: Record<MissReason, number> = { 'no-idle-awake': 0, 'no-parked': 0, 'no-parked-ready': 0 };
    let done = 0;
    const now = clock.now();
    for (let s = 0; s < asked; s++) {
      if (idle.size === 0) {
        missed['no-idle-awake']++;
        continue;
      }
      if (never) {
        const i = idle.shift();
        void touch(i);
        done++;
        continue;
      }
      const top = parked.peek();
      if (top < 0) {
        missed['no-parked']++;
        continue;
      }
      if (thinkGate && readyAt[top]! > now) {
        missed['no-parked-ready']++;
        continue;
      }
      void park(idle.shift(), 'turnover');
      void wakeAndStep(parked.pop(), 'turnover');
      done++;
    }
    trace.write({ kind: 'event', name: 'turnover.tick', t: now, data: { asked, done } });
    for (const reason of Object.keys(missed) as MissReason[]) {
      const count = missed[reason];
      if (count > 0)
        trace.write({
          kind: 'event',
          name: 'turnover.swap.missed',
          t: now,
          labels: { reason },
          data: { count },
        });
    }
    tick++;
    clock.setTimeout(swapTick, fillDoneAt + tick * TICK_MS - clock.now());
  };
  /** lifecycle-mode none: the next request to a resident session. */
  const touch = async (i: number) => {
    started();
    const k = nextStep[i]!;
    await actorStep(ids[i]!, steps[k]!, 'turnover');
    stepDone(i, k);
    idle.push(i);
    finished();
  };
  swapTick();
}
