/**
 * Latency under load, the way an inference server behaves (and llm-d's inference simulator
 * models it): at most `maxRunning` sequences are generated at once, a request beyond that waits
 * in a queue for a running one to finish, and the more sequences run together the slower each
 * one's first token and each next token come: with n running, both times are multiplied by
 * 1 + (factor - 1) * (n - 1) / (maxRunning - 1), which reaches `factor` at the cap.
 *
 * Every answer is planned when its request arrives, so the model works on planned times: each of
 * the `maxRunning` slots is free at a known time; a request takes the slot that frees first (now,
 * or later: that wait is its time in the queue), and holds it until its planned end. A stream
 * cut short by its client frees its slot then (`release`). The queue's state at any moment is
 * read from the same plan (`runningAt`, `waitingAt`), for `/metrics`.
 */
import { MinHeap } from '../base/min-heap.ts';

export interface LoadModel {
  /** Sequences generated at once (vLLM's max-num-seqs). */
  maxRunning: number;
  /** Times at the cap, over times alone (llm-d's time-factor-under-load; 1: no slowdown). */
  factor: number;
}

export interface Admission {
  /** Run time the request starts being generated (its arrival, or later after queueing). */
  startAt: number;
  /** What its times are multiplied by. */
  slowdown: number;
  /** Call with the planned end (run time): the slot is held until then. */
  hold(endAt: number): void;
  /** The request ended early (cancelled, cut): its slot is free from `now`. */
  release(now: number): void;
}

interface Slot {
  freeAt: number;
  /** Freed early: a fresh entry replaced this one in the heap, which is skipped when it comes up. */
  stale: boolean;
}

export class LoadQueue {
  private readonly slots: MinHeap<Slot>;
  /** Planned [start, end) of every request not yet over, for the gauges. */
  private readonly planned = new Map<number, { startAt: number; endAt: number; arrival: number }>();
  private next = 0;

  constructor(readonly model: LoadModel) {
    this.slots = new MinHeap<Slot>();
    for (let i = 0; i < model.maxRunning; i++) this.slots.push(0, { freeAt: 0, stale: false });
  }

  /** Sequences being generated at run time `now` (vLLM's num_requests_running). */
  runningAt(now: number): number {
    let running = 0;
    for (const plan of this.planned.values()) if (plan.startAt <= now && now < plan.endAt) running += 1;
    return running;
  }

  /** Requests waiting for a slot at run time `now` (vLLM's num_requests_waiting). */
  waitingAt(now: number): number {
    let waiting = 0;
    for (const plan of this.planned.values()) if (plan.arrival <= now && now < plan.startAt) waiting += 1;
    return waiting;
  }

  admit(now: number): Admission {
    const id = this.next++;
    // Forget what is over: the gauges read only requests still planned.
    for (const [key, plan] of this.planned) if (plan.endAt <= now) this.planned.delete(key);
    let slot = this.slots.pop() as Slot;
    while (slot.stale) slot = this.slots.pop() as Slot;
    const startAt = Math.max(now, slot.freeAt);
    const running = this.runningAt(startAt) + 1;
    const { maxRunning, factor } = this.model;
    const slowdown =
      maxRunning > 1 ? 1 + ((factor - 1) * (Math.min(running, maxRunning) - 1)) / (maxRunning - 1) : 1;
    const held: Slot = { freeAt: Number.POSITIVE_INFINITY, stale: false };
    let holding = false;
    const plan = { startAt, endAt: Number.POSITIVE_INFINITY, arrival: now };
    this.planned.set(id, plan);
    return {
      startAt,
      slowdown,
      hold: (endAt) => {
        held.freeAt = endAt;
        plan.endAt = endAt;
        holding = true;
        this.slots.push(endAt, held);
      },
      release: (at) => {
        if (!holding || held.stale || held.freeAt <= at) return;
        // The slot sits in the heap keyed by its planned end: a fresh entry frees it now.
        held.stale = true;
        plan.endAt = Math.max(at, plan.startAt);
        const free = Math.max(at, startAt);
        this.slots.push(free, { freeAt: free, stale: false });
      },
    };
  }
}
