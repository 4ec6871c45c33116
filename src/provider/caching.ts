/**
 * Prompt caching, counted from the prefixes requests actually share, as each vendor documents it
 * (docs/provider-emulator.md, "Prompt caching"):
 *
 * - Anthropic: explicit `cache_control` breakpoints. The prefix up to a breakpoint is written to
 *   the cache (`cache_creation_input_tokens`, by lifetime 5 minutes or 1 hour) and read back by a
 *   later request whose prompt starts with it (`cache_read_input_tokens`), found at the request's
 *   breakpoints or up to 20 blocks before each. Prefixes shorter than the model's minimum are not
 *   cached. A hit refreshes the entry's lifetime.
 * - OpenAI: automatic. Every prompt of 1,024 tokens or more is cached; a later prompt that starts
 *   with a cached prefix has it counted as `cached_tokens`, in steps of 128 tokens. Entries live
 *   5 minutes from their last use (24 hours with `prompt_cache_retention: "24h"`).
 *
 * A prefix is identified by a hash chained over the prompt's blocks (tools, system, messages), so
 * the emulator tells shared prefixes apart at block boundaries; caches are per API key (a
 * vendor's are per organisation) and bounded in entries, the oldest dropped first.
 */
import type { CacheTtl } from './conversation.ts';

/** A prompt as blocks: the tokens and chained hash of the prefix ending at each block. */
export interface PromptPrefixes {
  /** Cumulative tokens after block i. */
  tokens: number[];
  /** Hash of the prefix ending at block i. */
  hashes: number[];
  /** The breakpoint that ends at block i, if any (Anthropic). */
  breakpoints: Array<CacheTtl | undefined>;
}

export interface CacheUsage {
  /** Input tokens read from the cache. */
  read: number;
  /** Input tokens written to it, by lifetime (Anthropic). */
  written5m: number;
  written1h: number;
}

const NO_CACHE: CacheUsage = { read: 0, written5m: 0, written1h: 0 };

const MINUTE = 60_000;
const TTL_MS: Record<CacheTtl | 'openai' | 'openai24h', number> = {
  '5m': 5 * MINUTE,
  '1h': 60 * MINUTE,
  openai: 5 * MINUTE,
  openai24h: 24 * 60 * MINUTE,
};

/** How far before a breakpoint Anthropic looks for an earlier cached prefix, blocks. */
const LOOKBACK_BLOCKS = 20;
/** OpenAI counts cache hits in steps of this many tokens. */
const OPENAI_STEP = 128;

interface Entry {
  expiresAt: number;
  ttlMs: number;
}

export class PromptCache {
  /** scope (key, and OpenAI's prompt_cache_key) → prefix hash → entry; Map order is age. */
  private readonly scopes = new Map<string, Map<number, Entry>>();
  private entries = 0;

  constructor(private readonly maxEntries: number) {}

  get size(): number {
    return this.entries;
  }

  private scope(name: string): Map<number, Entry> {
    let scope = this.scopes.get(name);
    if (scope) {
      this.scopes.delete(name);
      this.scopes.set(name, scope);
    } else {
      scope = new Map();
      this.scopes.set(name, scope);
    }
    return scope;
  }

  /** A live entry for `hash`, refreshed on the hit; expired ones are dropped as found. */
  private hit(scope: Map<number, Entry>, hash: number, now: number): boolean {
    const entry = scope.get(hash);
    if (!entry) return false;
    if (entry.expiresAt <= now) {
      scope.delete(hash);
      this.entries -= 1;
      return false;
    }
    entry.expiresAt = now + entry.ttlMs;
    return true;
  }

  private write(scope: Map<number, Entry>, hash: number, ttlMs: number, now: number): void {
    const entry = scope.get(hash);
    if (entry) {
      entry.ttlMs = Math.max(entry.ttlMs, ttlMs);
      entry.expiresAt = Math.max(entry.expiresAt, now + ttlMs);
      return;
    }
    scope.set(hash, { expiresAt: now + ttlMs, ttlMs });
    this.entries += 1;
    this.evict();
  }

  /** Drops whole scopes, least recently used first, until the entries fit. */
  private evict(): void {
    for (const [name, scope] of this.scopes) {
      if (this.entries <= this.maxEntries) return;
      this.entries -= scope.size;
      this.scopes.delete(name);
    }
  }

  /** Anthropic: reads and writes at the request's `cache_control` breakpoints. */
  anthropic(scopeName: string, prompt: PromptPrefixes, minTokens: number, now: number): CacheUsage {
    const { tokens, hashes, breakpoints } = prompt;
    let last = -1;
    for (let i = breakpoints.length - 1; i >= 0; i--)
      if (breakpoints[i] !== undefined) {
        last = i;
        break;
      }
    if (last < 0) return NO_CACHE;
    const scope = this.scope(scopeName);
    // The longest cached prefix at or before a breakpoint, within the lookback of one.
    let readEnd = -1;
    for (let b = last; b >= 0 && readEnd < 0; b--) {
      if (breakpoints[b] === undefined) continue;
      for (let i = b; i >= 0 && i > b - LOOKBACK_BLOCKS; i--)
        if ((tokens[i] as number) >= minTokens && this.hit(scope, hashes[i] as number, now)) {
          readEnd = i;
          break;
        }
    }
    const read = readEnd >= 0 ? (tokens[readEnd] as number) : 0;
    // Each breakpoint past the hit writes its prefix; the tokens between are written once, at the
    // lifetime of the breakpoint that ends them.
    let written5m = 0;
    let written1h = 0;
    let from = read;
    for (let b = readEnd + 1; b <= last; b++) {
      const ttl = breakpoints[b];
      if (ttl === undefined || (tokens[b] as number) < minTokens) continue;
      const span = (tokens[b] as number) - from;
      if (ttl === '1h') written1h += span;
      else written5m += span;
      from = tokens[b] as number;
      this.write(scope, hashes[b] as number, TTL_MS[ttl], now);
    }
    return { read, written5m, written1h };
  }

  /** OpenAI: the longest cached prefix is read, and the whole prompt's prefixes are written. */
  openai(scopeName: string, prompt: PromptPrefixes, longRetention: boolean, now: number): number {
    const { tokens, hashes } = prompt;
    const total = tokens.length === 0 ? 0 : (tokens[tokens.length - 1] as number);
    if (total < 1024) return 0;
    const scope = this.scope(scopeName);
    let read = 0;
    for (let i = tokens.length - 1; i >= 0; i--) {
      if ((tokens[i] as number) < 1024) break;
      if (this.hit(scope, hashes[i] as number, now)) {
        read = tokens[i] as number;
        break;
      }
    }
    const ttl = longRetention ? TTL_MS.openai24h : TTL_MS.openai;
    // The prefixes of this prompt become hits for the next one; the ones at or before the hit are
    // already there.
    for (let i = tokens.length - 1; i >= 0 && (tokens[i] as number) > read; i--)
      if ((tokens[i] as number) >= 1024) this.write(scope, hashes[i] as number, ttl, now);
    return Math.floor(read / OPENAI_STEP) * OPENAI_STEP;
  }

  clear(): void {
    this.scopes.clear();
    this.entries = 0;
  }
}
