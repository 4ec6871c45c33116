/**
 * Actors in the reference control plane (docs/reference-control-plane.md#actors-parkwake): sessions that can be parked (snapshotted,
 * their resources freed) and woken (restored). `lifecycle-mode` picks how: `suspend` (durable
 * snapshot, slower), `pause` (node-local, faster) or `none` (never parked). `resume-mode` picks
 * who wakes a session: `implicit` (the first request to a parked session wakes it) or
 * `explicit` (a wake call first; a request to a parked session is refused).
 *
 * Operations fail at seeded rates, by kind, and the control plane reacts as a real one would:
 * `busy` (host unavailable) → retry later with backoff, giving up after a few attempts;
 * `crashed` (the sandbox died mid-operation) and `not_found` (no such sandbox or snapshot) →
 * replace the session with a fresh one (its memory and disk state are lost). Every failure is
 * an `actor.failure` event and every operation a span (names in docs/trace-format.md).
 *
 * Built for 100,000 sessions: per-session state lives in typed arrays indexed by a dense
 * number, nothing runs for an idle session, and every operation is a handful of clock sleeps.
 */

import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import {
  type ActorCounts,
  type ActorFootprint,
  type ActorPhase,
  type ActorReply,
  type ActorState,
  type ActorStepRequest,
  defaultFailureRates,
  type FailureRates,
  type LifecycleMode,
  type ResumeMode,
} from '../contract/types.ts';
import type { Labels } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';
import {
  type ActorModel,
  ActorTimer,
  defaultActorModel,
  type FailureKind,
  opMs,
  type SnapshotModel,
} from './actor-model.ts';

export interface ActorHostConfig {
  lifecycle: LifecycleMode;
  resume: ResumeMode;
  /** Per-attempt failure rates; default by lifecycle mode (defaultFailureRates). */
  failures?: FailureRates;
  model?: ActorModel;
}

export interface ActorHostDeps {
  clock: Clock;
  rng: Rng;
  trace: TraceSink;
  config: ActorHostConfig;
}

// State codes: indexes into actorStates order (awake, parked, waking, parking).
const AWAKE = 0;
const PARKED = 1;
const WAKING = 2;
const PARKING = 3;
const STATE_NAMES: readonly ActorState[] = ['awake', 'parked', 'waking', 'parking'];

// Flags.
/** Parked without a usable snapshot: the next wake boots a fresh session. */
const COLD = 1;
/** The next request is the first after a wake: it pays the first-touch cost. */
const TOUCH_PENDING = 2;
/** The pending first touch follows an explicit wake (else an implicit one). */
const TOUCH_EXPLICIT = 4;

type Op = 'create' | 'park' | 'wake';
type Reaction = 'retry' | 'replace' | 'give_up';

/** Durations to the microsecond (shorter lines); start times stay exact, so they compare exactly with markers. */
const round3 = (ms: number) => Math.round(ms * 1000) / 1000;

export class ActorHost {
  readonly lifecycle: LifecycleMode;
  readonly resume: ResumeMode;
  private readonly clock: Clock;
  private readonly trace: TraceSink;
  private readonly timer: ActorTimer;
  private readonly model: ActorModel;
  private rates: FailureRates;
  private readonly snapshot: SnapshotModel;
  private readonly index = new Map<string, number>();
  private ids: string[] = [];
  private size = 0;
  private state = new Uint8Array(1024);
  private flags = new Uint8Array(1024);
  private memory = new Float64Array(1024);
  private disk = new Float64Array(1024);
  /** Disk bytes written since the last snapshot. */
  private dirty = new Float64Array(1024);
  private baseMemory = new Float64Array(1024);
  private baseDisk = new Float64Array(1024);
  private readonly stateCounts = [0, 0, 0, 0];
  private readonly labelCache = new Map<string, Labels>();

  constructor(deps: ActorHostDeps) {
    this.clock = deps.clock;
    this.trace = deps.trace;
    this.lifecycle = deps.config.lifecycle;
    this.resume = deps.config.resume;
    this.model = deps.config.model ?? defaultActorModel;
    this.timer = new ActorTimer(this.model, deps.rng);
    const mode = this.lifecycle === 'none' ? 'suspend' : this.lifecycle;
    this.rates = deps.config.failures ?? defaultFailureRates[mode];
    this.snapshot = this.model[mode];
  }

  /** Sessions by state; they sum to the sessions registered so far. */
  counts(): ActorCounts {
    const c = this.stateCounts;
    return { awake: c[AWAKE]!, parked: c[PARKED]!, waking: c[WAKING]!, parking: c[PARKING]! };
  }

  /** Change the failure rates from now on (fault injection). */
  setFailureRates(rates: FailureRates): void {
    this.rates = rates;
  }

  get registered(): number {
    return this.size;
  }

  stateOf(id: string): ActorState {
    return STATE_NAMES[this.state[this.find(id)]!]!;
  }

  footprint(id: string): ActorFootprint {
    const i = this.find(id);
    return { memoryBytes: this.memory[i]!, diskBytes: this.disk[i]! };
  }

  /** Register a session and boot it (it counts as `waking` while it boots). */
  async create(id: string, base: ActorFootprint, phase: ActorPhase): Promise<ActorReply> {
    if (this.index.has(id)) throw new Error(`actor ${id} already exists`);
    const i = this.add(id, base);
    const start = this.clock.now();
    let attempts = 0;
    for (;;) {
      attempts++;
      const full = this.timer.createMs(base);
      const kind = this.timer.failure(this.rates, false);
      if (kind === undefined) {
        await this.clock.sleep(full);
        this.setState(i, AWAKE);
        this.span('actor.create', i, start, 'ok', this.labels('create', phase), { attempts });
        return { ok: true, state: 'awake' };
      }
      // A crashed boot is replaced at once by another; a busy host is retried later.
      await this.clock.sleep(this.failedAfterMs(kind, full));
      const last = attempts >= this.model.failure.attempts;
      this.failure(i, 'create', kind, last ? 'give_up' : kind === 'busy' ? 'retry' : 'replace');
      if (last) {
        // Registered but never booted: parked without a snapshot, the next wake boots it.
        this.flags[i] = COLD;
        this.setState(i, PARKED);
        this.span('actor.create', i, start, 'error', this.labels('create', phase), { attempts });
        return { ok: false, state: 'parked' };
      }
      if (kind === 'busy') await this.clock.sleep(this.timer.backoffMs(attempts));
    }
  }

  /** Snapshot an awake session and free it. Registration parks are named `actor.park_register`. */
  async park(id: string, phase: ActorPhase): Promise<ActorReply> {
    if (this.lifecycle === 'none') throw new Error('lifecycle-mode none: sessions are never parked');
    const i = this.find(id);
    this.expect(i, AWAKE, 'park');
    this.setState(i, PARKING);
    const name = phase === 'register' ? 'actor.park_register' : 'actor.park';
    const labels = this.labels('park', phase);
    const start = this.clock.now();
    const data = () => ({
      attempts,
      memoryBytes: Math.round(this.memory[i]!),
      diskBytes: Math.round(this.disk[i]!),
      dirtyBytes: Math.round(this.dirty[i]!),
    });
    let attempts = 0;
    for (;;) {
      attempts++;
      const full = this.timer.parkMs(this.snapshot, this.memory[i]!, this.dirty[i]!);
      const kind = this.timer.failure(this.rates, true);
      if (kind === undefined) {
        await this.clock.sleep(full);
        const written = data();
        if (this.snapshot.parkDirtyDiskRate > 0) this.dirty[i] = 0;
        this.setState(i, PARKED);
        this.span(name, i, start, 'ok', labels, written);
        return { ok: true, state: 'parked' };
      }
      await this.clock.sleep(this.failedAfterMs(kind, full));
      const reaction = this.react(i, 'park', kind, attempts);
      if (reaction === 'retry') {
        await this.clock.sleep(this.timer.backoffMs(attempts));
        continue;
      }
      if (reaction === 'give_up') {
        this.setState(i, AWAKE);
        this.span(name, i, start, 'error', labels, data());
        return { ok: false, state: 'awake' };
      }
      // The sandbox died while snapshotting (or was already gone): nothing usable was saved.
      // It is replaced by a fresh session on its next wake; its state is lost. The park itself
      // got where it was going (the session is parked, its slot free), so by the one rule of
      // docs/trace-format.md a replaced operation is `ok` with `replaced: true`; the crash is
      // the `actor.failure` event (reaction `replace`).
      const lost = data();
      this.reset(i);
      this.flags[i] = COLD;
      this.setState(i, PARKED);
      this.span(name, i, start, 'ok', labels, { ...lost, replaced: true });
      return { ok: true, state: 'parked' };
    }
  }

  /** Restore a parked session (the explicit wake call). */
  async wake(id: string, phase: ActorPhase): Promise<ActorReply> {
    const i = this.find(id);
    this.expect(i, PARKED, 'wake');
    return this.restore(i, phase, 'explicit');
  }

  /**
   * Run one scripted step: its operations one after the other, each a request to the session.
   * A parked session is woken first in implicit mode and refused in explicit mode.
   */
  async step(id: string, step: ActorStepRequest, phase: ActorPhase): Promise<ActorReply> {
    const i = this.find(id);
    if (this.state[i] === PARKED) {
      if (this.resume === 'explicit')
        throw new Error(`actor ${id} is parked: resume-mode explicit needs a wake first`);
      const woken = await this.restore(i, phase, 'implicit');
      if (!woken.ok) return woken;
    }
    this.expect(i, AWAKE, 'step');
    const start = this.clock.now();
    const hop = this.model.hopMs;
    const noise = this.timer.stepNoise();
    let memory = this.memory[i]!;
    let disk = this.disk[i]!;
    let dirty = this.dirty[i]!;
    let total = 0;
    let firstMs = 0;
    step.ops.forEach((op, k) => {
      let ms = (hop + opMs(this.model, op)) * noise;
      if (k === 0 && this.flags[i]! & TOUCH_PENDING)
        ms += this.timer.firstTouchPenaltyMs(this.snapshot, memory);
      if (k === 0) firstMs = ms;
      total += ms;
      switch (op.op) {
        case 'ingest':
        case 'memory-fill':
          memory = Math.min(step.max.memoryBytes, memory + op.bytes);
          break;
        case 'disk-write': {
          const grown = Math.min(step.max.diskBytes, disk + op.bytes);
          // Writing past the cap rewrites existing blocks: still dirty.
          dirty = Math.min(grown, dirty + op.bytes);
          disk = grown;
          break;
        }
        default:
          break;
      }
    });
    await this.clock.sleep(total);
    this.memory[i] = memory;
    this.disk[i] = disk;
    this.dirty[i] = dirty;
    const flags = this.flags[i]!;
    if (flags & TOUCH_PENDING) {
      this.flags[i] = flags & ~(TOUCH_PENDING | TOUCH_EXPLICIT);
      this.trace.write({
        kind: 'span',
        name: 'actor.wake.first_touch',
        t: start,
        dur: round3(firstMs),
        session: this.ids[i],
        labels: this.labels(flags & TOUCH_EXPLICIT ? 'wake-explicit' : 'wake-implicit', phase),
      });
    }
    this.span('actor.step', i, start, 'ok', this.labels('step', phase), {
      step: step.name,
      index: step.index,
      memoryBytes: Math.round(memory),
      diskBytes: Math.round(disk),
    });
    return { ok: true, state: 'awake' };
  }

  private async restore(i: number, phase: ActorPhase, resume: ResumeMode): Promise<ActorReply> {
    this.setState(i, WAKING);
    const labels = this.labels(resume === 'implicit' ? 'wake-implicit' : 'wake-explicit', phase);
    const start = this.clock.now();
    let attempts = 0;
    let replaced = false;
    const cold = (this.flags[i]! & COLD) !== 0;
    const data = () => ({
      attempts,
      memoryBytes: Math.round(this.memory[i]!),
      diskBytes: Math.round(this.disk[i]!),
      ...(cold ? { cold: true } : {}),
      ...(replaced ? { replaced: true } : {}),
    });
    for (;;) {
      attempts++;
      const base = { memoryBytes: this.baseMemory[i]!, diskBytes: this.baseDisk[i]! };
      const coldNow = (this.flags[i]! & COLD) !== 0;
      const full = coldNow
        ? this.timer.createMs(base)
        : this.timer.wakeMs(this.snapshot, this.memory[i]!, this.disk[i]!);
      const kind = this.timer.failure(this.rates, !coldNow);
      if (kind === undefined) {
        await this.clock.sleep(full);
        break;
      }
      await this.clock.sleep(this.failedAfterMs(kind, full));
      const reaction = this.react(i, 'wake', kind, attempts);
      if (reaction === 'retry') {
        await this.clock.sleep(this.timer.backoffMs(attempts));
        continue;
      }
      if (reaction === 'give_up') {
        this.setState(i, PARKED);
        this.span('actor.wake', i, start, 'error', labels, data());
        return { ok: false, state: 'parked' };
      }
      // Crashed while restoring, or the snapshot is gone: boot a fresh session in its place.
      replaced = true;
      this.reset(i);
      await this.clock.sleep(this.timer.createMs(base));
      break;
    }
    this.flags[i] = TOUCH_PENDING | (resume === 'explicit' ? TOUCH_EXPLICIT : 0);
    this.setState(i, AWAKE);
    this.span('actor.wake', i, start, 'ok', labels, data());
    return { ok: true, state: 'awake' };
  }

  private add(id: string, base: ActorFootprint): number {
    const i = this.size++;
    if (i >= this.state.length) this.grow();
    this.index.set(id, i);
    this.ids.push(id);
    this.baseMemory[i] = base.memoryBytes;
    this.baseDisk[i] = base.diskBytes;
    this.reset(i);
    this.state[i] = WAKING;
    this.stateCounts[WAKING]!++;
    return i;
  }

  /** Back to a fresh session's footprint. Its disk is the image, already stored: nothing dirty. */
  private reset(i: number): void {
    this.memory[i] = this.baseMemory[i]!;
    this.disk[i] = this.baseDisk[i]!;
    this.dirty[i] = 0;
  }

  private grow(): void {
    const n = this.state.length * 2;
    const widen = <T extends Uint8Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.state = widen(this.state, (k) => new Uint8Array(k));
    this.flags = widen(this.flags, (k) => new Uint8Array(k));
    this.memory = widen(this.memory, (k) => new Float64Array(k));
    this.disk = widen(this.disk, (k) => new Float64Array(k));
    this.dirty = widen(this.dirty, (k) => new Float64Array(k));
    this.baseMemory = widen(this.baseMemory, (k) => new Float64Array(k));
    this.baseDisk = widen(this.baseDisk, (k) => new Float64Array(k));
  }

  private find(id: string): number {
    const i = this.index.get(id);
    if (i === undefined) throw new Error(`no actor ${id}`);
    return i;
  }

  private expect(i: number, state: number, what: string): void {
    if (this.state[i] !== state) {
      throw new Error(`actor ${this.ids[i]}: cannot ${what} while ${STATE_NAMES[this.state[i]!]}`);
    }
  }

  private setState(i: number, to: number): void {
    this.stateCounts[this.state[i]!]!--;
    this.stateCounts[to]!++;
    this.state[i] = to;
  }

  /**
   * How long a failed attempt takes to show: a busy host answers at once, a crash comes part-way
   * through the operation's `fullMs`, a missing snapshot is found out quickly.
   */
  private failedAfterMs(kind: FailureKind, fullMs: number): number {
    if (kind === 'busy') return this.model.failure.busyAnswerMs;
    return kind === 'crashed' ? this.timer.crashAfterMs(fullMs) : this.model.failure.notFoundMs;
  }

  /**
   * What a park or wake does about a failed attempt, written as its `actor.failure` event: a busy
   * host is retried until the last attempt and then given up; a lost session is replaced.
   */
  private react(i: number, op: 'park' | 'wake', kind: FailureKind, attempts: number): Reaction {
    const reaction: Reaction =
      kind !== 'busy' ? 'replace' : attempts >= this.model.failure.attempts ? 'give_up' : 'retry';
    this.failure(i, op, kind, reaction);
    return reaction;
  }

  private failure(i: number, op: Op, kind: FailureKind, reaction: Reaction): void {
    this.trace.write({
      kind: 'event',
      name: 'actor.failure',
      t: this.clock.now(),
      session: this.ids[i],
      labels: { mode: this.lifecycle, op, kind, reaction },
    });
  }

  private span(
    name: string,
    i: number,
    start: number,
    outcome: 'ok' | 'error',
    labels: Labels,
    data: Record<string, unknown>,
  ): void {
    this.trace.write({
      kind: 'span',
      name,
      t: start,
      dur: round3(this.clock.now() - start),
      session: this.ids[i],
      outcome,
      labels,
      data,
    });
  }

  /** Label objects are few (mode × kind × phase): build each once. */
  private labels(kind: 'create' | 'park' | 'step' | 'wake-implicit' | 'wake-explicit', phase: ActorPhase) {
    const key = `${kind}/${phase}`;
    let labels = this.labelCache.get(key);
    if (labels === undefined) {
      const mode = this.lifecycle;
      switch (kind) {
        case 'park':
          labels = { mode };
          break;
        case 'wake-implicit':
          labels = { mode, resume: 'implicit', phase };
          break;
        case 'wake-explicit':
          labels = { mode, resume: 'explicit', phase };
          break;
        default:
          labels = { mode, phase };
      }
      this.labelCache.set(key, labels);
    }
    return labels;
  }
}
