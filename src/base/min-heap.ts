/**
 * A binary min-heap of values by a numeric key, ties in insertion order, so that what it yields is
 * deterministic: the virtual clock's timers, the learned cycle-time simulation's events.
 */
export class MinHeap<T> {
  private readonly items: Array<[key: number, seq: number, value: T]> = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  /** The smallest key (`Infinity` when empty). */
  peekKey(): number {
    return this.items[0]?.[0] ?? Number.POSITIVE_INFINITY;
  }

  peek(): T | undefined {
    return this.items[0]?.[2];
  }

  push(key: number, value: T): void {
    const items = this.items;
    items.push([key, this.seq++, value]);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && before(items[l]!, items[m]!)) m = l;
        if (r < items.length && before(items[r]!, items[m]!)) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return top?.[2];
  }
}

function before(a: [number, number, unknown], b: [number, number, unknown]): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}
