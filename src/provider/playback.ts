/**
 * Playing a planned answer on the run's clock: the one place the emulator waits. The HTTP
 * binding plays into a response, the in-process client into memory; both get the same times.
 * Chunks due at the same instant go out in one write (a provider's events arrive in packets, and
 * one syscall for a packet is what keeps 200 streams cheap).
 */
import type { Clock } from '../clock/clock.ts';
import type { PlayOutcome, ProviderAnswer } from './types.ts';

export interface AnswerSink {
  head(status: number, headers: Record<string, string>): void;
  write(data: string): void;
  end(): void;
  /** Close the connection without finishing the answer (a cut stream, an outage). */
  reset(): void;
}

/**
 * Plays `answer`, which arrived at run time `arrival`, into `sink`. `signal` aborts it (the
 * client went away): the record then says `cancelled`.
 */
export async function play(
  answer: ProviderAnswer,
  arrival: number,
  clock: Clock,
  sink: AnswerSink,
  signal?: AbortSignal,
): Promise<PlayOutcome> {
  const until = async (atMs: number) => {
    const wait = arrival + atMs - clock.now();
    if (wait > 0) await clock.sleep(wait, signal);
  };
  let firstTokenAt: number | undefined;
  let outcome: PlayOutcome = 'complete';
  try {
    if (answer.reset) {
      outcome = 'reset';
      sink.reset();
      return outcome;
    }
    const chunks = answer.chunks;
    if (!chunks) {
      await until(answer.bodyAtMs ?? 0);
      sink.head(answer.status, answer.headers);
      if (answer.body !== undefined) sink.write(answer.body);
      sink.end();
      if (answer.status === 200) firstTokenAt = clock.now();
      return outcome;
    }
    sink.head(answer.status, answer.headers);
    const stop = answer.cutAt ?? chunks.length;
    let i = 0;
    while (i < stop) {
      const atMs = (chunks[i] as { atMs: number }).atMs;
      await until(atMs);
      let packet = '';
      let first = false;
      // Everything due now goes out in one write.
      while (i < stop && (chunks[i] as { atMs: number }).atMs <= clock.now() - arrival + 1e-9) {
        const chunk = chunks[i] as { data: string; firstToken?: boolean };
        packet += chunk.data;
        if (chunk.firstToken) first = true;
        i += 1;
      }
      if (packet === '' && i < stop && (chunks[i] as { atMs: number }).atMs <= atMs) {
        // Clock rounding: take the chunk we waited for.
        const chunk = chunks[i] as { data: string; firstToken?: boolean };
        packet = chunk.data;
        first = chunk.firstToken === true;
        i += 1;
      }
      sink.write(packet);
      if (first && firstTokenAt === undefined) firstTokenAt = clock.now();
    }
    if (stop < chunks.length) {
      outcome = 'cut';
      sink.reset();
    } else sink.end();
    return outcome;
  } catch (error) {
    if (signal?.aborted) {
      outcome = 'cancelled';
      return outcome;
    }
    throw error;
  } finally {
    answer.finish(outcome, firstTokenAt);
  }
}
