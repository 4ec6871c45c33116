/**
 * A load target for bench/emulator.bench.ts, run in its own process so the load generator does
 * not share its event loop: `emulator TRACE` (the GitHub emulator with quota accounting and a
 * trace writer) or `bare RESPONSEFILE` (node:http replaying a captured response: the same status
 * line, headers and body bytes, with no logic). Prints one READY JSON
 * line, and on SIGTERM one DONE JSON line with what it answered. With BENCH_TLS_DIR set (a
 * directory holding cert.pem and key.pem) both serve TLS with HTTP/2 by ALPN, as
 * `github serve --tls` does.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator, startGitHubServer } from '../src/github/index.ts';
import { TraceWriter } from '../src/trace/writer.ts';

const [kind, file] = process.argv.slice(2);
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
/** CPU time this process spent (user + system, µs), so figures survive a busy machine. */
let cpuStart = process.cpuUsage();
const cpuMicros = () => {
  const used = process.cpuUsage(cpuStart);
  return used.user + used.system;
};
/** Load generators send SIGUSR2 when the measured run starts (after warm-up). */
let answeredAtMark = 0;
process.on('SIGUSR2', () => {
  cpuStart = process.cpuUsage();
  answeredAtMark = answeredNow();
});
let answeredNow = () => 0;
const tlsDir = process.env.BENCH_TLS_DIR;
const tls = tlsDir
  ? { key: readFileSync(join(tlsDir, 'key.pem')), cert: readFileSync(join(tlsDir, 'cert.pem')) }
  : undefined;

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
      // Throughput, not limits, is measured: the CPU-time limit (on whatever the latency,
      // counting each answer's time) would refuse a saturating client.
      secondary: {
        restPointsPerMinute: big,
        concurrent: big,
        cpuMsPerMinute: big,
        graphqlCpuMsPerMinute: big,
      },
    },
  });
  const server = await startGitHubServer({ emulator, tls });
  answeredNow = () => emulator.stats().requests;
  print({ ready: true, port: server.port, token: emulator.defaultToken });
  process.once('SIGTERM', async () => {
    const measured = answeredNow() - answeredAtMark;
    const cpu = cpuMicros();
    await server.close();
    trace.close();
    print({
      done: true,
      answered: emulator.stats().requests,
      traced: trace.counts.api,
      measured,
      cpuMicros: cpu,
    });
    process.exit(0);
  });
} else if (kind === 'bare') {
  // The emulator's captured answer: the same status, headers and body bytes, with no logic.
  const captured = JSON.parse(readFileSync(file!, 'utf8')) as {
    status: number;
    headers: Record<string, string>;
    body: string;
  };
  const body = Buffer.from(captured.body, 'base64');
  let answered = 0;
  answeredNow = () => answered;
  const handler = (
    req: { resume(): void },
    res: { writeHead(status: number, headers: Record<string, string>): unknown; end(b: Buffer): unknown },
  ) => {
    req.resume();
    answered++;
    res.writeHead(captured.status, captured.headers);
    res.end(body);
  };
  const server = tls ? createSecureServer({ ...tls, allowHTTP1: true }, handler) : createServer(handler);
  server.listen(0, '127.0.0.1', () => print({ ready: true, port: (server.address() as AddressInfo).port }));
  process.once('SIGTERM', () => {
    const measured = answered - answeredAtMark;
    const cpu = cpuMicros();
    server.close();
    if ('closeAllConnections' in server) server.closeAllConnections();
    print({ done: true, answered, measured, cpuMicros: cpu });
    process.exit(0);
  });
} else {
  console.error('usage: emulator-target.ts emulator TRACE | bare RESPONSEFILE');
  process.exit(2);
}
