/**
 * A load target for bench/emulator.bench.ts, run in its own process so the load generator does
 * not share its event loop: `emulator TRACE` (the GitHub emulator with quota accounting and a
 * trace writer) or `bare BODYFILE` (node:http answering the same bytes). Prints one READY JSON
 * line, and on SIGTERM one DONE JSON line with what it answered.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator, startGitHubServer } from '../src/github/index.ts';
import { Rng } from '../src/rng.ts';
import { TraceWriter } from '../src/trace/writer.ts';

const [kind, file] = process.argv.slice(2);
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

if (kind === 'emulator') {
  const clock = new RealClock();
  const trace = new TraceWriter(file!, {
    runId: 'bench',
    tool: { name: 'fleetbench', version: 'bench' },
    clock: 'real',
    seed: 1,
    scenario: { name: 'emulator-bench', hash: null },
    epochMs: clock.epochMs,
    startedAt: new Date(clock.epochMs).toISOString(),
  });
  const big = 1_000_000_000;
  const emulator = new GitHubEmulator({
    clock,
    rng: new Rng(1),
    trace,
    fixtures: { repos: 1, issuesPerRepo: 10, pullsPerRepo: 5 },
    latency: false,
    limits: {
      primary: { user: { core: big } },
      secondary: { restPointsPerMinute: big, concurrent: big },
    },
  });
  const server = await startGitHubServer({ emulator });
  print({ ready: true, port: server.port, token: emulator.defaultToken });
  process.once('SIGTERM', async () => {
    await server.close();
    trace.close();
    print({ done: true, answered: emulator.stats().requests, traced: trace.counts.api });
    process.exit(0);
  });
} else if (kind === 'bare') {
  const body = readFileSync(file!);
  let answered = 0;
  const server = createServer((req, res) => {
    req.resume();
    answered++;
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(body.length),
    });
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => print({ ready: true, port: (server.address() as AddressInfo).port }));
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    print({ done: true, answered });
    process.exit(0);
  });
} else {
  console.error('usage: emulator-target.ts emulator TRACE | bare BODYFILE');
  process.exit(2);
}
