/**
 * Runs `node ARGS…` under /usr/bin/time: wall milliseconds, CPU seconds (user + system, its
 * children included) and peak RSS in MB. The benches that time whole processes share it.
 */
import { spawn } from 'node:child_process';

export interface Timed {
  wallMs: number;
  cpuS: number;
  rssMb: number;
}

export function timedNode(args: string[]): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const p = spawn('/usr/bin/time', ['-f', 'timed %U %S %M', process.execPath, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let err = '';
    p.stderr.on('data', (d) => {
      err += d;
    });
    p.on('error', reject);
    p.on('close', (code) => {
      const m = /timed (\S+) (\S+) (\d+)/.exec(err);
      if (code !== 0 || !m) reject(new Error(`node ${args.join(' ')} exited ${code}: ${err.slice(-500)}`));
      else
        resolve({
          wallMs: performance.now() - started,
          cpuS: Number(m[1]) + Number(m[2]),
          rssMb: Number(m[3]) / 1024,
        });
    });
  });
}
