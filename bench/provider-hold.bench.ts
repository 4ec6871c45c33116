/**
 * One ~16 MiB model request's hold on `provider serve`'s event loop (issue 49: no request holds
 * it past 50 ms), with its body parsed by the worker threads (src/provider/json-workers.ts) and,
 * as the reference, on the main thread (`offThreadFromBytes: Infinity`, the server before them).
 * Two bodies: a long history (15,000 messages of English, 16.3 MB: over the window, a 400) and
 * one slow to parse, quick to plan (a short prompt and 380,000 small objects in a field the
 * emulator does not read, 15 MiB: a 200 from count_tokens). Per request: the event loop's
 * longest delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution), the slowest answer to a
 * GET /v1/models sent every 10 ms meanwhile, and the request's wall time; targets alternate
 * rounds, medians over the rounds. Client and server share the process, alike for both.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/real.ts';
import { ProviderEmulator, startProviderServer } from '../src/provider/index.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { envInteger } from './env.ts';
import type { Bench } from './run.ts';

const ROUNDS = envInteger('BENCH_ROUNDS', 3, 1, 100);
const HEADERS = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };

function bodies(): Record<string, { path: string; body: Buffer }> {
  const words = 'the quick brown fox jumps over the lazy dog and then some more words follow here '.repeat(
    13,
  );
  const messages = [];
  for (let i = 0; i < 15_000; i++)
    messages.push({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${words}` });
  const item = '{"id":12345,"ok":true,"tags":["a","b"]},';
  const items = item.repeat(Math.floor((15 * 1024 * 1024) / item.length) - 1);
  return {
    history: {
      path: '/v1/messages',
      body: Buffer.from(JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages })),
    },
    objects: {
      path: '/v1/messages/count_tokens',
      body: Buffer.from(
        `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"Hello"}],"extra":[${items}null]}`,
      ),
    },
  };
}

async function once(offThread: boolean, path: string, body: Buffer) {
  const emulator = new ProviderEmulator({ clock: new RealClock(), rng: new Rng(5), trace: new MemorySink() });
  const server = await startProviderServer({
    emulator,
    offThreadFromBytes: offThread ? undefined : Infinity,
  });
  try {
    const delay = monitorEventLoopDelay({ resolution: 1 });
    let done = false;
    let slowest = 0;
    const probe = (async () => {
      while (!done) {
        const started = performance.now();
        await (await fetch(`${server.url}/v1/models`, { headers: { authorization: 'Bearer p' } })).text();
        slowest = Math.max(slowest, performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    delay.enable();
    const started = performance.now();
    const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: HEADERS, body });
    await response.text();
    const wall = performance.now() - started;
    delay.disable();
    done = true;
    await probe;
    return { status: response.status, holdMs: delay.max / 1e6, probeMs: slowest, wallMs: wall };
  } finally {
    await server.close();
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

const bench: Bench = {
  name: 'provider-hold',
  description:
    "one ~16 MiB request's hold on provider serve's event loop, parsed in a worker vs on the main thread",
  async run() {
    const out: Record<string, number | string> = {};
    for (const [name, { path, body }] of Object.entries(bodies())) {
      const seen: Record<string, Array<{ holdMs: number; probeMs: number; wallMs: number }>> = {
        workers: [],
        main: [],
      };
      for (let round = 0; round < ROUNDS; round++)
        for (const target of round % 2 ? ['main', 'workers'] : ['workers', 'main']) {
          const result = await once(target === 'workers', path, body);
          seen[target]?.push(result);
          console.log(
            `${name} (${body.length} bytes) ${target}: ${result.status}, loop held ≤ ${result.holdMs.toFixed(0)} ms, slowest probe ${result.probeMs.toFixed(0)} ms, request ${result.wallMs.toFixed(0)} ms`,
          );
        }
      for (const [target, results] of Object.entries(seen)) {
        out[`${name} ${target}: longest hold, median ms`] = Math.round(median(results.map((r) => r.holdMs)));
        out[`${name} ${target}: slowest probe, median ms`] = Math.round(
          median(results.map((r) => r.probeMs)),
        );
        out[`${name} ${target}: request, median ms`] = Math.round(median(results.map((r) => r.wallMs)));
      }
      const ratio = (key: string) =>
        ((out[`${name} workers: ${key}`] as number) / (out[`${name} main: ${key}`] as number)).toFixed(2);
      out[`${name}: hold, workers / main`] = ratio('longest hold, median ms');
      out[`${name}: request time, workers / main`] = ratio('request, median ms');
    }
    return out;
  },
};
export default bench;
