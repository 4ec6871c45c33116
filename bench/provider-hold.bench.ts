/**
 * One hostile model request's hold on `provider serve`'s event loop (issue 49: no request holds
 * it past 50 ms), the server as it is (`now`: large bodies parsed by worker threads, plans run in
 * steps) against the server before that work (`before`: everything on the main thread, each plan
 * whole in one turn), and against `whole` (as now, but a large body handed back from its worker
 * whole instead of only the fields the emulator reads). Three bodies, each sent alone to a fresh server process (bench/
 * provider-hold-target.ts: a cold process, and the client's work out of the figure): a long
 * history (15,000 messages of English, 16.3 MB: over the window, a 400), one slow to parse and
 * quick to plan (a short prompt and 380,000 small objects in a field the emulator does not read,
 * 15 MiB: a 200 from count_tokens), and a first prompt of 533 KiB of English (counted exactly up
 * to the work bound on a cold tokenizer). Per request: the server's longest event-loop delay
 * (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and longest collection, the slowest answer
 * to a GET /v1/models sent every 10 ms on a held connection meanwhile, and the request's wall
 * time; targets alternate rounds, medians over the rounds.
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { envInteger } from './env.ts';
import { prose } from './prose.ts';
import type { Bench } from './run.ts';

const ROUNDS = envInteger('BENCH_ROUNDS', 3, 1, 100);
/** `HOLD_BODIES=history,prose`: only these bodies (default all). */
const ONLY = process.env.HOLD_BODIES?.split(',');
/**
 * The servers compared (bench/provider-hold-target.ts): `now`; `whole`, as now but a large body
 * handed back from its worker whole, not only the fields the emulator reads (the code before that
 * change); `before`, everything on the main thread. `HOLD_TARGETS=now,whole`: only these.
 */
const TARGETS = (process.env.HOLD_TARGETS?.split(',') ?? ['now', 'whole', 'before']) as Target[];
type Target = 'now' | 'whole' | 'before';
const HEADERS = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };

function bodies(): Record<string, { path: string; body: Buffer }> {
  const words = 'the quick brown fox jumps over the lazy dog and then some more words follow here '.repeat(
    13,
  );
  const messages: Array<{ role: string; content: string }> = [];
  for (let i = 0; i < 15_000; i++)
    messages.push({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${words}` });
  /** The history's first `count` messages: where the hold crosses 50 ms. */
  const history = (count: number) => ({
    path: '/v1/messages',
    body: Buffer.from(
      JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: messages.slice(0, count) }),
    ),
  });
  const item = '{"id":12345,"ok":true,"tags":["a","b"]},';
  const items = item.repeat(Math.floor((15 * 1024 * 1024) / item.length) - 1);
  return {
    history: history(15_000),
    // 4.1 and 8.2 MB: over the worker's 1 MiB, and over the window too (a 400).
    history4: history(3_750),
    history8: history(7_500),
    // The floor: a small request, what the same measure gives on this machine at its load.
    small: {
      path: '/v1/messages',
      body: Buffer.from(
        JSON.stringify({
          model: 'claude-sonnet-4-5',
          max_tokens: 100,
          messages: [{ role: 'user', content: 'Hello' }],
        }),
      ),
    },
    prose: {
      path: '/v1/messages',
      body: Buffer.from(
        JSON.stringify({
          model: 'claude-sonnet-4-5',
          max_tokens: 100,
          messages: [{ role: 'user', content: prose(533 * 1024) }],
        }),
      ),
    },
    objects: {
      path: '/v1/messages/count_tokens',
      body: Buffer.from(
        `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"Hello"}],"extra":[${items}null]}`,
      ),
    },
  };
}

const TARGET = fileURLToPath(new URL('provider-hold-target.ts', import.meta.url));

/** Posts `body` and reads the answer whole: status and wall time. */
function post(url: string, path: string, body: Buffer): Promise<{ status: number; wallMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      `${url}${path}`,
      { method: 'POST', headers: { ...HEADERS, 'content-length': body.length } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, wallMs: performance.now() - started }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function once(target: Target, path: string, body: Buffer) {
  const child = spawn(process.execPath, ['--import', 'tsx', TARGET, target], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error(`${target} target exited before it was ready`);
  const { url } = JSON.parse(first.value) as { url: string };
  // The probe's connection is opened (and the server warmed to it) before the request.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const probeOnce = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      request(`${url}/v1/models`, { agent, headers: { authorization: 'Bearer p' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(performance.now() - started));
      })
        .on('error', reject)
        .end();
    });
  for (let i = 0; i < 5; i++) await probeOnce();
  let done = false;
  let slowest = 0;
  child.kill('SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 50));
  const probe = (async () => {
    while (!done) {
      slowest = Math.max(slowest, await probeOnce());
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  const answer = await post(url, path, body);
  done = true;
  await probe;
  agent.destroy();
  child.kill('SIGTERM');
  const report = await lines.next();
  if (report.done) throw new Error(`${target} target exited without reporting`);
  const { holdMs, gcMaxMs } = JSON.parse(report.value) as { holdMs: number; gcMaxMs: number };
  return { status: answer.status, holdMs, gcMaxMs, probeMs: slowest, wallMs: answer.wallMs };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

const bench: Bench = {
  name: 'provider-hold',
  description:
    "one hostile request's hold on provider serve's event loop (16 MiB bodies, a 533 KiB first prompt), now vs before",
  async run() {
    const out: Record<string, number | string> = {};
    for (const [name, { path, body }] of Object.entries(bodies())) {
      if (ONLY && !ONLY.includes(name)) continue;
      const seen: Record<
        string,
        Array<{ holdMs: number; gcMaxMs: number; probeMs: number; wallMs: number }>
      > = Object.fromEntries(TARGETS.map((target) => [target, []]));
      for (let round = 0; round < ROUNDS; round++)
        // Each round in another order: now first, then second, ...
        for (const [i] of TARGETS.entries()) {
          const target = TARGETS[(i + round) % TARGETS.length] as Target;
          const result = await once(target, path, body);
          seen[target]?.push(result);
          console.log(
            `${name} (${body.length} bytes) ${target}: ${result.status}, loop held ≤ ${result.holdMs.toFixed(0)} ms (longest collection ${result.gcMaxMs.toFixed(0)} ms), slowest probe ${result.probeMs.toFixed(0)} ms, request ${result.wallMs.toFixed(0)} ms`,
          );
        }
      for (const [target, results] of Object.entries(seen)) {
        out[`${name} ${target}: longest hold, median ms`] = Math.round(median(results.map((r) => r.holdMs)));
        out[`${name} ${target}: longest hold, max ms`] = Math.round(
          Math.max(...results.map((r) => r.holdMs)),
        );
        out[`${name} ${target}: longest collection, median ms`] = Math.round(
          median(results.map((r) => r.gcMaxMs)),
        );
        out[`${name} ${target}: slowest probe, median ms`] = Math.round(
          median(results.map((r) => r.probeMs)),
        );
        out[`${name} ${target}: request, median ms`] = Math.round(median(results.map((r) => r.wallMs)));
      }
      for (const reference of TARGETS.filter((target) => target !== 'now')) {
        if (!TARGETS.includes('now')) break;
        const ratio = (key: string) =>
          ((out[`${name} now: ${key}`] as number) / (out[`${name} ${reference}: ${key}`] as number)).toFixed(
            2,
          );
        out[`${name}: hold, now / ${reference}`] = ratio('longest hold, median ms');
        out[`${name}: request time, now / ${reference}`] = ratio('request, median ms');
      }
    }
    return out;
  },
};
export default bench;
