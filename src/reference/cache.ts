/**
 * The control plane's in-process caches: bounded LRU maps for ETags (`LruMap`, src/base/lru-map.ts)
 * and TTL caches for fetched data. Both live only in memory, which is the point: a restart or a
 * flush loses them and the next poll cycle pays for it in API calls.
 */
import type { Clock } from '../clock/clock.ts';

/** Values that expire `ttlMs` after they were stored, on the run's clock. */
export class TtlCache<K, V> {
  private readonly map = new Map<K, { value: V; expires: number }>();

  constructor(
    private readonly clock: Clock,
    readonly ttlMs: number,
  ) {}

  get(key: K): V | undefined {
    const entry = this.map.get(key);
    if (!entry) return undefined;
    if (entry.expires <= this.clock.now()) {
      this.map.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: K, value: V, ttlMs = this.ttlMs): void {
    this.map.set(key, { value, expires: this.clock.now() + ttlMs });
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }
}
