/**
 * The turnover executor's two pools, sized once for every registered session and touched in
 * O(1) / O(log n) per swap: no per-session timers, no scans.
 *
 * - `IdleQueue`: awake sessions that are not running a step, oldest idle first (a ring buffer
 *   of session numbers). Parking takes from the front.
 * - `ReadyHeap`: parked sessions by the time their user sends the next request (a binary
 *   min-heap keyed by `readyAt`, ties by session number). Waking takes from the top once it is due.
 */

export class IdleQueue {
  private readonly ring: Int32Array;
  private head = 0;
  private count = 0;

  constructor(capacity: number) {
    this.ring = new Int32Array(Math.max(1, capacity));
  }

  get size(): number {
    return this.count;
  }

  push(session: number): void {
    if (this.count === this.ring.length) throw new Error('IdleQueue overflow');
    this.ring[(this.head + this.count) % this.ring.length] = session;
    this.count++;
  }

  /** The session idle the longest, or -1. */
  shift(): number {
    if (this.count === 0) return -1;
    const session = this.ring[this.head]!;
    this.head = (this.head + 1) % this.ring.length;
    this.count--;
    return session;
  }
}

export class ReadyHeap {
  private readonly heap: Int32Array;
  private count = 0;

  /** `readyAt[session]` is the key; it must not change while the session is in the heap. */
  constructor(
    capacity: number,
    private readonly readyAt: Float64Array,
  ) {
    this.heap = new Int32Array(Math.max(1, capacity));
  }

  get size(): number {
    return this.count;
  }

  /** The session due first, or -1. */
  peek(): number {
    return this.count > 0 ? this.heap[0]! : -1;
  }

  private before(a: number, b: number): boolean {
    const ka = this.readyAt[a]!;
    const kb = this.readyAt[b]!;
    return ka < kb || (ka === kb && a < b);
  }

  push(session: number): void {
    if (this.count === this.heap.length) throw new Error('ReadyHeap overflow');
    const heap = this.heap;
    let i = this.count++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!this.before(session, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = session;
  }

  pop(): number {
    if (this.count === 0) return -1;
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap[--this.count]!;
    const n = this.count;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && this.before(heap[r]!, heap[l]!) ? r : l;
      if (!this.before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    if (n > 0) heap[i] = last;
    return top;
  }
}
