/**
 * Who spent the machine's CPU during a run: the processes of a run sorted into roles (fleetbench's
 * own, the control plane's, the agents', other) by the trees they belong to, and each role's
 * CPU-seconds read from /proc (utime + stime). Any target with processes on this machine uses it
 * the same way (docs/architecture.md, "Process CPU by role"): it registers the root of each tree
 * it starts (`addRoot(pid, role)`: the root and everything it starts count for that role), and
 * may name processes inside a tree by their command line (`addCommand`: the agent CLIs a control
 * plane starts count as agents, with whatever they start in turn).
 *
 * How a sample reads a tree: from each registered root, its children through
 * /proc/PID/task/PID/children (the main thread's; Node, Python and shells fork from it), then
 * theirs; and every process already seen, wherever it went since (a daemon that left its
 * parent's tree, PostgreSQL's postmaster). Two files a process per sample, read into one reused
 * buffer: ~0.4 ms of CPU a sample for 120 processes, itself counted as fleetbench's.
 *
 * Processes that exit between two samples are not lost: when a parent waits for a child, the
 * kernel adds the child's whole CPU (and its own waited-for children's) to the parent's cutime
 * and cstime. So each sample counts a process's own CPU since the last one, plus the growth of its
 * children's CPU less what was already counted for the children it reaped (their CPU as last
 * seen): what is left is the reaped children's last moments, charged to their role, and children
 * that lived and died between two samples (a `git` an agent ran), charged to the parent's. Only a
 * process reaped by something outside the trees (a daemon's end, waited for by init) loses its
 * last interval.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';

/** The run's event with what each role spent (src/run/engine.ts writes it, src/analyze/harness.ts reads it). */
export const HARNESS_CPU_EVENT = 'harness.cpu';
/**
 * fleetbench's share of a run's CPU above which the run says the observer disturbed the
 * observed: every CPU-second the harness spends is taken from the system under test.
 */
export const HARNESS_SHARE_BOUND_PCT = 5;

export type ProcessRole = 'harness' | 'controlPlane' | 'agents' | 'other';
export const PROCESS_ROLES: readonly ProcessRole[] = ['harness', 'controlPlane', 'agents', 'other'];

/** What each role spent in a window, and fleetbench's share of it. */
export interface CpuByRole {
  /** The window sampled: from start() to the last sample. */
  windowMs: number;
  samples: number;
  intervalMs: number;
  /** CPU milliseconds (user + system) by role. */
  cpuMs: Record<ProcessRole, number>;
  /** harness ÷ every role, in percent (null when nothing was spent). */
  harnessSharePct: number | null;
}

export interface ProcessCpuOptions {
  /** Between samples, ms (default 2,000; the CPU of processes that exit in between is still counted). */
  intervalMs?: number;
  /** Where procfs is (tests may point it elsewhere). */
  procRoot?: string;
  /** Kernel clock ticks per second (USER_HZ: 100 on Linux). */
  ticksPerSecond?: number;
  /** The wall clock, ms. */
  now?: () => number;
}

/** A process as one sample saw it (the fields of /proc/PID/stat this needs). */
interface Stat {
  ppid: number;
  /** The session (setsid) it belongs to. */
  session: number;
  comm: string;
  /** utime + stime, in ticks. */
  self: number;
  /** cutime + cstime: children waited for, in ticks. */
  children: number;
  /** Start time, in ticks since boot: a pid reused by a new process has another. */
  started: number;
}

interface Tracked {
  pid: number;
  started: number;
  role: ProcessRole;
  /** The role its command line gave it (a matched command), else undefined. */
  ownRole: ProcessRole | undefined;
  comm: string;
  ppid: number;
  self: number;
  children: number;
}

/**
 * Every 2 s: the CPU of processes that exit in between is still counted (through their parents),
 * so a shorter interval buys little, and each sample reads two files per process.
 */
const DEFAULT_INTERVAL_MS = 2_000;

export class ProcessCpu {
  private readonly roots = new Map<number, ProcessRole>();
  private readonly commands: Array<{ role: ProcessRole; test: (commandLine: string) => boolean }> = [];
  private readonly tracked = new Map<number, Tracked>();
  private readonly ticks: Record<ProcessRole, number> = { harness: 0, controlPlane: 0, agents: 0, other: 0 };
  private readonly intervalMs: number;
  private readonly procRoot: string;
  private readonly ticksPerSecond: number;
  private readonly now: () => number;
  private readonly buffer = Buffer.allocUnsafe(64 * 1024);
  private timer: NodeJS.Timeout | undefined;
  private startedAt: number | undefined;
  private lastAt: number | undefined;
  /** Ticks since boot at start(): a process started before it had CPU before the window. */
  private startTicks = 0;
  private samples = 0;
  private childrenFiles = true;

  constructor(options: ProcessCpuOptions = {}) {
    this.intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.procRoot = options.procRoot ?? '/proc';
    this.ticksPerSecond = options.ticksPerSecond ?? 100;
    this.now = options.now ?? Date.now;
  }

  /** Whether this machine has a /proc to read (Linux). */
  static available(procRoot = '/proc'): boolean {
    try {
      closeSync(openSync(`${procRoot}/self/stat`, 'r'));
      return true;
    } catch {
      return false;
    }
  }

  /**
   * `pid` and every process it starts count for `role`, from the next sample on. A root inside
   * another root's tree takes its own part of it (the innermost registration wins).
   */
  addRoot(pid: number, role: ProcessRole): void {
    if (!Number.isInteger(pid) || pid <= 0) return;
    this.roots.set(pid, role);
    const known = this.tracked.get(pid);
    if (known) known.ownRole = role;
  }

  /**
   * A process in the registered trees whose command line (arguments joined by spaces) passes
   * `test` counts for `role`, and so does everything it starts: the agent CLIs a control plane
   * runs, told apart from the control plane that started them.
   */
  addCommand(role: ProcessRole, test: (commandLine: string) => boolean): void {
    this.commands.push({ role, test });
  }

  /** Takes the first sample (the window starts here) and samples every intervalMs after it. */
  start(): void {
    if (this.startedAt !== undefined) return;
    this.startedAt = this.now();
    this.startTicks = this.uptimeTicks();
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  /** The last sample; the window ends here. */
  stop(): CpuByRole {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.startedAt !== undefined) this.sample();
    return this.result();
  }

  /** What each role spent from start() to the last sample. */
  result(): CpuByRole {
    const tickMs = 1000 / this.ticksPerSecond;
    const cpuMs = { harness: 0, controlPlane: 0, agents: 0, other: 0 };
    let total = 0;
    for (const role of PROCESS_ROLES) {
      cpuMs[role] = this.ticks[role] * tickMs;
      total += cpuMs[role];
    }
    return {
      windowMs: this.startedAt === undefined ? 0 : (this.lastAt ?? this.startedAt) - this.startedAt,
      samples: this.samples,
      intervalMs: this.intervalMs,
      cpuMs,
      harnessSharePct: total > 0 ? (100 * cpuMs.harness) / total : null,
    };
  }

  /** One sample: every process of the trees read, each one's CPU since the last charged to its role. */
  sample(): void {
    const first = this.samples === 0;
    this.samples++;
    this.lastAt = this.now();
    const seen = new Map<number, Stat>();
    const roleOf = new Map<number, ProcessRole>();
    const ownRoleOf = new Map<number, ProcessRole | undefined>();
    const queue: Array<[number, ProcessRole]> = [];
    for (const [pid, role] of this.roots) queue.push([pid, role]);
    // Every process seen before, wherever it is now, with the role it had.
    for (const process of this.tracked.values()) queue.push([process.pid, process.role]);
    const parents = this.childrenFiles ? undefined : this.parentMap();
    while (queue.length > 0) {
      const [pid, inherited] = queue.pop()!;
      if (seen.has(pid)) continue;
      const stat = this.stat(pid);
      if (stat === undefined) continue;
      seen.set(pid, stat);
      const own = this.roots.get(pid) ?? this.commandRole(pid, stat);
      ownRoleOf.set(pid, own);
      const role = own ?? this.adoptedRole(pid, stat, inherited, seen);
      roleOf.set(pid, role);
      const children = parents ? (parents.get(pid) ?? []) : this.children(pid);
      for (const child of children) if (!seen.has(child)) queue.push([child, role]);
    }
    // Processes gone since the last sample, by the parent that may have reaped them.
    const reaped = new Map<number, Tracked[]>();
    for (const [pid, process] of this.tracked) {
      const now = seen.get(pid);
      if (now !== undefined && now.started === process.started) continue;
      this.tracked.delete(pid);
      const list = reaped.get(process.ppid) ?? [];
      list.push(process);
      reaped.set(process.ppid, list);
    }
    // What was already counted for a gone process: its CPU as last seen, and that of its own
    // children gone since (which it reaped before it was reaped: its final cutime holds them).
    const counted = (process: Tracked, depth = 0): number => {
      let ticks = process.self + process.children;
      if (depth < 64) for (const child of reaped.get(process.pid) ?? []) ticks += counted(child, depth + 1);
      return ticks;
    };
    for (const [pid, stat] of seen) {
      const role = roleOf.get(pid)!;
      let process = this.tracked.get(pid);
      if (process === undefined) {
        // Seen for the first time: what it spent before the window is not the run's.
        const before = first || stat.started <= this.startTicks;
        process = {
          pid,
          started: stat.started,
          role,
          ownRole: ownRoleOf.get(pid),
          comm: stat.comm,
          ppid: stat.ppid,
          self: before ? stat.self : 0,
          children: before ? stat.children : 0,
        };
        this.tracked.set(pid, process);
      }
      process.role = role;
      process.ppid = stat.ppid;
      this.ticks[role] += Math.max(0, stat.self - process.self);
      const grown = Math.max(0, stat.children - process.children);
      const gone = reaped.get(pid);
      if (gone === undefined) this.ticks[role] += grown;
      else {
        // What the reaped children spent since they were last seen (the growth less what was
        // already counted for them) goes to their roles, evenly; it also holds any child never
        // seen, which is then charged to a sibling's role.
        let already = 0;
        for (const child of gone) already += counted(child);
        const lastMoments = Math.max(0, grown - already);
        for (const child of gone) this.ticks[child.role] += lastMoments / gone.length;
      }
      process.self = stat.self;
      process.children = stat.children;
    }
  }

  /**
   * The role a process takes from the tree it was found in, but for one found for the first time
   * in fleetbench's own tree, under a process that is not a registered root, in a session of its
   * own (setsid): an orphan adopted by the world sandbox's first process (every process a command
   * or its agents started and left behind, daemonized before a sample saw it where it came from:
   * a shell's background `pyenv rehash`, a language server) is nobody's work of fleetbench's. It
   * takes the role of its session's leader if that was seen, else `other` (docs/analysis.md,
   * "Harness").
   */
  private adoptedRole(pid: number, stat: Stat, inherited: ProcessRole, seen: Map<number, Stat>): ProcessRole {
    if (inherited !== 'harness' || this.tracked.has(pid) || this.roots.has(stat.ppid)) return inherited;
    const parent = seen.get(stat.ppid);
    if (parent === undefined || parent.session === stat.session) return inherited;
    const leader = this.tracked.get(stat.session);
    return leader !== undefined && leader.role !== 'harness' ? leader.role : 'other';
  }

  /** The role a command line gives the process (re-read when the process exec'd: its name changed). */
  private commandRole(pid: number, stat: Stat): ProcessRole | undefined {
    if (this.commands.length === 0) return undefined;
    const known = this.tracked.get(pid);
    if (known !== undefined && known.started === stat.started && known.comm === stat.comm)
      return known.ownRole;
    const text = this.read(`${this.procRoot}/${pid}/cmdline`);
    let role: ProcessRole | undefined;
    if (text !== undefined) {
      const commandLine = text.replaceAll('\0', ' ').trimEnd();
      role = this.commands.find((command) => command.test(commandLine))?.role;
    }
    if (known !== undefined && known.started === stat.started) {
      known.comm = stat.comm;
      known.ownRole = this.roots.get(pid) ?? role;
    }
    return role;
  }

  private stat(pid: number): Stat | undefined {
    const text = this.read(`${this.procRoot}/${pid}/stat`);
    if (text === undefined) return undefined;
    // The name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
    const close = text.lastIndexOf(')');
    if (close < 0) return undefined;
    const comm = text.slice(text.indexOf('(') + 1, close);
    const fields = text.slice(close + 2).split(' ');
    // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ... starttime (field 22)
    const number = (i: number) => Number(fields[i]);
    const stat = {
      ppid: number(1),
      session: number(3),
      comm,
      self: number(11) + number(12),
      children: number(13) + number(14),
      started: number(19),
    };
    return Number.isFinite(stat.self) && Number.isFinite(stat.children) ? stat : undefined;
  }

  /** The pids of a process's children (its main thread's), or [] when it has none or is gone. */
  private children(pid: number): number[] {
    const text = this.read(`${this.procRoot}/${pid}/task/${pid}/children`);
    if (text === undefined) {
      // A kernel without the children files: fall back to one scan of /proc per sample.
      if (pid === process.pid) this.childrenFiles = false;
      return [];
    }
    const out: number[] = [];
    for (const part of text.split(' ')) if (part !== '') out.push(Number(part));
    return out;
  }

  /** Every process's children, from one scan of /proc (kernels without the children files). */
  private parentMap(): Map<number, number[]> {
    const map = new Map<number, number[]>();
    let entries: string[];
    try {
      entries = readdirSync(this.procRoot);
    } catch {
      return map;
    }
    for (const entry of entries) {
      const pid = Number(entry);
      if (!Number.isInteger(pid)) continue;
      const stat = this.stat(pid);
      if (stat === undefined) continue;
      const list = map.get(stat.ppid) ?? [];
      list.push(pid);
      map.set(stat.ppid, list);
    }
    return map;
  }

  /** Ticks since boot (/proc/uptime), for telling processes started in the window. */
  private uptimeTicks(): number {
    const text = this.read(`${this.procRoot}/uptime`);
    const seconds = text === undefined ? Number.NaN : Number(text.split(' ')[0]);
    return Number.isFinite(seconds) ? Math.floor(seconds * this.ticksPerSecond) : 0;
  }

  /** A small /proc file as text, into the reused buffer (undefined when it cannot be read). */
  private read(path: string): string | undefined {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return undefined;
    }
    try {
      const n = readSync(fd, this.buffer, 0, this.buffer.length, 0);
      return this.buffer.toString('latin1', 0, n);
    } catch {
      return undefined;
    } finally {
      closeSync(fd);
    }
  }
}
