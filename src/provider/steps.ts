/**
 * Work in steps: a generator that yields where its caller may stop and let the event loop run
 * (provider serve plans a large request over several turns, src/provider/http.ts), and returns
 * its result at the end. Where it stops changes nothing in the result.
 */

/** Runs `steps` to its end, without stopping: the synchronous form of a function in steps. */
export function runToEnd<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/** Items of a long list read between two yields (a message of a history is a few microseconds). */
export const ITEMS_PER_STEP = 256;

/** A prompt's texts and blocks' ends counted between two yields (a new text also yields within itself). */
export const TEXTS_PER_STEP = 16;
