/**
 * Input counting (src/provider/tokens.ts): `boundedCountSteps` splits a text as gpt-tokenizer
 * does and is exact while its budget lasts, whatever it counted before or counts between its
 * steps (its splitting expression is kept by the module and walked with `exec`, so no state may
 * carry from one text to the next, nor from a walk paused at a yield to one that overtakes it).
 */
import fc from 'fast-check';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { runToEnd } from '../src/provider/steps.ts';
import { boundedCountSteps, requestBudget, type TokenBudget } from '../src/provider/tokens.ts';

const boundedCount = (text: string, budget: TokenBudget) => runToEnd(boundedCountSteps(text, budget));

/** Pieces of prompts: words, numbers, punctuation, spaces and newlines, accents, Chinese, emoji. */
const part = fc.constantFrom(
  'agent',
  ' repository',
  'Change',
  "it's",
  ' 12345',
  '3.14',
  '...',
  ' --',
  '  ',
  '\n',
  '\r\n\n',
  '\t',
  'café',
  ' 模型',
  '🙂',
  '<|endoftext|>',
  '{"a":1}',
);
const prompt = fc.array(part, { maxLength: 30 }).map((parts) => parts.join(''));

describe('boundedCountSteps', () => {
  it("equals gpt-tokenizer's count when nothing is estimated, on any text, after any other text", () => {
    fc.assert(
      fc.property(prompt, prompt, (before, text) => {
        boundedCount(before, requestBudget());
        const budget = requestBudget();
        const counted = boundedCount(text, budget);
        // A piece longer than 128 characters is estimated, and said so: no such piece here.
        expect(budget.estimated).toBe(false);
        expect(counted).toBe(countTokens(text, { disallowedSpecial: new Set() }));
        // The same again: nothing of the first walk carries into the second.
        expect(boundedCount(text, requestBudget())).toBe(counted);
      }),
      { numRuns: 300 },
    );
  });

  it('counts two texts walked in turns, a step of one then a step of the other, as it counts each alone', () => {
    const long = fc.array(part, { minLength: 100, maxLength: 400 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(long, long, (a, b) => {
        const walks = [boundedCountSteps(a, requestBudget()), boundedCountSteps(b, requestBudget())];
        const results: Array<number | undefined> = [undefined, undefined];
        // Bounded: each walk yields once per 64 pieces of at most 400 parts.
        for (let turn = 0; results.includes(undefined) && turn < 10_000; turn++) {
          if (results[turn % 2] !== undefined) continue;
          const next = (walks[turn % 2] as Generator<void, number>).next();
          if (next.done) results[turn % 2] = next.value;
        }
        expect(results).toEqual([boundedCount(a, requestBudget()), boundedCount(b, requestBudget())]);
        expect(results[0]).toBe(countTokens(a, { disallowedSpecial: new Set() }));
      }),
      { numRuns: 100 },
    );
  });

  it('a budget spent part way estimates the rest and says so, and the next text is counted from its start', () => {
    const text = 'word '.repeat(10_000);
    const budget = { work: 100, estimated: false };
    const counted = boundedCount(text, budget);
    expect(budget.estimated).toBe(true);
    expect(counted).toBeGreaterThan(0);
    expect(counted).toBeLessThan(countTokens(text) * 2);
    // The walk that stopped part way leaves nothing behind for the next text.
    const next = 'a new prompt, counted from its start';
    expect(boundedCount(next, requestBudget())).toBe(countTokens(next));
  });
});
