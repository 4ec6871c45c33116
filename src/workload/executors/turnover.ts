/**
 * The `turnover` executor (docs/scenarios.md#turnover): with a large pool of registered sessions and a fixed number
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

import { FleetbenchError } from '../../base/errors.ts';
import type { Rng } from '../../base/rng.ts';
import { type ActorPhase, type ActorStepRequest, actorStates } from '../../contract/types.ts';
import type { Executor } from '../scenario.ts';
import type { ExecutorContext } from './context.ts';
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
  const run = new TurnoverRun(executor.turnover, ctx);
  run.sampleGauge();
  if (!(await run.register())) return;
  if (!(await run.fill())) return;
  run.startTurnover();
}

/** One turnover run's pools and phases; sessions are indices into typed arrays. */
class TurnoverRun {
  private readonly target: ActorTarget;
  private readonly steps: ActorStepRequest[];
  private readonly thinkRng: Rng;
  /** `lifecycle-mode: none`: sessions are never parked. */
  private readonly never: boolean;
  private readonly thinkGate: boolean;
  private readonly explicit: boolean;
  private readonly ids: string[];
  /** Next step to run (0-based); after the last step a session starts over at step 2. */
  private readonly nextStep: Uint16Array;
  /** When the session's user sends its next request. */
  private readonly readyAt: Float64Array;
  private readonly idle: IdleQueue;
  private readonly parked: ReadyHeap;
  private readonly restartStep: number;
  private inFlight = 0;
  private onDrained: (() => void) | undefined;
  private readonly t0: number;
  private gaugeTick = 0;
  /** Turnover: the steady window is over (`steady`), no more swaps. */
  private stopped = false;
  private owed = 0;
  private tick = 0;
  private fillDoneAt = 0;

  constructor(
    private readonly cfg: TurnoverExecutor['turnover'],
    private readonly ctx: ExecutorContext,
  ) {
    this.target = actorTarget(ctx);
    const profile = cfg.profile;
    if (profile.steps.length > MAX_STEPS)
      throw new FleetbenchError('E_PROFILE', `a profile has at most ${MAX_STEPS} steps`);
    this.steps = profile.steps.map((s, index) => ({ name: s.name, index, ops: s.ops, max: profile.max }));
    this.thinkRng = ctx.rng.fork('think');
    this.never = cfg.lifecycleMode === 'none';
    this.thinkGate = profile.thinkGate;
    this.explicit = cfg.resumeMode === 'explicit';
    const n = cfg.registered;
    const width = Math.max(4, String(n).length);
    this.ids = new Array(n);
    for (let i = 0; i < n; i++) this.ids[i] = `a-${String(i + 1).padStart(width, '0')}`;
    this.nextStep = new Uint16Array(n);
    this.readyAt = new Float64Array(n);
    this.idle = new IdleQueue(n);
    this.parked = new ReadyHeap(n, this.readyAt);
    this.restartStep = this.steps.length > 1 ? 1 : 0;
    this.t0 = ctx.clock.now();
  }

  private stepDone(i: number, k: number): void {
    const { clock } = this.ctx;
    this.readyAt[i] =
      clock.now() + thinkDelay(this.cfg.profile.steps[k]!.thinkMs, this.cfg.thinkScale, this.thinkRng);
    this.nextStep[i] = k + 1 < this.steps.length ? k + 1 : this.restartStep;
  }

  private started(): void {
    this.inFlight++;
  }

  private finished(): void {
    this.inFlight--;
    if (this.inFlight === 0 && this.onDrained) this.onDrained();
  }

  /** The gauge: sessions by state, every second from the start. */
  sampleGauge(): void {
    void this.sample();
  }

  private async sample(): Promise<void> {
    const { clock, trace, signal } = this.ctx;
    if (signal.aborted) return;
    const counts = await this.target.actorCounts();
    if (signal.aborted) return; // answered after the run ended
    const t = clock.now();
    for (const state of actorStates) {
      trace.write({ kind: 'gauge', name: 'actors', t, value: counts[state], labels: { state } });
    }
    this.gaugeTick++;
    if (!signal.aborted)
      clock.setTimeout(() => void this.sample(), this.t0 + this.gaugeTick * TICK_MS - clock.now());
  }

  /** Park an awake idle session; it joins the pool its reply says it is in. */
  private async park(i: number, phase: ActorPhase): Promise<void> {
    this.started();
    const reply = await this.target.parkActor(this.ids[i]!, phase);
    if (reply.state === 'parked') this.parked.push(i);
    else this.idle.push(i);
    this.finished();
  }

  /** Wake a parked session for its next step (a wake call first in explicit mode) and run it. */
  private async wakeAndStep(i: number, phase: ActorPhase): Promise<boolean> {
    this.started();
    try {
      const id = this.ids[i]!;
      if (this.explicit && !(await this.target.wakeActor(id, phase)).ok) {
        this.parked.push(i);
        return false;
      }
      const k = this.nextStep[i]!;
      if (!(await this.target.actorStep(id, this.steps[k]!, phase)).ok) {
        this.parked.push(i);
        return false;
      }
      this.stepDone(i, k);
      this.idle.push(i);
      return true;
    } finally {
      this.finished();
    }
  }

  /** lifecycle-mode none: the next request to a resident session. */
  private async touch(i: number): Promise<void> {
    this.started();
    const k = this.nextStep[i]!;
    await this.target.actorStep(this.ids[i]!, this.steps[k]!, 'turnover');
    this.stepDone(i, k);
    this.idle.push(i);
    this.finished();
  }

  /** 1. Registration; false when the run stopped meanwhile. */
  async register(): Promise<boolean> {
    const { clock, markers, signal } = this.ctx;
    const n = this.cfg.registered;
    let next = 0;
    const registerOne = async (i: number) => {
      const id = this.ids[i]!;
      if (!(await this.target.createActor(id, this.cfg.profile.base, 'register')).ok) {
        // Never booted: parked without a snapshot, step 1 still to run.
        this.readyAt[i] = clock.now();
        this.parked.push(i);
        return;
      }
      await this.target.actorStep(id, this.steps[0]!, 'register');
      this.stepDone(i, 0);
      if (this.never) this.idle.push(i);
      else await this.park(i, 'register');
    };
    const registrars = Array.from({ length: Math.min(this.cfg.registrationConcurrency, n) }, async () => {
      while (next < n && !signal.aborted) await registerOne(next++);
    });
    await Promise.all(registrars);
    if (signal.aborted) return false;
    markers.emit('turnover.registration.done', { registered: n });
    return true;
  }

  /** 2. Fill, once registration has been quiet long enough; false when the run stopped. */
  async fill(): Promise<boolean> {
    const { clock, markers, signal } = this.ctx;
    await clock.sleep(this.cfg.registrationQuietMs, signal).catch(() => undefined);
    if (signal.aborted) return false;
    markers.emit('turnover.fill.start');
    const need = this.never ? 0 : Math.max(0, this.cfg.awake - this.idle.size);
    let claimed = 0;
    const takeReady = async (): Promise<number> => {
      for (;;) {
        if (signal.aborted) return -1;
        const top = this.parked.peek();
        const wait = top < 0 ? IDLE_POLL_MS : this.thinkGate ? this.readyAt[top]! - clock.now() : 0;
        if (wait <= 0) return this.parked.pop();
        await clock.sleep(wait, signal).catch(() => undefined);
      }
    };
    const fillers = Array.from(
      { length: Math.min(this.cfg.fillConcurrency, Math.max(need, 1)) },
      async () => {
        while (claimed < need && !signal.aborted) {
          claimed++;
          const i = await takeReady();
          if (i < 0) return;
          if (!(await this.wakeAndStep(i, 'fill'))) claimed--;
        }
      },
    );
    await Promise.all(fillers);
    if (signal.aborted) return false;
    markers.emit('turnover.fill.done', { awake: this.idle.size });
    return true;
  }

  /** 3. Turnover, one batch of swaps a second from the marker. */
  startTurnover(): void {
    const { clock, markers } = this.ctx;
    this.fillDoneAt = clock.now();
    if (this.cfg.steadyMs !== undefined) {
      clock.setTimeout(() => {
        this.stopped = true;
        markers.emit('turnover.done');
        if (this.inFlight === 0) this.ctx.endRun();
        else this.onDrained = () => this.ctx.endRun();
      }, this.cfg.steadyMs);
    }
    this.swapTick();
  }

  private swapTick(): void {
    const { clock, trace, signal } = this.ctx;
    if (signal.aborted || this.stopped) return;
    this.owed += this.cfg.targetRps;
    const asked = Math.floor(this.owed + 1e-9);
    this.owed -= asked;
    const missed: Record<MissReason, number> = { 'no-idle-awake': 0, 'no-parked': 0, 'no-parked-ready': 0 };
    let done = 0;
    const now = clock.now();
    for (let s = 0; s < asked; s++) {
      if (this.idle.size === 0) {
        missed['no-idle-awake']++;
        continue;
      }
      if (this.never) {
        void this.touch(this.idle.shift());
        done++;
        continue;
      }
      const top = this.parked.peek();
      if (top < 0) {
        missed['no-parked']++;
        continue;
      }
      if (this.thinkGate && this.readyAt[top]! > now) {
        missed['no-parked-ready']++;
        continue;
      }
      void this.park(this.idle.shift(), 'turnover');
      void this.wakeAndStep(this.parked.pop(), 'turnover');
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
    this.tick++;
    clock.setTimeout(() => this.swapTick(), this.fillDoneAt + this.tick * TICK_MS - clock.now());
  }
}

/** The actor methods of the run's target, each call in flight when the run stops dropped. */
type ActorTarget = Required<
  Pick<ExecutorContext['target'], 'createActor' | 'parkActor' | 'wakeActor' | 'actorStep' | 'actorCounts'>
>;

/**
 * A call in flight when the run stops is dropped, not failed: a remote target (http) answers
 * it with an error once its run is over, which is no fault of the run.
 */
function actorTarget(ctx: ExecutorContext): ActorTarget {
  const { target, signal } = ctx;
  const dropAfterStop =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      fn.apply(target, args).catch((error: unknown) => {
        if (signal.aborted) return new Promise<R>(() => undefined);
        throw error;
      });
  return {
    createActor: dropAfterStop(target.createActor!),
    parkActor: dropAfterStop(target.parkActor!),
    wakeActor: dropAfterStop(target.wakeActor!),
    actorStep: dropAfterStop(target.actorStep!),
    actorCounts: dropAfterStop(target.actorCounts!),
  };
}
