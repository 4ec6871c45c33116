/**
 * Token counts: what a request's input and a reply's output cost, counted from the text with
 * OpenAI's o200k_base encoding (gpt-tokenizer: exact for the GPT-4o, o-series and GPT-5 models
 * codex and opencode talk to; for Anthropic's models an approximation, since their tokenizer is
 * not published: docs/provider-emulator.md says how close).
 *
 * The CLIs resend their system prompt, tool declarations and the whole history on every
 * request, so the same texts are counted again and again: counts are memoised per text (bounded
 * by total characters kept), which turns the per-request cost into the cost of what is new.
 */
import { countTokens as o200kCount } from 'gpt-tokenizer/encoding/o200k_base';

/** Special-token text in a prompt (`<|endoftext|>`) is counted as text, never refused. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** Texts shorter than this are counted directly: hashing them in a Map costs as much. */
const MEMO_MIN_CHARS = 256;

export class TokenCounter {
  private readonly memo = new Map<string, number>();
  private memoChars = 0;

  constructor(private readonly maxMemoChars = 64 * 1024 * 1024) {}

  count(text: string): number {
    if (text.length === 0) return 0;
    if (text.length < MEMO_MIN_CHARS) return o200kCount(text, AS_TEXT);
    const known = this.memo.get(text);
    if (known !== undefined) {
      // Refresh its place: the Map's order is the eviction order (least recently used first).
      this.memo.delete(text);
      this.memo.set(text, known);
      return known;
    }
    const counted = o200kCount(text, AS_TEXT);
    if (text.length <= this.maxMemoChars / 4) {
      this.memo.set(text, counted);
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

  countAll(texts: Iterable<string>): number {
    let total = 0;
    for (const text of texts) total += this.count(text);
    return total;
  }
}
