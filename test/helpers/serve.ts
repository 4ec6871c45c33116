import { type ChildProcess, spawn } from 'node:child_process';
import { BIN } from './cli.ts';

export interface CliServer<T> {
  /** The first line it printed (with --json: its connection details). */
  info: T;
  process: ChildProcess;
  /** Its exit code once it has exited (null when a signal ended it). */
  exited: Promise<number | null>;
  stderr(): string;
  /** SIGTERM, then SIGKILL after 5 s; resolves when it has exited. */
  stop(): Promise<void>;
}

/**
 * Starts a long-running CLI command (`github serve`, `reference serve`) with --json and waits
 * for its JSON line. The caller stops it (`stop()` in a finally, or through `stopAll` in an
 * afterAll registered at collection time: hooks registered inside a test never run).
 */
const started = new Set<() => Promise<void>>();

/** Stops every server this file started (for an afterAll at the top level of a file). */
export async function stopAll(): Promise<void> {
  await Promise.all([...started].map((stop) => stop()));
  started.clear();
}

export function startCliServer<T = Record<string, unknown>>(
  args: string[],
  timeoutMs = 60_000,
): Promise<CliServer<T>> {
  const child = spawn(process.execPath, [BIN, ...args, '--json'], {
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  started.add(stop);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${args.join(' ')}: no JSON line within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.stdout.on('data', (d) => {
      stdout += d;
      const newline = stdout.indexOf('\n');
      if (newline < 0) return;
      clearTimeout(timer);
      resolve({
        info: JSON.parse(stdout.slice(0, newline)) as T,
        process: child,
        exited,
        stderr: () => stderr,
        stop,
      });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(
        new Error(`${args.join(' ')} exited (${code}) before printing its JSON line; stderr: ${stderr}`),
      );
    });
  });
}

/** What `reference serve --json` prints. */
export interface ReferenceServeInfo {
  url: string;
  pid: number;
  controlPlanePid: number;
  state: string;
}

/** `fleetbench reference serve` on a free loopback port, its durable state in `stateDir`. */
export function startReferenceServe(stateDir: string): Promise<CliServer<ReferenceServeInfo>> {
  return startCliServer<ReferenceServeInfo>(['reference', 'serve', '--port', '0', '--state', stateDir]);
}

/** Whether a process with this pid exists (signal 0 probes without killing). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
