/**
 * `LruMap` (src/base/lru-map.ts) against a model of what it promises: the keys in recency order,
 * least recently used first. Any sequence of get, set, has, delete and clear keeps at most the
 * bound, forgets the least recently used key first and answers what the model answers.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LruMap } from '../src/base/lru-map.ts';

type Op =
  | { op: 'get'; key: number }
  | { op: 'has'; key: number }
  | { op: 'set'; key: number; value: number | undefined }
  | { op: 'delete'; key: number }
  | { op: 'clear' };

/** Few keys, so that keys recur, are evicted and come back. */
const KEYS = 8;
const key = fc.integer({ min: 0, max: KEYS - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: key.map((k) => ({ op: 'get' as const, key: k })), weight: 4 },
  { arbitrary: key.map((k) => ({ op: 'has' as const, key: k })), weight: 2 },
  {
    // An undefined value is a value: kept, counted and used like any other.
    arbitrary: fc
      .tuple(key, fc.option(fc.integer(), { nil: undefined, freq: 10 }))
      .map(([k, value]) => ({ op: 'set' as const, key: k, value })),
    weight: 5,
  },
  { arbitrary: key.map((k) => ({ op: 'delete' as const, key: k })), weight: 1 },
  { arbitrary: fc.constant({ op: 'clear' as const }), weight: 1 },
);

/** The model: entries least recently used first; a use moves an entry to the end. */
class Model {
  entries: [number, number | undefined][] = [];

  constructor(readonly capacity: number) {}

  private take(key: number): [number, number | undefined] | undefined {
    const at = this.entries.findIndex(([k]) => k === key);
    return at < 0 ? undefined : this.entries.splice(at, 1)[0];
  }

  apply(step: Op): unknown {
    switch (step.op) {
      case 'get': {
        const entry = this.take(step.key);
        if (!entry) return undefined;
        this.entries.push(entry);
        return entry[1];
      }
      case 'has':
        return this.entries.some(([k]) => k === step.key);
      case 'set':
        this.take(step.key);
        this.entries.push([step.key, step.value]);
        if (this.entries.length > this.capacity) this.entries.shift();
        return undefined;
      case 'delete':
        this.take(step.key);
        return undefined;
      case 'clear':
        this.entries = [];
        return undefined;
    }
  }
}

function apply(map: LruMap<number, number | undefined>, step: Op): unknown {
  switch (step.op) {
    case 'get':
      return map.get(step.key);
    case 'has':
      return map.has(step.key);
    case 'set':
      return map.set(step.key, step.value);
    case 'delete':
      return map.delete(step.key);
    case 'clear':
      return map.clear();
  }
}

describe('LruMap', () => {
  it('answers as the recency-ordered model, holds at most its capacity, forgets the least recently used', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: KEYS + 1 }), fc.array(op, { maxLength: 80 }), (capacity, ops) => {
        const map = new LruMap<number, number | undefined>(capacity);
        const model = new Model(capacity);
        for (const step of ops) {
          expect(apply(map, step), JSON.stringify(step)).toBe(model.apply(step));
          expect(map.size).toBe(model.entries.length);
          expect(map.size).toBeLessThanOrEqual(capacity);
          // `has` is no use, so asking it of every key leaves the order as it is.
          for (let k = 0; k < KEYS; k++) expect(map.has(k)).toBe(model.entries.some(([m]) => m === k));
        }
        // The order itself: filling the map with new keys forgets the kept ones least recent first.
        for (const [k] of [...model.entries]) {
          map.set(KEYS + k + 1000, 0);
          model.apply({ op: 'set', key: KEYS + k + 1000, value: 0 });
          for (let m = 0; m < KEYS; m++) expect(map.has(m)).toBe(model.entries.some(([e]) => e === m));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a read key outlives one set before it', () => {
    const map = new LruMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1);
    map.set('c', 3);
    expect([map.has('a'), map.has('b'), map.has('c')]).toEqual([true, false, true]);
  });
});
