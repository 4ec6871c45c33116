/**
 * What the real-Paperclip tests share (`npm run test:paperclip`, vitest.paperclip.config.ts):
 * whether Paperclip is installed (skipped with one line off CI; required under CI, where .ci/run
 * installs it), the CLI as a process in a scratch TMPDIR (Paperclip's whole directory lives
 * there, so what is left of a run can be found), and the processes tied to that directory.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { paperclipUser, resolvePaperclipInstall } from '../../src/targets/paperclip/install.ts';
import { BIN } from '../helpers/cli.ts';
import { scratchDir } from '../helpers/tmp.ts';
import { waitUntil } from '../helpers/wait.ts';

/** Paperclip in fleetbench's cache (what `fleetbench targets install paperclip` puts there). */
export function paperclipInstalled(): { skip: boolean; require(): void } {
  let problem: string | undefined;
  try {
    resolvePaperclipInstall(undefined, paperclipUser());
  } catch (error) {
    problem = (error as Error).message;
  }
  const ci = Boolean(process.env.CI);
  if (problem !== undefined && !ci)
    process.stderr.write(`skipped: needs Paperclip (fleetbench targets install paperclip): ${problem}\n`);
  return {
    skip: problem !== undefined && !ci,
    require() {
      if (problem !== undefined)
        throw new Error(`Paperclip is not installed (.ci/run installs it): ${problem}`);
    },
  };
}

export interface CliProcess {
  child: ChildProcess;
  /** The run's TMPDIR: Paperclip's home, database and stand-ins are in a directory in it. */
  tmp: string;
  out: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/**
 * `fleetbench run ARGS --out OUT` as a process, with a TMPDIR of its own (and `env`); `prefix`
 * runs it under a wrapper (a network namespace: `unshare -n sh -c …`).
 */
export function runCli(
  args: string[],
  name: string,
  env: NodeJS.ProcessEnv = {},
  prefix: string[] = [],
): CliProcess {
  const base = scratchDir(`fleetbench-pc-${name}-`);
  // The server's user (nobody, under root) must reach its directory inside.
  chmodSync(base, 0o755);
  const out = join(base, 'out');
  const command = [...prefix, process.execPath, BIN, 'run', ...args, '--out', out, '--no-progress'];
  const child = spawn(command[0]!, command.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', TMPDIR: base, ...env },
  });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  child.stdout?.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, tmp: base, out, stderr: () => stderr, exited };
}

/** Trace lines so far (the writer flushes every 250 ms). */
export function traceLines(out: string): Array<Record<string, unknown>> {
  const path = join(out, 'trace.jsonl');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{') && l.endsWith('}'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Processes whose command line or working directory is inside `dir` (PostgreSQL, stand-ins, the server). */
export function processesIn(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${entry}/cwd`);
      } catch {
        // Gone, or not ours to read.
      }
      if (cmdline.includes(dir) || cwd.startsWith(dir)) found.push(`${entry} ${cmdline}`);
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Paperclip's directories left in a run's TMPDIR. */
export function leftDirs(tmp: string): string[] {
  return readdirSync(tmp).filter((name) => name.startsWith('fleetbench-paperclip-'));
}

/**
 * Waits for `condition` while the run is going: a run that exits first (it failed at start)
 * fails the wait at once with its stderr, instead of waiting out the whole timeout.
 */
export async function whileRunning(
  run: CliProcess,
  what: string,
  condition: () => boolean,
  timeoutMs: number,
): Promise<void> {
  let exited: number | null | undefined;
  void run.exited.then((code) => {
    exited = code;
  });
  await waitUntil(what, () => condition() || exited !== undefined, { timeoutMs, everyMs: 500 });
  if (!condition()) throw new Error(`the run exited (${exited}) before ${what}:\n${run.stderr()}`);
}

/** System V shared-memory segments created by these processes (PostgreSQL's, by its postmaster). */
export function shmSegmentsOf(pids: readonly number[]): string[] {
  const lines = readFileSync('/proc/sysvipc/shm', 'utf8').trim().split('\n').slice(1);
  return lines.filter((line) => pids.includes(Number(line.trim().split(/\s+/)[4])));
}
