/**
 * Playing a planned answer on the run's clock: the one place the emulator waits. The HTTP
 * binding plays into a response, the in-process client into memory; both get the same times.
 * Chunks due at the same instant go out in one write (a provider's events arrive in packets, and
 * one syscall for a packet is what keeps 200 streams cheap). The waits are plain clock timers
 * chained by callbacks, not a promise and an abort listener per chunk: at 200 streams of a dozen
 * chunks each that bookkeeping was a measurable share of the emulator's CPU.
 */
import type { Clock, TimerId } from '../clock/clock.ts';
import type { PlayOutcome, ProviderAnswer } from './types.ts';

export interface AnswerSink {
  head(status: number, headers: Record<string, string>): void;
  write(data: string): void;
  end(): void;
  /** Close the connection at once, without an answer (an outage). */
  reset(): void;
  /** Close the connection after what was written, without finishing the answer (a cut stream). */
  cut(): void;
}

/**
 * Plays `answer`, which arrived at run time `arrival`, into `sink`. `signal` aborts it (the
 * client went away): the record then says `cancelled`.
 */
export function play(
  answer: ProviderAnswer,
  arrival: number,
  clock: Clock,
  sink: AnswerSink,
  signal?: AbortSignal,
): Promise<PlayOutcome> {
  return new Promise<PlayOutcome>((resolve, reject) => {
    let firstTokenAt: number | undefined;
    let timer: TimerId | undefined;
    let done = false;
    const finish = (outcome: PlayOutcome) => {
      if (done) return;
      done = true;
      signal?.removeEventListener('abort', onAbort);
      answer.finish(outcome, firstTokenAt);
      resolve(outcome);
    };
    const onAbort = () => {
      if (timer !== undefined) clock.clearTimeout(timer);
      finish('cancelled');
    };
    if (signal?.aborted) {
      finish('cancelled');
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    /** Runs `step` at `atMs` after arrival (at once when that is past). */
    const at = (atMs: number, step: () => void) => {
      const wait = arrival + atMs - clock.now();
      if (wait <= 0) step();
      else
        timer = clock.setTimeout(() => {
          timer = undefined;
          step();
        }, wait);
    };
    const guarded = (step: () => void) => () => {
      if (done) return;
      try {
        step();
      } catch (error) {
        done = true;
        signal?.removeEventListener('abort', onAbort);
        answer.finish('cancelled', firstTokenAt);
        reject(error);
      }
    };
    if (answer.reset) {
      guarded(() => {
        sink.reset();
        finish('reset');
      })();
      return;
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
      return;
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
      let packet = '';
      let first = false;
      while (i < stop && chunks.atMs(i) <= due) {
        packet += chunks.data(i);
        if (i === chunks.firstToken) first = true;
        i += 1;
      }
      if (packet !== '') sink.write(packet);
      if (first && firstTokenAt === undefined) firstTokenAt = clock.now();
      if (i < stop) at(chunks.atMs(i), next);
      else next();
    });
    guarded(() => sink.head(answer.status, answer.headers))();
    if (!done) at(chunks.length > 0 ? chunks.atMs(0) : 0, next);
  });
}
