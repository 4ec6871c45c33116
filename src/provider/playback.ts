/**
 * Playing a planned answer on the run's clock: the one place the emulator waits. The HTTP
 * binding plays into a response, the in-process client into memory; both get the same times.
 * Chunks due at the same instant go out in one write (a provider's events arrive in packets, and
 * one syscall for a packet is what keeps 200 streams cheap). The waits are plain clock timers
 * chained by callbacks, not a promise and an abort listener per chunk: at 200 streams of a dozen
 * chunks each that bookkeeping was a measurable share of the emulator's CPU.
 */
import type { Clock, TimerId } from '../clock/clock.ts';

/** What playing needs of a clock: the time, and timers (the HTTP binding hands a yielding one). */
export type PlayClock = Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;

import type { PlayOutcome, ProviderAnswer } from './types.ts';

export interface AnswerSink {
  /** The status and headers: they go out with the first write, or at `flush`. */
  head(status: number, headers: Record<string, string>): void;
  /** Sends the head now, without waiting for the first write. */
  flush(): void;
  write(data: string): void;
  end(): void;
  /** Close the connection at once, without an answer (an outage). */
  reset(): void;
  /** Close the connection after what was written, without finishing the answer (a cut stream). */
  cut(): void;
}

/**
 * Plays `answer`, which arrived at run time `arrival`, into `sink`; `done` is called once with
 * how it ended (or with the error a sink threw). Returns what cancels it (the client went away):
 * the record then says `cancelled`. Callbacks, not a promise and an abort signal: the HTTP
 * binding plays every request this way, and each of those is an allocation and a listener.
 */
export function startPlaying(
  answer: ProviderAnswer,
  arrival: number,
  clock: PlayClock,
  sink: AnswerSink,
  done: (outcome: PlayOutcome, error?: unknown) => void,
): () => void {
  let firstTokenAt: number | undefined;
  let timer: TimerId | undefined;
  let over = false;
  const finish = (outcome: PlayOutcome, error?: unknown) => {
    if (over) return;
    over = true;
    if (timer !== undefined) clock.clearTimeout(timer);
    answer.finish(outcome, firstTokenAt);
    done(outcome, error);
  };
  const cancel = () => finish('cancelled');
  /** The step the one pending timer runs: one callback for every wait, not a closure per chunk. */
  let due: () => void = () => {};
  const fire = () => {
    timer = undefined;
    due();
  };
  /** Runs `step` at `atMs` after arrival (at once when that is past). */
  const at = (atMs: number, step: () => void) => {
    const wait = arrival + atMs - clock.now();
    if (wait <= 0) step();
    else {
      due = step;
      timer = clock.setTimeout(fire, wait);
    }
  };
  const guarded = (step: () => void) => () => {
    if (over) return;
    try {
      step();
    } catch (error) {
      finish('cancelled', error);
    }
  };
  if (answer.reset) {
    guarded(() => {
      sink.reset();
      finish('reset');
    })();
    return cancel;
  }
  const chunks = answer.chunks;
  if (!chunks) {
    at(
      answer.bodyAtMs ?? 0,
      guarded(() => {
        sink.head(answer.status, answer.headers);
        if (answer.body !== undefined) sink.write(answer.body);
        sink.end();
        if (answer.status === 200) firstTokenAt = clock.now();
        finish('complete');
      }),
    );
    return cancel;
  }
  const stop = Math.min(answer.cutAt ?? chunks.length, chunks.length);
  let i = 0;
  const next = guarded(() => {
    if (i >= stop) {
      if (stop < chunks.length) {
        sink.cut();
        finish('cut');
      } else {
        sink.end();
        finish('complete');
      }
      return;
    }
    // Everything due by now goes out in one write (a late timer sends what it fell behind on
    // together, so overdue chunks never recurse).
    const due = Math.max(chunks.atMs(i), clock.now() - arrival);
    const from = i;
    while (i < stop && chunks.atMs(i) <= due) i += 1;
    const first = from <= chunks.firstToken && chunks.firstToken < i;
    const packet = chunks.data(from, i);
    if (packet !== '') sink.write(packet);
    if (first && firstTokenAt === undefined) firstTokenAt = clock.now();
    if (i >= stop) next();
    else if (firstTokenAt === undefined || !chunks.writeGapMs) at(chunks.atMs(i), next);
    else at(Math.max(chunks.atMs(i), clock.now() - arrival + chunks.writeGapMs()), next);
  });
  // A stream's head goes out at once, as the providers send it (a client's first-byte timer starts
  // there): with its first chunk when that is due now (one write, not two), else on its own.
  const firstAt = chunks.length > 0 ? chunks.atMs(0) : 0;
  guarded(() => {
    sink.head(answer.status, answer.headers);
    if (arrival + firstAt > clock.now()) sink.flush();
  })();
  if (!over) at(firstAt, next);
  return cancel;
}

/** `startPlaying` as a promise, cancelled by `signal`: rejects with the error a sink threw. */
export function play(
  answer: ProviderAnswer,
  arrival: number,
  clock: Clock,
  sink: AnswerSink,
  signal?: AbortSignal,
): Promise<PlayOutcome> {
  return new Promise<PlayOutcome>((resolve, reject) => {
    if (signal?.aborted) {
      answer.finish('cancelled');
      resolve('cancelled');
      return;
    }
    let settled = false;
    const onAbort = () => cancel();
    const cancel = startPlaying(answer, arrival, clock, sink, (outcome, error) => {
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (error !== undefined) reject(error);
      else resolve(outcome);
    });
    if (!settled) signal?.addEventListener('abort', onAbort, { once: true });
  });
}
