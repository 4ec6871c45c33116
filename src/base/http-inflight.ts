/**
 * The requests a server has not answered yet. A server that stops (SIGTERM, the end of a run)
 * answers them itself, `503` with `connection: close`, and says how many it cancelled (an event,
 * a log line), instead of cutting their connections without a word: the client learns the
 * request was not served, and the record says so (docs/limits.md#servers).
 */
import type { ServerResponse } from 'node:http';

export class InFlight {
  private readonly open = new Set<ServerResponse>();

  /** Counts `res` until it is answered or its connection closes. */
  track(res: ServerResponse): void {
    this.open.add(res);
    res.once('close', () => this.open.delete(res));
  }

  /**
   * Answers every request whose answer has not begun with `answer` (which writes the whole
   * answer), and returns how many it answered. Answers already under way (a stream) are left to
   * their own end. A handler that finishes later must not write again: see `answered`.
   */
  cancelAll(answer: (res: ServerResponse) => void): number {
    let cancelled = 0;
    for (const res of this.open) {
      if (res.headersSent) continue;
      res.setHeader('connection', 'close');
      answer(res);
      cancelled++;
    }
    return cancelled;
  }
}

/** Whether `res` has been answered already (by a shutdown that cancelled it, say): write nothing more. */
export function answered(res: ServerResponse): boolean {
  return res.headersSent || res.writableEnded || res.destroyed;
}
