/**
 * What the world reads of its processes from /proc (Linux): who owns a socket (the pid behind a
 * blocked connection or DNS query), a process's command line, working directory, parent and
 * start time, and the pid a process has outside the world's pid namespace. Every read is
 * best-effort: a process can exit between two reads, and then the answer is "unknown", never an
 * error. docs/world.md, "How a process is named".
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { endianness } from 'node:os';

/** Clock ticks per second of /proc's start times (USER_HZ: 100 on every Linux that runs Node). */
const TICKS_PER_SECOND = 100;

export interface ProcessFacts {
  /** The pid as seen from here (outside any world pid namespace). */
  pid: number;
  ppid: number | undefined;
  argv: string[];
  cwd: string | undefined;
  /** Wall-clock Unix ms the process started (10 ms resolution). */
  startedAtMs: number | undefined;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Unix ms the machine booted: start times in /proc/PID/stat count ticks from there. Taken as now
 * minus /proc/uptime (10 ms steps), each time: /proc/stat's `btime` is whole seconds, which put
 * every process start up to a second early (362 ms on the machine where it was found, which made
 * an agent's boot that much longer and the control plane's share that much shorter).
 */
function bootTimeMs(): number | undefined {
  const uptime = Number.parseFloat(read('/proc/uptime') ?? '');
  return Number.isFinite(uptime) ? Date.now() - uptime * 1000 : undefined;
}

/** The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] | undefined {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  const close = stat.lastIndexOf(')');
  return close < 0 ? undefined : stat.slice(close + 2).split(' ');
}

export function processFacts(pid: number): ProcessFacts | undefined {
  const fields = statFields(pid);
  if (!fields) return undefined;
  // After the name: state(0) ppid(1) … starttime(19).
  const ppid = Number(fields[1]);
  const start = Number(fields[19]);
  const boot = bootTimeMs();
  const cmdline = read(`/proc/${pid}/cmdline`) ?? '';
  let cwd: string | undefined;
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    cwd = undefined;
  }
  return {
    pid,
    ppid: Number.isFinite(ppid) ? ppid : undefined,
    argv: cmdline.split('\0').filter((part, i, all) => part !== '' || i < all.length - 1),
    cwd,
    startedAtMs:
      boot !== undefined && Number.isFinite(start) ? boot + (start * 1000) / TICKS_PER_SECOND : undefined,
  };
}

/** A process's parent, from /proc/PID/stat alone (cheaper than processFacts). */
export function parentPid(pid: number): number | undefined {
  const ppid = Number(statFields(pid)?.[1]);
  return Number.isInteger(ppid) ? ppid : undefined;
}

/** Alive and not a zombie (a zombie has exited; its parent has not reaped it yet). */
export function isAlive(pid: number): boolean {
  const fields = statFields(pid);
  return fields !== undefined && fields[0] !== 'Z' && fields[0] !== 'X';
}

/** The pid namespace a process is in (the link's inode text), or undefined. */
export function pidNamespaceOf(pid: number | 'self'): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return undefined;
  }
}

function numericEntries(dir: string): number[] {
  try {
    return readdirSync(dir)
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
}

/** Every pid (as seen from here) in the pid namespace `ns`. */
export function pidsInNamespace(ns: string): number[] {
  return numericEntries('/proc').filter((pid) => pidNamespaceOf(pid) === ns);
}

/** A process's pid in its innermost pid namespace (the last of /proc/PID/status's NSpid). */
export function innermostPid(pid: number): number | undefined {
  const nspid = /^NSpid:\s+(.+)$/m.exec(read(`/proc/${pid}/status`) ?? '');
  const last = Number(nspid?.[1]?.trim().split(/\s+/).at(-1));
  return Number.isInteger(last) && last > 0 ? last : undefined;
}

/** The pid seen from here of the process whose innermost pid is `innerPid` in namespace `ns`. */
export function outerPid(ns: string, innerPid: number): number | undefined {
  return pidsInNamespace(ns).find((pid) => innermostPid(pid) === innerPid);
}

/**
 * The inode of the socket bound to local `port` in the network namespace of `netnsPid`'s
 * process, from /proc/PID/net/{tcp,tcp6,udp,udp6}; with `peerPort`, only one connected to that
 * port (the world's proxy or gate it reached).
 */
export function socketInode(
  netnsPid: number | 'self',
  protocol: 'tcp' | 'udp',
  port: number,
  peerPort?: number,
  address?: string,
): string | undefined {
  for (const table of [protocol, `${protocol}6`]) {
    const text = read(`/proc/${netnsPid}/net/${table}`);
    const inode = text ? socketInodeIn(text, port, peerPort, address) : undefined;
    if (inode !== undefined) return inode;
  }
  return undefined;
}

/** A 4-byte group as /proc prints it: the machine's 32-bit word, in hex. */
function procWord(bytes: readonly number[]): string {
  const ordered = endianness() === 'LE' ? [...bytes].reverse() : bytes;
  return ordered.map((b) => b.toString(16).toUpperCase().padStart(2, '0')).join('');
}

/**
 * The forms an address takes in /proc/net/tcp{,6}'s address columns: an IPv4 address in `tcp`,
 * and as IPv4-mapped IPv6 in `tcp6`; an IPv6 address in `tcp6`. Empty for text that is neither.
 */
export function procAddressForms(address: string): string[] {
  const v4 = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/i.exec(address);
  if (v4) {
    const bytes = v4.slice(1, 5).map(Number);
    if (bytes.some((b) => b > 255)) return [];
    return [
      procWord(bytes),
      `${procWord([0, 0, 0, 0])}${procWord([0, 0, 0, 0])}${procWord([0, 0, 255, 255])}${procWord(bytes)}`,
    ];
  }
  if (!isIPv6(address)) return [];
  const [head = '', tail = ''] = address.split('::');
  const groups = (text: string) => (text === '' ? [] : text.split(':'));
  const left = groups(head);
  const right = groups(tail);
  const all = address.includes('::')
    ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
    : left;
  const bytes = all.flatMap((g) => {
    const n = Number.parseInt(g, 16);
    return [n >> 8, n & 255];
  });
  let out = '';
  for (let i = 0; i < 16; i += 4) out += procWord(bytes.slice(i, i + 4));
  return [out];
}

const hex4 = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');

/**
 * `socketInode` on one table's text. In a network namespace shared with the machine (the world's
 * proxy and env modes) a local port is not one socket's: Linux gives one ephemeral port to
 * connections to different peers, so another program's socket with the same local port was taken
 * for the client's (a blocked attempt of curl's was named `hey`, a load generator running beside
 * it). The peer's port tells them apart.
 */
export function socketInodeIn(
  table: string,
  port: number,
  peerPort?: number,
  address?: string,
): string | undefined {
  const local = `:${hex4(port)}`;
  const peer = peerPort === undefined ? undefined : `:${hex4(peerPort)}`;
  // With the client's address too: another socket on the same port at another local address (a
  // process that binds the agent's port on 127.0.0.2, or through IPv6) is not the client's.
  const exact =
    address === undefined ? undefined : new Set(procAddressForms(address).map((a) => `${a}${local}`));
  for (const line of table.split('\n').slice(1)) {
    const columns = line.trim().split(/\s+/);
    if (exact !== undefined && !exact.has(columns[1] ?? '')) continue;
    // sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
    if (!columns[1]?.endsWith(local)) continue;
    if (peer !== undefined && !columns[2]?.endsWith(peer)) continue;
    if (columns[9] && columns[9] !== '0') return columns[9];
  }
  return undefined;
}

/** The pid (seen from here) among `pids` that holds the socket with `inode` open. */
export function socketOwner(pids: readonly number[], inode: string): number | undefined {
  const target = `socket:[${inode}]`;
  for (const pid of pids) {
    for (const fd of numericEntries(`/proc/${pid}/fd`)) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return pid;
      } catch {
        // The descriptor closed between the listing and the read.
      }
    }
  }
  return undefined;
}

/**
 * When `pid` started, in clock ticks since boot, as the kernel keeps it: the same number on every
 * read (unlike `processFacts`' wall-clock ms, computed anew each time), so a pid reused since is
 * told apart from the process it once named.
 */
export function startTicks(pid: number): number | undefined {
  const start = Number(statFields(pid)?.[19]);
  return Number.isFinite(start) ? start : undefined;
}

/** The children of `pid` (from the kernel's lists when it keeps them, else by scanning parents). */
export function childPids(pid: number): number[] {
  return (
    listedChildren(pid) ??
    numericEntries('/proc').filter((candidate) => statFields(candidate)?.[1] === String(pid))
  );
}

/**
 * Every child of `pid`, from the kernel's list of each of its threads (a Go program forks from
 * any thread, Node from its main one), or undefined where the lists cannot be read (a kernel
 * built without them, the process gone).
 */
export function listedChildren(pid: number): number[] | undefined {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  const children: number[] = [];
  for (const task of tasks) {
    const listed = read(`/proc/${pid}/task/${task}/children`);
    // A thread that ended since the directory was read has no list; a kernel without lists, none.
    if (listed === undefined) {
      if (task === String(pid)) return undefined;
      continue;
    }
    for (const child of listed.trim().split(/\s+/)) if (child !== '') children.push(Number(child));
  }
  return children.filter((child) => Number.isInteger(child) && child > 0);
}

/** Every pid (seen from here) on this machine: the candidates when there is no world pid namespace. */
export function allPids(): number[] {
  return numericEntries('/proc');
}

/** Whether `pid`'s environment, as it was started with it, holds `entry` (`NAME=value`). */
export function hasEnvironment(pid: number, entry: string): boolean {
  try {
    const environ = readFileSync(`/proc/${pid}/environ`);
    const at = environ.indexOf(Buffer.from(`${entry}\0`));
    return at === 0 || (at > 0 && environ[at - 1] === 0);
  } catch {
    return false;
  }
}

/**
 * Pids whose environment, as they were started with it, holds `entry` (`NAME=value`): the
 * processes a world started outside a sandbox, found even after they left its process group
 * (setsid) and their parent. Processes this user may not read are not found.
 */
export function pidsWithEnvironment(entry: string): number[] {
  return numericEntries('/proc').filter((pid) => hasEnvironment(pid, entry));
}
