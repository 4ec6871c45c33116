/**
 * The freeze tests' probe (test/helpers/probe.ts) counts a probe's wall time less the time the
 * server and the test waited for a CPU. What must still hold: a server that freezes is running, so
 * its freeze is counted whole, whatever the machine's load.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { slowestAnswerDuring } from './helpers/probe.ts';

// A server that, asked POST /freeze, holds its event loop for 4 s of its own CPU time. The probe's
// GETs go out every 100 ms from this test's timers, and on a loaded machine (the suite on two
// cores) a timer fired 0.7 s late: the GET that sees the freeze then arrives that far into it. The
// 2 s of slack between the freeze and the bound below is for that lateness, not for the probe.
const SERVER = `
  const http = require('node:http');
  const server = http.createServer((req, res) => {
    if (req.method === 'POST') {
      const start = process.cpuUsage();
      for (;;) {
        const used = process.cpuUsage(start);
        if (used.user + used.system >= 4_000_000) break;
      }
    }
    res.end('ok');
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
  setTimeout(() => process.exit(0), 60_000).unref();`;

describe('the freeze probe', () => {
  it('counts a server that holds its loop for 4 s of CPU as over 2 s, and a server that answers as well under it', async () => {
    const child = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const port = await new Promise<string>((resolve) =>
        child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())),
      );
      const url = `http://127.0.0.1:${port}/`;
      const quiet = await slowestAnswerDuring(
        url,
        () => new Promise((resolve) => setTimeout(resolve, 500)),
        {},
        { serverPid: child.pid },
      );
      expect(quiet).toBeLessThan(2_000);
      const frozen = await slowestAnswerDuring(
        url,
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 150));
          await (await fetch(url, { method: 'POST' })).text();
        },
        {},
        { serverPid: child.pid },
      );
      expect(frozen).toBeGreaterThan(2_000);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
