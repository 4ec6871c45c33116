/**
 * The CLI as a process of its own (`fleetbench run …`, `fleetbench world …`), for what an
 * in-process call (cli.ts) cannot show: the sandbox, signals, the process group, the exit code
 * a shell sees. Its output is gathered, and the trace it left is read back.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN } from './cli.ts';

/** A trace line as the tests read it (any kind). */
export type TraceLine = {
  kind: string;
  name?: string;
  t?: number;
  session?: string;
  reason?: string;
  labels?: Record<string, unknown>;
  data?: Record<string, unknown>;
  [k: string]: unknown;
};

export interface CliProcessRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** `traceDir`'s trace.jsonl, line by line ([] when there is none). */
  records: TraceLine[];
  /** Wall time from the spawn to the exit. */
  ms: number;
}

export interface CliProcessOptions {
  cwd?: string;
  /** Added to the test process's environment (NO_COLOR=1 is set, as for a pipe). */
  env?: NodeJS.ProcessEnv;
  /** The whole process group is killed (SIGKILL) after this long. */
  timeoutMs?: number;
  /** SIGINT to the whole group, as Ctrl-C sends it, once this file exists. */
  interruptWhen?: string;
  /** Where the run writes trace.jsonl (its --out). */
  traceDir?: string;
}

/** Every line of `dir`/trace.jsonl, or [] when the run left none. */
export function traceLines(dir: string): TraceLine[] {
  try {
    return readFileSync(join(dir, 'trace.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as TraceLine);
  } catch {
    return [];
  }
}

/**
 * `node bin/fleetbench.js ARGS` in a process group of its own (so a timeout or an interrupt
 * reaches the commands it started too), resolved when it exits.
 */
export function runCliProcess(args: string[], options: CliProcessOptions = {}): Promise<CliProcessRun> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? process.cwd(),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', ...options.env },
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const group = (signal: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // The group is gone already.
      }
    };
    let poll: NodeJS.Timeout | undefined;
    const marker = options.interruptWhen;
    if (marker !== undefined)
      poll = setInterval(() => {
        if (!existsSync(marker)) return;
        clearInterval(poll);
        group('SIGINT');
      }, 50);
    const timer = setTimeout(() => group('SIGKILL'), options.timeoutMs ?? 120_000);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      clearInterval(poll);
      const records = options.traceDir === undefined ? [] : traceLines(options.traceDir);
      resolve({ code, signal, stdout, stderr, records, ms: performance.now() - started });
    });
  });
}
