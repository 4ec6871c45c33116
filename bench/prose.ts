/**
 * English-like text for the provider's hold benchmark and tests: words of one to four syllables
 * drawn from a seeded stream, so that a cold tokenizer meets many words it has not merged yet
 * (a repeated sentence would be merged once and then read from its cache). Seeded: the same
 * arguments always give the same text.
 */
import { Rng } from '../src/base/rng.ts';

const SYLLABLES = ['ka', 'lo', 'mi', 'ter', 'an', 'sup', 'ble', 'ri', 'on', 'gra', 'ves', 'tu', 'pen', 'dor'];

/** `chars` characters of words, one in twelve ending a sentence. */
export function prose(chars: number, seed = 11): string {
  const random = new Rng(seed);
  const words: string[] = [];
  let length = 0;
  while (length < chars) {
    let word = '';
    for (let n = random.int(1, 4); n > 0; n--) word += SYLLABLES[random.int(0, SYLLABLES.length - 1)];
    words.push(random.int(0, 11) === 0 ? `${word}.` : word);
    length += word.length + 1;
  }
  return words.join(' ').slice(0, chars);
}
