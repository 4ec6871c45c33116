/**
 * A server's work, run in slices between turns of the event loop, for the two emulators served
 * over HTTP (the provider's model requests and stream chunks, GitHub's API requests): a thousand
 * requests arriving or due at once never keep another client (a probe, the model list, the admin
 * API, /metrics) waiting behind all of them, and never keep a new client waiting to be accepted
 * (docs/performance.md, "A new client under a flood of `hey -c 1000`").
 */

/** What one turn of the event loop may spend on queued work before the rest waits its turn. */
const TURN_SLICE_MS = 10;

/**
 * The same while clients are connecting: a turn's length is also how fast the server takes new
 * connections, since libuv accepts one connection per turn of the loop (since libuv 1.45, in
 * every Node line fleetbench supports). A thousand clients connecting at once wait in the kernel's
 * accept queue for a thousand turns: at 10-20 ms a turn a new client's probe waited 4-12 s behind
 * them. So for `ACCEPTING_WINDOW_MS` after a connection was accepted (more are likely waiting), a
 * turn runs at least one step and at most this long of them.
 */
const ACCEPTING_SLICE_MS = 0.5;
const ACCEPTING_WINDOW_MS = 50;

export interface TurnSlices {
  /**
   * Runs `step` now if this turn has budget left and nothing waits before it, else queues it for
   * a later turn, in arrival order. A step is synchronous, all the work it stands for, and
   * catches its own errors.
   */
  run(step: () => void): void;
  /**
   * Queues `step` behind everything `run()` queues, now and later: a large body's work, so a
   * thousand megabyte uploads never keep a small request (a probe, a poller's GET) waiting
   * behind all of them.
   */
  runAfter(step: () => void): void;
  /** Whether this turn's budget is spent: the next step should be `run`, not run now. */
  spent(): boolean;
  /**
   * Whether this turn has run a whole slice (TURN_SLICE_MS) of steps, even while clients
   * connect: a long step stops at a point it can resume from and `run`s the rest.
   */
  overTurn(): boolean;
  /** The server accepted a connection: more are likely waiting, so turns are kept short. */
  accepted(): void;
  /** The server is closing: what waits runs now, in order, and every later step at once. */
  drain(): void;
}

/** Work waiting its turn, oldest first; what has been taken is dropped in amortised O(1). */
export class FifoQueue<T> {
  private items: Array<T | undefined> = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest item, taken out; only when `size > 0`. */
  shift(): T {
    const item = this.items[this.head] as T;
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    } else if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    }
    return item;
  }
}

/**
 * A step runs at once while this turn of the event loop has spent less than its budget on such
 * work (TURN_SLICE_MS, or ACCEPTING_SLICE_MS while clients connect) and nothing waits before it;
 * else it waits in a first-in-first-out queue (`runAfter`'s steps in a second one, run when the
 * first is empty), run from one `setImmediate` a turn (after the loop has read its sockets
 * again). One callback a turn, not one per waiting step: with 700 steps waiting, re-queuing each
 * every turn cost more than the work.
 */
export function turnSlices(): TurnSlices {
  /** When this turn's slice began (performance.now()), or -1 before any. */
  let sliceStart = -1;
  /** When the server last accepted a connection (`accepted()`). */
  let lastAccept = -Infinity;
  const budget = () =>
    performance.now() - lastAccept < ACCEPTING_WINDOW_MS ? ACCEPTING_SLICE_MS : TURN_SLICE_MS;
  let draining = false;
  const first = new FifoQueue<() => void>();
  const after = new FifoQueue<() => void>();
  let scheduled = false;
  const endSlice = () => {
    sliceStart = -1;
  };
  const startSlice = () => {
    sliceStart = performance.now();
    setImmediate(endSlice);
  };
  const schedule = () => {
    if (!scheduled) {
      scheduled = true;
      setImmediate(runQueued);
    }
  };
  function runQueued(): void {
    scheduled = false;
    if (sliceStart < 0) startSlice();
    try {
      while (first.size + after.size > 0 && (draining || performance.now() - sliceStart <= budget()))
        (first.size > 0 ? first : after).shift()();
    } finally {
      // The rest next turn (also after a step that threw).
      if (first.size + after.size > 0) schedule();
    }
  }
  return {
    run(step) {
      if (draining) {
        step();
        return;
      }
      if (first.size > 0) {
        first.push(step);
        schedule();
        return;
      }
      if (sliceStart < 0) startSlice();
      else if (performance.now() - sliceStart > budget()) {
        first.push(step);
        schedule();
        return;
      }
      step();
    },
    runAfter(step) {
      if (draining) {
        step();
        return;
      }
      after.push(step);
      schedule();
    },
    spent: () => !draining && sliceStart >= 0 && performance.now() - sliceStart > budget(),
    overTurn: () => !draining && sliceStart >= 0 && performance.now() - sliceStart > TURN_SLICE_MS,
    accepted() {
      lastAccept = performance.now();
    },
    drain() {
      draining = true;
      if (first.size + after.size > 0) runQueued();
    },
  };
}
