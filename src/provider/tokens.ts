/**
 * Token counts: what a request's input and a reply's output cost, counted from the text with
 * OpenAI's o200k_base encoding (gpt-tokenizer: exact for the GPT models codex and opencode talk
 * to; for Anthropic's models an approximation, since their tokenizer is not published).
 *
 * The CLIs resend their system prompt, tool declarations and the whole history on every
 * request, so the same texts are counted again and again: counts are memoised per text (bounded
 * by total characters kept), which turns the per-request cost into the cost of what is new.
 *
 * Exact counting is bounded per request. Byte-pair encoding is quadratic within one pre-token
 * (a word, a run of punctuation or spaces, or a run of Chinese characters, which has no spaces):
 * a pre-token longer than `MAX_EXACT_PIECE` characters, and everything past a request's budget,
 * is counted by a linear estimate instead, and the request's record says so
 * (docs/provider-emulator.md, "Tokens"; the bounds in docs/limits.md).
 */
import o200k, { countTokens as o200kCount } from 'gpt-tokenizer/encoding/o200k_base';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { PROVIDER_LIMITS } from '../base/limits.ts';

/** Special-token text in a prompt (`<|endoftext|>`) is counted as text, never refused. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** Texts shorter than this are counted directly: hashing them in a Map costs as much. */
const MEMO_MIN_CHARS = 256;

/** A pre-token longer than this is estimated: its byte-pair encoding would cost its length squared. */
export const MAX_EXACT_PIECE = 128;

/**
 * gpt-tokenizer's byte-pair encoder of o200k (the package's own, as `countTokens` uses it),
 * reached for its per-piece methods so that one long piece can be told apart and estimated.
 */
interface PieceEncoder {
  getBpeRankFromString(piece: string): number | undefined;
  bytePairEncode(piece: string): ArrayLike<number>;
}
const encoder = (o200k as unknown as { bytePairEncodingCoreProcessor: PieceEncoder })
  .bytePairEncodingCoreProcessor;

/**
 * What one request may still count exactly, in work units (a piece costs 8 plus an eighth of its
 * length squared: the lookup of a word, and the byte-pair merges of a long piece, which grow with
 * its square; a unit is 15-35 ns here), and whether any of it was estimated.
 */
export interface TokenBudget {
  work: number;
  estimated: boolean;
}

export function requestBudget(): TokenBudget {
  return { work: PROVIDER_LIMITS.maxExactTokenWork, estimated: false };
}

/** A piece's tokens: exact when it is short, else its first `MAX_EXACT_PIECE` characters' rate times its length. */
function pieceTokens(piece: string): { tokens: number; exact: boolean } {
  if (piece.length <= MAX_EXACT_PIECE) {
    if (encoder.getBpeRankFromString(piece) !== undefined) return { tokens: 1, exact: true };
    return { tokens: encoder.bytePairEncode(piece).length, exact: true };
  }
  const head = encoder.bytePairEncode(piece.slice(0, MAX_EXACT_PIECE)).length;
  return { tokens: Math.ceil((head * piece.length) / MAX_EXACT_PIECE), exact: false };
}

/**
 * `text`'s o200k count, piece by piece as gpt-tokenizer splits it, long pieces estimated; once
 * `budget.work` is spent the rest at 4 bytes a token. Linear in the text's length.
 */
export function boundedCount(text: string, budget: TokenBudget): number {
  if (budget.work <= 0) {
    budget.estimated = true;
    return Math.ceil(Buffer.byteLength(text) / 4);
  }
  let tokens = 0;
  let done = 0;
  for (const match of text.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
    const piece = match[0];
    if (budget.work <= 0) {
      budget.estimated = true;
      return tokens + Math.ceil(Buffer.byteLength(text.slice(done)) / 4);
    }
    const counted = pieceTokens(piece);
    if (!counted.exact) budget.estimated = true;
    tokens += counted.tokens;
    const exactChars = Math.min(piece.length, MAX_EXACT_PIECE);
    budget.work -= 8 + (exactChars * exactChars) / 8;
    done += piece.length;
  }
  return tokens;
}

/** FNV-1a over a text (every character up to 64 Ki, then a sample), for prefix identities. */
export function textHash(text: string): number {
  let hash = 0x811c9dc5;
  const step = text.length <= 65_536 ? 1 : Math.ceil(text.length / 65_536);
  for (let i = 0; i < text.length; i += step) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (Math.imul(hash ^ text.length, 0x01000193) >>> 0) as number;
}

interface Memo {
  tokens: number;
  hash: number;
}

export class TokenCounter {
  private readonly memo = new Map<string, Memo>();
  private memoChars = 0;
  /** The hash of the last text `count` was given (what prompt caching chains its prefixes with). */
  lastHash = 0;

  constructor(private readonly maxMemoChars = 64 * 1024 * 1024) {}

  /**
   * `text`'s tokens. With a `budget`, new text is counted exactly only while it lasts (an input);
   * without one, exactly (a reply the emulator wrote itself, bounded by the scripts' limits).
   */
  count(text: string, budget?: TokenBudget): number {
    if (text.length === 0) {
      this.lastHash = 0;
      return 0;
    }
    if (text.length < MEMO_MIN_CHARS) {
      this.lastHash = textHash(text);
      return budget ? boundedCount(text, budget) : o200kCount(text, AS_TEXT);
    }
    const known = this.memo.get(text);
    if (known !== undefined) {
      // Refresh its place: the Map's order is the eviction order (least recently used first).
      this.memo.delete(text);
      this.memo.set(text, known);
      this.lastHash = known.hash;
      return known.tokens;
    }
    const earlier = budget?.estimated ?? false;
    if (budget) budget.estimated = false;
    const counted = budget ? boundedCount(text, budget) : o200kCount(text, AS_TEXT);
    const exact = !budget?.estimated;
    if (budget) budget.estimated ||= earlier;
    this.lastHash = textHash(text);
    // Only exact counts are kept: an estimate is not reused as if it were one.
    if (text.length <= this.maxMemoChars / 4 && exact) {
      this.memo.set(text, { tokens: counted, hash: this.lastHash });
      this.memoChars += text.length;
      for (const [oldest] of this.memo) {
        if (this.memoChars <= this.maxMemoChars) break;
        this.memo.delete(oldest);
        this.memoChars -= oldest.length;
      }
    }
    return counted;
  }

  /** A text seen once (a reply being written): counted without keeping it. */
  countOnce(text: string): number {
    return text.length === 0 ? 0 : o200kCount(text, AS_TEXT);
  }
}
