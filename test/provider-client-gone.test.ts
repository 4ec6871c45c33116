/**
 * A model request whose client goes away before its answer has ended is recorded as cancelled,
 * wherever the request was when the client left: its body still being read, waiting its turn to
 * be planned, planned and waiting for its first token, or streaming. A review found the one
 * place this did not hold: a request still waiting to be planned when its client left was later
 * played, in full, into the closed connection and recorded `ok` with every output token.
 * A property test searches over which clients leave and when.
 */
import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/real.ts';
import { LATENCY_PROFILES, ProviderEmulator, startProviderServer } from '../src/provider/index.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { waitUntil } from './helpers/wait.ts';

/** A prompt of ~150 KB, different per client, so that planning takes turns and requests queue. */
function body(client: number): string {
  const words = Array.from({ length: 25_000 }, (_, i) => `w${(i * 7 + client) % 9_973}`).join(' ');
  return JSON.stringify({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    stream: true,
    messages: [{ role: 'user', content: `fleetbench-script: client ${client} ${words}` }],
  });
}

/**
 * Sends client `id`'s request; with `leaveAfterMs`, destroys the connection that long after the
 * body was handed to the socket (before any answer can have ended: the first token takes 3 s).
 */
function send(url: string, id: number, leaveAfterMs: number | undefined): Promise<void> {
  const text = body(id);
  return new Promise((resolve) => {
    const req = httpRequest(
      `${url}/v1/messages`,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'x-api-key': 'k',
          'anthropic-version': '2023-06-01',
          'x-session-id': `c${id}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve());
        res.on('error', () => resolve());
      },
    );
    req.on('error', () => resolve());
    req.on('close', () => {
      if (leaveAfterMs !== undefined) resolve();
    });
    req.end(text, () => {
      if (leaveAfterMs !== undefined) setTimeout(() => req.destroy(), leaveAfterMs);
    });
  });
}

describe('a client that goes away', () => {
  it('before its answer ends: its request is recorded cancelled, never ok, wherever it was', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(fc.integer({ min: 0, max: 400 }), { nil: undefined, freq: 2 }), {
          minLength: 12,
          maxLength: 30,
        }),
        async (leaving) => {
          const trace = new MemorySink();
          const emulator = new ProviderEmulator({
            clock: new RealClock(),
            rng: new Rng(7),
            trace,
            latency: { ...LATENCY_PROFILES.fast!, ttft: { kind: 'fixed', ms: 3_000 }, spread: 0 },
          });
          const server = await startProviderServer({ emulator });
          try {
            await Promise.all(leaving.map((leaveAfterMs, id) => send(server.url, id, leaveAfterMs)));
            // Every request the server read is recorded once its answer ended or was cut.
            await waitUntil(
              'the records of the requests',
              () =>
                trace.records.filter((r) => r.kind === 'span' && r.name === 'provider.request').length >=
                leaving.filter((leave) => leave === undefined).length,
              { timeoutMs: 30_000, everyMs: 100 },
            );
            await new Promise((resolve) => setTimeout(resolve, 500));
            const outcomes = new Map<string, string>();
            for (const r of trace.records)
              if (r.kind === 'span' && r.name === 'provider.request' && r.session !== undefined)
                outcomes.set(r.session, r.outcome as string);
            leaving.forEach((leaveAfterMs, id) => {
              const outcome = outcomes.get(`c${id}`);
              if (leaveAfterMs === undefined) expect(outcome, `client ${id} stayed`).toBe('ok');
              // A request whose body never reached the server is not a request: no record.
              else if (outcome !== undefined) expect(outcome, `client ${id} left`).toBe('cancelled');
            });
          } finally {
            await server.close();
          }
        },
      ),
      { numRuns: 4 },
    );
  }, 180_000);
});
