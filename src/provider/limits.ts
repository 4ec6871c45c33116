/**
 * Provider rate limits, per API key: requests, input tokens and output tokens per minute, and
 * streams in flight. Each per-minute limit is a token bucket that refills continuously (a full
 * minute's allowance refills in a minute), the way Anthropic documents its limits; OpenAI's are
 * stated per minute too and behave the same from a client's side. What each limit is and where
 * fleetbench departs from the vendors: docs/provider-emulator.md, "Limits".
 */

import { LruMap } from '../base/lru-map.ts';

export interface ProviderLimits {
  /** Requests per minute. */
  rpm?: number | undefined;
  /** Input tokens per minute. */
  itpm?: number | undefined;
  /** Output tokens per minute. */
  otpm?: number | undefined;
  /** Input + output tokens per minute (OpenAI states one token limit). */
  tpm?: number | undefined;
  /** Streams (requests) in flight at once. */
  concurrent?: number | undefined;
}

export const LIMIT_KEYS = ['rpm', 'itpm', 'otpm', 'tpm', 'concurrent'] as const;

/**
 * The limits every key has unless `--limit` sets its own: the real APIs state limits on every
 * answer, so the emulator always has some to state. fleetbench's figures, no vendor's tier: high
 * enough that a benchmark of one key does not meet them (docs/provider-emulator.md, "Limits").
 */
export const DEFAULT_LIMITS: Readonly<ProviderLimits> = {
  rpm: 20_000,
  itpm: 100_000_000,
  otpm: 20_000_000,
  tpm: 120_000_000,
};
export type LimitKey = (typeof LIMIT_KEYS)[number];

const MINUTE_MS = 60_000;

class Bucket {
  private level: number;
  private updatedAt: number;

  constructor(
    readonly capacity: number,
    now: number,
  ) {
    this.level = capacity;
    this.updatedAt = now;
  }

  private refill(now: number): void {
    if (now > this.updatedAt) {
      this.level = Math.min(this.capacity, this.level + ((now - this.updatedAt) * this.capacity) / MINUTE_MS);
      this.updatedAt = now;
    }
  }

  /** ms until `amount` is available (0: now). An amount over the capacity never fits. */
  waitFor(amount: number, now: number): number {
    this.refill(now);
    if (amount <= this.level) return 0;
    if (amount > this.capacity) return Number.POSITIVE_INFINITY;
    return ((amount - this.level) * MINUTE_MS) / this.capacity;
  }

  take(amount: number, now: number): void {
    this.refill(now);
    this.level -= amount;
  }

  remaining(now: number): number {
    this.refill(now);
    return Math.max(0, Math.floor(this.level));
  }

  /** ms until the bucket is full again. */
  untilFull(now: number): number {
    this.refill(now);
    return ((this.capacity - this.level) * MINUTE_MS) / this.capacity;
  }
}

/** One limit's state as a response reports it. */
export interface LimitState {
  limit: number;
  remaining: number;
  /** ms until it is whole again. */
  resetMs: number;
}

export interface LimitStates {
  requests?: LimitState;
  inputTokens?: LimitState;
  outputTokens?: LimitState;
  tokens?: LimitState;
}

export type Admission =
  | { ok: true; states: LimitStates; release: () => void }
  | { ok: false; limit: LimitKey; retryAfterMs: number; states: LimitStates; message: string };

const LIMIT_WORDS: Record<LimitKey, string> = {
  rpm: 'requests per minute',
  itpm: 'input tokens per minute',
  otpm: 'output tokens per minute',
  tpm: 'tokens per minute',
  concurrent: 'concurrent requests',
};

class KeyLimits {
  private readonly buckets: Partial<Record<Exclude<LimitKey, 'concurrent'>, Bucket>> = {};
  inFlight = 0;

  constructor(
    readonly limits: ProviderLimits,
    now: number,
  ) {
    for (const key of ['rpm', 'itpm', 'otpm', 'tpm'] as const) {
      const limit = limits[key];
      if (limit !== undefined) this.buckets[key] = new Bucket(limit, now);
    }
  }

  states(now: number): LimitStates {
    const state = (bucket: Bucket | undefined): LimitState | undefined =>
      bucket && { limit: bucket.capacity, remaining: bucket.remaining(now), resetMs: bucket.untilFull(now) };
    const out: LimitStates = {};
    const requests = state(this.buckets.rpm);
    if (requests) out.requests = requests;
    const inputTokens = state(this.buckets.itpm);
    if (inputTokens) out.inputTokens = inputTokens;
    const outputTokens = state(this.buckets.otpm);
    if (outputTokens) out.outputTokens = outputTokens;
    const tokens = state(this.buckets.tpm);
    if (tokens) out.tokens = tokens;
    return out;
  }

  admit(inputTokens: number, outputTokens: number, now: number): Admission {
    const concurrent = this.limits.concurrent;
    if (concurrent !== undefined && this.inFlight >= concurrent)
      return {
        ok: false,
        limit: 'concurrent',
        retryAfterMs: 1000,
        states: this.states(now),
        message: `This request would exceed the limit of ${concurrent} ${LIMIT_WORDS.concurrent}.`,
      };
    // The limits in the vendor's order, the first that cannot take the request refusing it; no
    // list of asks per request (a short function is also a short optimising compile:
    // docs/performance.md, issue 51, round five).
    const refused =
      this.refusal('rpm', 1, now) ??
      this.refusal('itpm', inputTokens, now) ??
      this.refusal('otpm', outputTokens, now) ??
      this.refusal('tpm', inputTokens + outputTokens, now);
    if (refused !== undefined) return refused;
    const buckets = this.buckets;
    buckets.rpm?.take(1, now);
    buckets.itpm?.take(inputTokens, now);
    buckets.otpm?.take(outputTokens, now);
    buckets.tpm?.take(inputTokens + outputTokens, now);
    this.inFlight += 1;
    let released = false;
    return {
      ok: true,
      states: this.states(now),
      release: () => {
        if (released) return;
        released = true;
        this.inFlight -= 1;
      },
    };
  }

  /** The refusal when limit `key` cannot take `amount` now, else undefined. */
  private refusal(key: Exclude<LimitKey, 'concurrent'>, amount: number, now: number): Admission | undefined {
    const wait = this.buckets[key]?.waitFor(amount, now) ?? 0;
    if (!(wait > 0)) return undefined;
    return {
      ok: false,
      limit: key,
      // A request larger than the whole limit never fits: a minute is the honest answer.
      retryAfterMs: Number.isFinite(wait) ? wait : MINUTE_MS,
      states: this.states(now),
      message: `This request would exceed your rate limit of ${this.limits[key]} ${LIMIT_WORDS[key]}.`,
    };
  }
}

/**
 * The limits of every key seen, each key with its own buckets. At most `maxKeys` are kept: the
 * key used least recently is forgotten first (it starts again with full buckets), so a stream of
 * made-up keys cannot grow the emulator's memory.
 */
export class LimitBook {
  private readonly keys: LruMap<string, KeyLimits>;
  private readonly limits: ProviderLimits;

  constructor(limits: ProviderLimits, maxKeys = Number.POSITIVE_INFINITY) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.keys = new LruMap(maxKeys);
  }

  get configured(): ProviderLimits {
    return this.limits;
  }

  get size(): number {
    return this.keys.size;
  }

  /** The limits' state for `key` (an unknown or absent key: full buckets), for headers. */
  statesOf(key: string | undefined, now: number): LimitStates {
    const state = key === undefined ? undefined : this.keys.get(key);
    return (state ?? new KeyLimits(this.limits, now)).states(now);
  }

  /**
   * Admits a request of `key` that charges `inputTokens` against the input limits (what the
   * vendor counts: Anthropic leaves out cache reads, OpenAI does not) and `outputTokens`.
   */
  admit(key: string, inputTokens: number, outputTokens: number, now: number): Admission {
    let state = this.keys.get(key);
    if (!state) {
      state = new KeyLimits(this.limits, now);
      this.keys.set(key, state);
    }
    return state.admit(inputTokens, outputTokens, now);
  }

  /** Forget every key's usage (the admin API's reset). */
  reset(): void {
    this.keys.clear();
  }
}
