import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.ts';
import type { CliStream } from '../../src/cli/output.ts';

export const BIN = fileURLToPath(new URL('../../bin/fleetbench.js', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A stream that keeps what is written (not a terminal, like a pipe). */
function buffer(): CliStream & { text: string } {
  return {
    text: '',
    isTTY: false,
    write(chunk: string) {
      this.text += chunk;
      return true;
    },
  };
}

/** The working directory of the in-process call running now (one at a time may change it). */
let cwdHeld: { cwd: string; calls: number } | undefined;

/**
 * Runs the CLI in-process: `main(argv, io)` with buffers for stdout and stderr and the test
 * process's environment (with NO_COLOR=1, like a pipe) plus `env`. The same program a user
 * runs, minus the process around it: for signals, exit codes as a process, the bin and pipes,
 * use `runCli` (test/e2e/). With `cwd`, the process changes directory for the call; calls with
 * different `cwd` must not overlap.
 */
export async function cli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = buffer();
  const stderr = buffer();
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ...options.env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  const restore = options.cwd === undefined ? undefined : enter(options.cwd);
  try {
    const code = await main(args, { stdout, stderr, env });
    return { code, stdout: stdout.text, stderr: stderr.text };
  } finally {
    restore?.();
  }
}

function enter(cwd: string): () => void {
  if (cwdHeld && cwdHeld.cwd !== cwd)
    throw new Error(
      `cli(): a call in ${cwdHeld.cwd} is still running; calls with another cwd must not overlap`,
    );
  const before = process.cwd();
  if (!cwdHeld) {
    process.chdir(cwd);
    cwdHeld = { cwd, calls: 0 };
  }
  cwdHeld.calls++;
  return () => {
    if (cwdHeld && --cwdHeld.calls === 0) {
      cwdHeld = undefined;
      process.chdir(before);
    }
  };
}

/** Runs the real CLI as a subprocess, the way a user does (bin/fleetbench.js). */
export function runCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: { ...process.env, NO_COLOR: '1', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}
