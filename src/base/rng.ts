/**
 * Seeded randomness. Every random choice in a run comes from the run's seed through a named
 * stream: `rng.fork('latency')` derives an independent generator from the parent seed and the
 * name, so adding a new consumer never shifts the numbers an existing one draws. That is what
 * keeps traces byte-identical across runs with the same seed and scenario.
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/** FNV-1a over the name, mixed with the seed: a stable 32-bit child seed. */
function deriveSeed(seed: number, name: string): number {
  let hash = 0x811c9dc5 ^ (seed >>> 0);
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= Math.floor(seed / 0x100000000);
  return hash >>> 0;
}

export class Rng {
  readonly seed: number;
  private readonly generator: ReturnType<typeof xoroshiro128plus>;

  constructor(seed: number) {
    this.seed = seed;
    this.generator = xoroshiro128plus(seed | 0);
  }

  /** An independent stream for one consumer, identified by name. */
  fork(name: string): Rng {
    return new Rng(deriveSeed(this.seed, name));
  }

  /** Uniform in [0, 1). */
  next(): number {
    return uniformFloat64(this.generator);
  }

  /** Uniform integer in [min, max] (both included). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** Uniform real in [min, max). */
  uniform(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.pick on an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Standard normal by Box-Muller (one value per call; keeps the stream simple to reason about). */
  normal(mean = 0, sd = 1): number {
    const u1 = 1 - this.next();
    const u2 = this.next();
    return mean + sd * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /**
   * Log-normal with the given median and p95, the way latency profiles are usually stated.
   * sigma = ln(p95/median) / 1.645.
   */
  lognormal(median: number, p95: number): number {
    const sigma = Math.log(p95 / median) / 1.6448536269514722;
    return median * Math.exp(sigma * this.normal());
  }

  /** Multiply by a factor drawn uniformly in [1 - spread, 1 + spread]: seeded jitter. */
  jitter(value: number, spread: number): number {
    return value * (1 + this.uniform(-spread, spread));
  }
}

export function createRng(seed: number): Rng {
  return new Rng(seed);
}
