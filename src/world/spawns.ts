/**
 * The agents a world's command started (docs/world.md, "Agents"): each launcher appends
 * `<pid> <cli>` to the world's spawn list and execs the real CLI; this reads the list as it
 * grows, names each spawn from /proc (its start time, parent, command line and working
 * directory, with the pid as seen from outside the world's pid namespace), writes an
 * `agent.spawn` event at the time the process started, and an `agent.exit` when it is gone
 * (found by a poll every EXIT_POLL_MS: the exit time is known to that precision, the exit code
 * not at all, since the control plane, not fleetbench, is the agent's parent).
 */
import { closeSync, type FSWatcher, openSync, readSync, statSync, watch } from 'node:fs';
import type { Clock } from '../clock/clock.ts';
import type { TraceSink } from '../trace/writer.ts';
import { innermostPid, isAlive, outerPid, processFacts, startTicks } from './procfs.ts';

/** How often live agents are checked for an exit (the precision of `agent.exit`'s time). */
export const EXIT_POLL_MS = 100;
/** At most this many spawns per world (each one is a process on this machine): docs/limits.md. */
export const MAX_WORLD_SPAWNS = 100_000;
/** A spawn-list line longer than this is not a launcher's and is skipped. */
const MAX_LINE = 64;

export interface Spawn {
  /** `a1`, `a2`, … in the order the world saw them. */
  id: string;
  cli: string;
  /** The pid inside the world (what the launcher saw, and what its key names). */
  innerPid: number;
  /** The pid as seen from fleetbench, when found. */
  pid: number | undefined;
  ppid: number | undefined;
  argv: string[];
  cwd: string | undefined;
  /** Run time the process started. */
  t: number;
  /** Its start in clock ticks since boot (procfs.ts startTicks): a pid reused since is told apart. */
  startTicks: number | undefined;
  /** Found by its model requests, not through a launcher (world.ts). */
  adopted: boolean;
  exitedAt?: number | undefined;
}

export interface SpawnRegistryOptions {
  spoolPath: string;
  keyPrefix: string;
  clock: Clock;
  trace: TraceSink;
  /** The world's pid namespace (pids in the spawn list are in it), or undefined for none. */
  pidNamespace: string | undefined;
  /**
   * Whether a command line is a launcher's or its CLI's (world.ts): the list can be written by
   * any process in the world, and a line whose process runs something else is not a spawn.
   */
  isAgentProcess?: ((argv: readonly string[], cli: string) => boolean) | undefined;
}

/**
 * The agent's command line as its control plane wrote it: `codex exec …`, whatever ran it (read
 * while the launcher was still `sh …/bin/codex`, or after its exec as `node …/codex.js`).
 */
export function agentArgv(raw: readonly string[], cli: string): string[] {
  const names = new Set([cli, `${cli}.js`, `${cli}.exe`]);
  let at = -1;
  for (let i = 0; i < Math.min(raw.length, 3); i++)
    if (names.has((raw[i] ?? '').replace(/^.*\//, ''))) at = i;
  return at < 0 ? [...raw] : [cli, ...raw.slice(at + 1)];
}

const PROBE_ARGS = new Set(['--version', '-v', '-V', 'version', '--help', '-h', 'help']);

/** A command line that only asks a CLI about itself (its version, its help). */
export function isProbe(argv: readonly string[]): boolean {
  return argv.length >= 2 && argv.slice(1).every((arg) => PROBE_ARGS.has(arg));
}

export class SpawnRegistry {
  private readonly byInnerPid = new Map<number, Spawn>();
  private readonly live = new Set<Spawn>();
  private offset = 0;
  private partial = '';
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private count = 0;
  /** Spawns refused past MAX_WORLD_SPAWNS. */
  dropped = 0;
  /** Lines naming a process that is neither a launcher nor its agent CLI (not spawns). */
  refused = 0;
  private readonly listeners: Array<(spawn: Spawn, what: 'spawn' | 'exit') => void> = [];

  constructor(private readonly options: SpawnRegistryOptions) {}

  start(): void {
    try {
      this.watcher = watch(this.options.spoolPath, () => this.poll());
      this.watcher.on('error', () => {});
    } catch {
      this.watcher = undefined;
    }
    this.timer = setInterval(() => {
      this.poll();
      this.checkExits();
    }, EXIT_POLL_MS);
    this.timer.unref();
  }

  onChange(listener: (spawn: Spawn, what: 'spawn' | 'exit') => void): void {
    this.listeners.push(listener);
  }

  get all(): Spawn[] {
    return [...this.byInnerPid.values()];
  }

  get alive(): Spawn[] {
    return [...this.live];
  }

  /** The spawn a provider key was made for (reading the list first: the request can be first). */
  spawnForKey(key: string, prefix = this.options.keyPrefix): Spawn | undefined {
    if (!key.startsWith(prefix)) return undefined;
    const pid = Number(key.slice(prefix.length));
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    if (!this.byInnerPid.has(pid)) this.poll();
    return this.byInnerPid.get(pid);
  }

  /** Reads what the launchers appended since the last read. */
  poll(): void {
    let size: number;
    try {
      size = statSync(this.options.spoolPath).size;
    } catch {
      return;
    }
    if (size <= this.offset) return;
    const length = Math.min(size - this.offset, 1 << 20);
    const buffer = Buffer.alloc(length);
    const fd = openSync(this.options.spoolPath, 'r');
    try {
      readSync(fd, buffer, 0, length, this.offset);
    } finally {
      closeSync(fd);
    }
    this.offset += length;
    const text = this.partial + buffer.toString('utf8');
    const lines = text.split('\n');
    this.partial = (lines.pop() ?? '').slice(0, MAX_LINE);
    for (const line of lines) this.add(line);
  }

  private add(line: string): void {
    const match = /^(\d{1,10}) (codex|claude|opencode)$/.exec(line.trim());
    if (!match) return;
    const innerPid = Number(match[1]);
    if (this.byInnerPid.has(innerPid) && this.live.has(this.byInnerPid.get(innerPid) as Spawn)) return;
    const pid =
      this.options.pidNamespace === undefined ? innerPid : outerPid(this.options.pidNamespace, innerPid);
    this.register(innerPid, pid, match[2] as string, false);
  }

  /**
   * An agent CLI that did not come through a launcher (a control plane's own copy, such as the
   * one an agent SDK bundles), found by the model requests it makes (world.ts): recorded as a
   * spawn from its process (`adopted`), so its requests are its own, not the control plane's.
   * `pid` is as fleetbench sees it; undefined when it is gone or past the bound.
   */
  adopt(pid: number, cli: string): Spawn | undefined {
    const innerPid = this.options.pidNamespace === undefined ? pid : innermostPid(pid);
    if (innerPid === undefined) return undefined;
    const known = this.byInnerPid.get(innerPid);
    if (known !== undefined && this.live.has(known)) return known;
    if (!isAlive(pid)) return undefined;
    return this.register(innerPid, pid, cli, true);
  }

  private register(
    innerPid: number,
    pid: number | undefined,
    cli: string,
    adopted: boolean,
  ): Spawn | undefined {
    if (this.count >= MAX_WORLD_SPAWNS) {
      this.dropped += 1;
      return undefined;
    }
    const facts = pid === undefined ? undefined : processFacts(pid);
    // A process caught mid-exec reads an empty command line (below); one gone already can claim
    // nothing (a claim needs a live process to descend from it, claims.ts). An adopted one was
    // found by what it sent, not by a line anyone could write.
    const check = this.options.isAgentProcess;
    if (!adopted && check && facts !== undefined && facts.argv.length > 0 && !check(facts.argv, cli)) {
      this.refused += 1;
      return undefined;
    }
    const clock = this.options.clock;
    const now = clock.now();
    // The process's start on the run's clock (which may run scaled): how long ago it started.
    const t =
      facts?.startedAtMs !== undefined
        ? Math.min(now, Math.max(0, now - Math.max(0, Date.now() - facts.startedAtMs) * clock.timeScale))
        : now;
    this.count += 1;
    const spawn: Spawn = {
      id: `a${this.count}`,
      cli,
      innerPid,
      pid,
      ppid: facts?.ppid,
      // /proc reads an empty command line for a process caught mid-exec (the launcher becoming
      // the CLI): then the CLI's name is all that is known of it.
      argv: agentArgv(facts?.argv.length ? facts.argv : [cli], cli)
        .slice(0, 64)
        .map((arg) => arg.slice(0, 2048)),
      cwd: facts?.cwd,
      t,
      startTicks: pid === undefined ? undefined : startTicks(pid),
      adopted,
    };
    this.byInnerPid.set(innerPid, spawn);
    this.live.add(spawn);
    this.options.trace.write({
      kind: 'event',
      name: 'agent.spawn',
      t,
      labels: { agent: spawn.cli, spawn: spawn.id },
      data: {
        pid: spawn.pid ?? null,
        innerPid,
        ppid: spawn.ppid ?? null,
        argv: spawn.argv,
        cwd: spawn.cwd ?? null,
        // `codex --version`: a control plane checking what is installed, not an agent at work.
        ...(isProbe(spawn.argv) ? { probe: true } : {}),
        // Not through a launcher: found by its model requests (docs/world.md, "Agents").
        ...(adopted ? { adopted: true } : {}),
      },
    });
    for (const listener of this.listeners) listener(spawn, 'spawn');
    // Gone before it was seen: its exit is now.
    if (pid === undefined || !isAlive(pid)) this.exited(spawn);
    return spawn;
  }

  private exited(spawn: Spawn): void {
    if (!this.live.delete(spawn)) return;
    spawn.exitedAt = this.options.clock.now();
    this.options.trace.write({
      kind: 'event',
      name: 'agent.exit',
      t: spawn.exitedAt,
      labels: { agent: spawn.cli, spawn: spawn.id },
      data: { ranMs: Math.max(0, spawn.exitedAt - spawn.t), precisionMs: EXIT_POLL_MS },
    });
    for (const listener of this.listeners) listener(spawn, 'exit');
  }

  checkExits(): void {
    for (const spawn of [...this.live])
      if (spawn.pid === undefined || !isAlive(spawn.pid)) this.exited(spawn);
  }

  /** Reads the list a last time and records every exit; agents still alive stay alive. */
  stop(): void {
    this.poll();
    this.checkExits();
    this.watcher?.close();
    if (this.timer) clearInterval(this.timer);
  }
}
