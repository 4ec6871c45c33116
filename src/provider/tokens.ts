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
import { runToEnd } from './steps.ts';

/** gpt-tokenizer's split of a text into pieces (global: `boundedCountSteps` walks it with `exec`). */
const PIECES = new RegExp(O200K_TOKEN_SPLIT_REGEX.source, O200K_TOKEN_SPLIT_REGEX.flags);

/** Special-token text in a prompt (`<|endoftext|>`) is counted as text, never refused. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** Characters of a text hashed once the request's exact budget is spent (see `count`). */
const SAMPLED_HASH_CHARS = 64;

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

/**
 * A piece's tokens: exact when it is short (up to `MAX_EXACT_PIECE` characters), else its first
 * `MAX_EXACT_PIECE` characters' rate times its length.
 */
function pieceTokens(piece: string): number {
  if (piece.length <= MAX_EXACT_PIECE) {
    if (encoder.getBpeRankFromString(piece) !== undefined) return 1;
    return encoder.bytePairEncode(piece).length;
  }
  const head = encoder.bytePairEncode(piece.slice(0, MAX_EXACT_PIECE)).length;
  return Math.ceil((head * piece.length) / MAX_EXACT_PIECE);
}

/**
 * Pieces counted between two yields of `boundedCountSteps`: at most 64 × (8 + 128²/8) work
 * units, well under a millisecond for ordinary text, a few for the longest pieces.
 */
const PIECES_PER_STEP = 64;

/**
 * `text`'s o200k count, piece by piece as gpt-tokenizer splits it, long pieces estimated; once
 * `budget.work` is spent the rest at 4 bytes a token. Linear in the text's length. In steps: it
 * yields every `PIECES_PER_STEP` pieces, so that a server can let its event loop run between
 * them (a cold process counts 400 KiB of new text in about 100 ms); where it yields changes
 * nothing in the count.
 */
export function* boundedCountSteps(text: string, budget: TokenBudget): Generator<void, number> {
  if (budget.work <= 0) {
    budget.estimated = true;
    return Math.ceil(Buffer.byteLength(text) / 4);
  }
  let tokens = 0;
  let done = 0;
  let pieces = 0;
  // `exec` on one regular expression of our own, not `matchAll`: that clones the expression and
  // builds an iterator on every call, several times the cost of splitting a short prompt. None of
  // the expression's alternatives matches the empty string, so the position always moves on. The
  // position is kept here and set before each `exec`: a count paused at a yield may be overtaken
  // by another one walking the same expression.
  let at = 0;
  for (;;) {
    PIECES.lastIndex = at;
    const match = PIECES.exec(text);
    if (match === null) break;
    at = PIECES.lastIndex;
    const piece = match[0];
    if (budget.work <= 0) {
      budget.estimated = true;
      return tokens + Math.ceil(Buffer.byteLength(text.slice(done)) / 4);
    }
    if (piece.length > MAX_EXACT_PIECE) budget.estimated = true;
    tokens += pieceTokens(piece);
    const exactChars = Math.min(piece.length, MAX_EXACT_PIECE);
    budget.work -= 8 + (exactChars * exactChars) / 8;
    done += piece.length;
    if (++pieces % PIECES_PER_STEP === 0) yield;
  }
  return tokens;
}

/**
 * FNV-1a over a text, for prefix identities: every character up to `chars` of them (64 Ki), else
 * that many evenly spaced, and the length.
 */
export function textHash(text: string, chars = 65_536): number {
  let hash = 0x811c9dc5;
  const step = text.length <= chars ? 1 : Math.ceil(text.length / chars);
  for (let i = 0; i < text.length; i += step) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (Math.imul(hash ^ text.length, 0x01000193) >>> 0) as number;
}

interface Memo {
  /** The text, kept once: later requests' equal texts are compared with it. */
  text: string;
  tokens: number;
  hash: number;
  /** The memo's generation (below): a memo two generations old is no longer counted on. */
  generation: number;
}

/**
 * One prompt being counted for a scope (a CLI's session on one API): the memos of the scope's
 * previous prompt in order, and this one's as they come. A CLI resends its tools, system prompt
 * and history every request, so text i of a prompt is most often text i of the one before: it is
 * compared with that text (a length check and a memory compare) before any lookup by hash, and
 * hashing a long text costs five to twenty times as much as comparing it.
 */
export interface PromptCursor {
  readonly scope: string;
  readonly previous: ReadonlyArray<Memo | undefined>;
  readonly memos: Array<Memo | undefined>;
  chars: number;
}

const NO_MEMOS: ReadonlyArray<Memo | undefined> = [];

/**
 * Token counts memoised per text, in two generations: a text is looked up in the young one, then
 * in the old one (and brought back to the young one when found there); when the young one holds
 * half the budget of characters it becomes the old one, and the old one is dropped whole. So the
 * texts every request resends stay, the ones no request sent for a while go, and a hit costs one
 * lookup, with none of the reordering a least-recently-used list does on every hit. Before the
 * lookup, a text is compared with the one at its place in its scope's previous prompt.
 */
export class TokenCounter {
  private young = new Map<string, Memo>();
  private old = new Map<string, Memo>();
  private youngChars = 0;
  private generation = 0;
  /** Each scope's last prompt (least recently counted first), and the characters they hold. */
  private readonly prompts = new Map<string, { memos: ReadonlyArray<Memo | undefined>; chars: number }>();
  private promptChars = 0;
  /** The hash of the last text `count` was given (what prompt caching chains its prefixes with). */
  lastHash = 0;

  constructor(
    private readonly maxMemoChars = 64 * 1024 * 1024,
    private readonly maxScopes = 1_024,
  ) {}

  /** Starts counting a prompt of `scope`, text by text in the order of its previous one. */
  beginPrompt(scope: string): PromptCursor {
    return { scope, previous: this.prompts.get(scope)?.memos ?? NO_MEMOS, memos: [], chars: 0 };
  }

  /** Keeps the prompt's texts for the scope's next one (bounded in scopes and characters). */
  endPrompt(cursor: PromptCursor): void {
    const earlier = this.prompts.get(cursor.scope);
    if (earlier) {
      this.prompts.delete(cursor.scope);
      this.promptChars -= earlier.chars;
    }
    if (cursor.chars > this.maxMemoChars / 4) return;
    this.prompts.set(cursor.scope, { memos: cursor.memos, chars: cursor.chars });
    this.promptChars += cursor.chars;
    for (const [scope, prompt] of this.prompts) {
      if (this.prompts.size <= this.maxScopes && this.promptChars <= this.maxMemoChars) break;
      this.prompts.delete(scope);
      this.promptChars -= prompt.chars;
    }
  }

  /**
   * `text`'s tokens. With a `budget`, new text is counted exactly only while it lasts (an input);
   * without one, exactly (a reply the emulator wrote itself, bounded by the scripts' limits).
   * With a `cursor`, the text is the next of a scope's prompt.
   */
  count(text: string, budget?: TokenBudget, cursor?: PromptCursor): number {
    return runToEnd(this.countSteps(text, budget, cursor));
  }

  /**
   * The tokens of `text` when it is already known (as `countSteps` would give them, with the same
   * effects on `cursor` and `lastHash`), else undefined and nothing changed: a resent text costs
   * a compare, not a generator of its own.
   */
  countKnown(text: string, cursor: PromptCursor): number | undefined {
    if (text.length === 0) return undefined;
    const known = this.known(text, cursor);
    if (known === undefined) return undefined;
    cursor.memos.push(known);
    cursor.chars += text.length;
    this.lastHash = known.hash;
    return known.tokens;
  }

  /** `count` in steps (`boundedCountSteps`'s): where it yields changes nothing in the count. */
  *countSteps(text: string, budget?: TokenBudget, cursor?: PromptCursor): Generator<void, number> {
    const known = text.length === 0 ? undefined : this.known(text, cursor);
    if (cursor) {
      cursor.memos.push(known);
      if (known) cursor.chars += text.length;
    }
    if (known !== undefined) {
      this.lastHash = known.hash;
      return known.tokens;
    }
    if (text.length === 0) {
      this.lastHash = 0;
      return 0;
    }
    const earlier = budget?.estimated ?? false;
    // Past the request's budget a text is estimated whole, and identified by a sample of it: a
    // history of megabytes costs its length in bytes, not a hash over every character.
    const spent = budget !== undefined && budget.work <= 0;
    if (budget) budget.estimated = false;
    const counted = budget ? yield* boundedCountSteps(text, budget) : o200kCount(text, AS_TEXT);
    const exact = !budget?.estimated;
    if (budget) budget.estimated ||= earlier;
    this.lastHash = spent ? textHash(text, SAMPLED_HASH_CHARS) : textHash(text);
    // Only exact counts are kept: an estimate is not reused as if it were one.
    if (exact && text.length <= this.maxMemoChars / 4) {
      const memo = { text, tokens: counted, hash: this.lastHash, generation: this.generation };
      this.keep(memo);
      if (cursor) {
        cursor.memos[cursor.memos.length - 1] = memo;
        cursor.chars += text.length;
      }
    }
    return counted;
  }

  /** The memo of `text`: the one at its place in the scope's previous prompt, else by lookup. */
  private known(text: string, cursor: PromptCursor | undefined): Memo | undefined {
    const same = cursor?.previous[cursor.memos.length];
    let known =
      same !== undefined && same.generation >= this.generation - 1 && same.text === text ? same : undefined;
    known ??= this.young.get(text);
    if (known === undefined) known = this.old.get(text);
    if (known !== undefined && known.generation !== this.generation) this.keep(known);
    return known;
  }

  private keep(memo: Memo): void {
    if (this.youngChars + memo.text.length > this.maxMemoChars / 2) {
      this.old = this.young;
      this.young = new Map();
      this.youngChars = 0;
      this.generation += 1;
    }
    memo.generation = this.generation;
    this.young.set(memo.text, memo);
    this.youngChars += memo.text.length;
  }

  /** A text seen once (a reply being written): counted without keeping it. */
  countOnce(text: string): number {
    return text.length === 0 ? 0 : o200kCount(text, AS_TEXT);
  }
}
