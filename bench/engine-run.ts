/**
 * One virtual-time run in a process of its own (bench/engine-child.ts), so that its wall time
 * and peak RSS are its own: what the engine and turnover benches measure.
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

const child = fileURLToPath(new URL('./engine-child.ts', import.meta.url));

export interface ChildResult {
  wallMs: number;
  virtualMs: number;
  events: number;
  sessions: number;
  maxRssMb: number;
}

export function runEngineChild(ref: string, outDir: string, sets: string[]): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', child, ref, outDir, ...sets], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.on('error', reject);
    p.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`engine child exited ${code}`)),
    );
  });
}

/** `load average at start: 1.20 0.90 0.70`: the context every figure needs on a shared machine. */
export function loadLine(when: string): string {
  return `load average ${when}: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
}
