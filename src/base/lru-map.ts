/**
 * A Map bounded to `capacity` entries that forgets the least recently used one. It is in base
 * because layers far apart keep such a map: the reference's ETags, the GitHub emulator's parsed
 * queries, the budget sets parsed once, the provider emulator's limit buckets and conversation
 * places; each had its own copy of these few lines (test/lru-map.test.ts checks the one).
 */
export class LruMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.map.size;
  }

  /** The value of `key`, which becomes the most recently used. */
  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value === undefined && !this.map.has(key)) return undefined;
    // A Map keeps insertion order: set again, the key is the newest, the first key the least used.
    this.map.delete(key);
    this.map.set(key, value as V);
    return value;
  }

  /** Whether `key` is kept; it does not count as a use. */
  has(key: K): boolean {
    return this.map.has(key);
  }

  /** Stores `value` as the most recently used; past `capacity`, the least recently used goes. */
  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as K);
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }
}
