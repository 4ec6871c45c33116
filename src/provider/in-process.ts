/**
 * A request to the provider emulator without a socket: the answer is played on the emulator's
 * clock into memory, with each write's run time, exactly as the HTTP binding would send it. For
 * virtual-time runs and for tests that compare the two.
 */
import type { ProviderEmulator } from './emulator.ts';
import { play } from './playback.ts';
import type { PlayOutcome, ProviderRequest } from './types.ts';

export interface InProcessAnswer {
  status: number;
  headers: Record<string, string>;
  /** Every write, with the run time it went out. */
  writes: Array<{ t: number; data: string }>;
  body: string;
  outcome: PlayOutcome;
}

export async function requestInProcess(
  emulator: ProviderEmulator,
  request: ProviderRequest,
  signal?: AbortSignal,
): Promise<InProcessAnswer> {
  const arrival = emulator.clock.now();
  const answer = emulator.handle(request);
  const out: InProcessAnswer = { status: 0, headers: {}, writes: [], body: '', outcome: 'complete' };
  out.outcome = await play(
    answer,
    arrival,
    emulator.clock,
    {
      head: (status, headers) => {
        out.status = status;
        out.headers = headers;
      },
      write: (data) => {
        out.writes.push({ t: emulator.clock.now(), data });
        out.body += data;
      },
      flush: () => {},
      end: () => {},
      reset: () => {},
      cut: () => {},
    },
    signal,
  );
  return out;
}
