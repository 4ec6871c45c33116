/**
 * A run's output directory, claimed before anything is written to it (docs/limits.md#runs):
 *
 * - one run at a time: a lock file (`.fleetbench.lock`, created exclusively, with the pid) makes
 *   a second run with the same `--out` exit 2 naming the first, instead of both interleaving
 *   their traces; a lock whose process is gone (a SIGKILL) is taken over;
 * - no writing through a link: a symbolic link, or a file with other hard links, already in the
 *   directory is refused by name, since the run would overwrite what it points to.
 */
import { closeSync, lstatSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { FleetbenchError } from './errors.ts';
import { linkProblem, makeDirectories, outputError } from './safe-write.ts';

export const LOCK_FILE = '.fleetbench.lock';

interface LockOwner {
  pid: number;
  host: string;
  command: string;
  startedAt: string;
}

export interface OutputDirClaim {
  /** Frees the directory for the next run (the lock file removed, if still this run's). */
  release(): void;
}

export function claimOutputDir(dir: string, command: string): OutputDirClaim {
  try {
    makeDirectories(dir);
  } catch (error) {
    throw outputError(dir, error);
  }
  refuseLinks(dir);
  const path = join(dir, LOCK_FILE);
  const owner: LockOwner = {
    pid: process.pid,
    host: hostname(),
    command,
    startedAt: new Date().toISOString(),
  };
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      writeSync(fd, `${JSON.stringify(owner)}\n`);
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
      const holder = readOwner(path);
      if (holder && isRunning(holder))
        throw new FleetbenchError(
          'E_USAGE',
          `${dir} is in use by another fleetbench run (${holder.command}, pid ${holder.pid}, started ${holder.startedAt}): two runs in one directory would interleave their traces; give this one another --out`,
          { hint: `if no such run is left, remove ${path}` },
        );
      // Left by a run that was killed (or unreadable): take it over.
      rmSync(path, { force: true });
    }
  }
  const onExit = () => removeIfOurs(path);
  process.once('exit', onExit);
  return {
    release() {
      process.off('exit', onExit);
      removeIfOurs(path);
    },
  };
}

function refuseLinks(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (name === LOCK_FILE) continue;
    const path = join(dir, name);
    const why = linkProblem(path, lstatSync(path));
    if (why)
      throw new FleetbenchError(
        'E_USAGE',
        `${path} ${why}: a run writes its files in --out, never through a link to somewhere else`,
        { hint: 'remove it, or give the run another --out' },
      );
  }
}

/**
 * The run a lock file names, or undefined when it is not a lock fleetbench wrote: every field
 * present, a pid that is a positive integer, texts of at most 256 characters without control
 * characters. Anything else (empty, `{"pid": 1}`, a megabyte of command) is unreadable and taken
 * over, and never quoted in a message.
 */
function readOwner(path: string): LockOwner | undefined {
  let owner: Partial<Record<keyof LockOwner, unknown>>;
  try {
    owner = JSON.parse(readFileSync(path, 'utf8')) as typeof owner;
  } catch {
    return undefined;
  }
  const text = (value: unknown): value is string =>
    typeof value === 'string' && value.length > 0 && value.length <= 256 && !/[\x00-\x1f\x7f]/.test(value);
  const { pid, host, command, startedAt } = owner ?? {};
  if (!Number.isSafeInteger(pid) || (pid as number) <= 0) return undefined;
  if (!text(host) || !text(command) || !text(startedAt)) return undefined;
  return { pid: pid as number, host, command, startedAt };
}

/** Whether the lock's process still runs (on another host: assumed, a shared volume cannot tell). */
function isRunning(owner: LockOwner): boolean {
  if (owner.host !== hostname()) return true;
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function removeIfOurs(path: string): void {
  if (readOwner(path)?.pid === process.pid) rmSync(path, { force: true });
}
