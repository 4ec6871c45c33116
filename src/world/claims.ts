/**
 * Whose call it is (docs/world.md, "Whose call it is"). Some credentials in a world name their
 * holder: a spawn's GitHub token and provider key (`fbwgh-<world>-<pid>`, `fbw-<world>-<pid>`,
 * launchers.ts) and a work command's token (the command target's handover). A call made with one
 * is counted as that holder's, not the control plane's, so a control plane that sent one it was
 * not given would move its own calls out of its overhead. Every such credential is therefore
 * checked against the process behind the connection it arrives on: the call is the holder's only
 * when that process is the holder or one of its descendants (an agent's `gh`, a work command's
 * `curl`). Anything else is the control plane's, which is the side that cannot flatter it.
 */

/** Where a connection came from, as the world's network namespace saw it. */
export interface ConnectionPorts {
  /** The client's own port. */
  port: number;
  /** The port it reached (the edge's, the proxy's, or the emulator's). */
  peerPort: number;
  /** The client's own address, as the accepting socket saw it. */
  address?: string | undefined;
}

/** How many generations below a holder its descendants are looked for (a tree is never this deep). */
export const MAX_ANCESTRY = 64;

export interface ProcessRow {
  pid: number;
  ppid: number | undefined;
}

/**
 * The holders and their descendants in `table`, at most MAX_ANCESTRY generations down. Pids 0
 * and 1 are never holders: init is every orphan's parent, so descending from it proves nothing
 * (an agent's child orphaned is no one's).
 */
export function holdersAndDescendants(holders: Iterable<number>, table: readonly ProcessRow[]): number[] {
  const children = new Map<number, number[]>();
  for (const { pid, ppid } of table) {
    if (ppid === undefined || ppid === pid) continue;
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  return walkDown(holders, (pid) => children.get(pid) ?? [], Number.POSITIVE_INFINITY) as number[];
}

/**
 * The holders (never pid 0 or 1) and, generation by generation, their children as `childrenOf`
 * gives them, at most MAX_ANCESTRY generations down; undefined when `childrenOf` cannot say, or
 * past `limit` processes.
 */
function walkDown(
  holders: Iterable<number>,
  childrenOf: (pid: number) => readonly number[] | undefined,
  limit: number,
): number[] | undefined {
  const seen = new Set<number>();
  let generation = [...holders].filter((pid) => pid > 1);
  for (let depth = 0; depth <= MAX_ANCESTRY && generation.length > 0; depth++) {
    const next: number[] = [];
    for (const pid of generation) {
      if (seen.has(pid)) continue;
      seen.add(pid);
      if (seen.size > limit) return undefined;
      const children = childrenOf(pid);
      if (children === undefined) return undefined;
      for (const child of children) if (child > 1 && !seen.has(child)) next.push(child);
    }
    generation = next;
  }
  return [...seen];
}

/** At most this many processes the kernel's child lists are walked through before the table is read instead. */
export const MAX_LISTED_DESCENDANTS = 4096;

/**
 * The holders and their descendants through the kernel's child lists (`childrenOf`: every thread's
 * /proc/PID/task/TID/children), as `holdersAndDescendants` finds them in the process table, but
 * reading only the holders' own tree: about 0.5 ms against 3.5-7 ms for every process's parent on
 * a machine of 80-120. Undefined when a list cannot be read (a kernel without them), or the walk
 * passes MAX_LISTED_DESCENDANTS: the caller reads the table then. A list is a snapshot that a
 * process moving between parents can miss, so a socket not found this way is looked for in the
 * table too before a claim is refused.
 */
export function listedDescendants(
  holders: Iterable<number>,
  childrenOf: (pid: number) => number[] | undefined,
): number[] | undefined {
  return walkDown(holders, childrenOf, MAX_LISTED_DESCENDANTS);
}

export interface ClaimGuardOptions {
  /** The socket (its inode) of the client end of a connection, or undefined when it is gone. */
  socketOf(ports: ConnectionPorts): string | undefined;
  /** Every process that could hold it, with its parent (as fleetbench sees them). */
  processes(): readonly ProcessRow[];
  /** A process's children from the kernel's lists, undefined where they cannot be read (then only `processes` is used). */
  childrenOf?(pid: number): number[] | undefined;
  /** Whether `pid` has the socket open. */
  hasSocket(pid: number, inode: string): boolean;
  /** At most this many checks a second (each reads /proc); past it a claim is not taken. */
  lookupsPerSecond: number;
  now?: () => number;
}

/**
 * Checks claims connection by connection. Only the holders' own tree is searched for the
 * connection's socket (a search of every process's descriptors took 63 ms of CPU on a machine of
 * 91 processes), once per connection and holder: an agent's keep-alive connection costs one
 * check. A flood of new connections past the budget has its claims refused rather than the
 * machine's CPU spent.
 */
export class ClaimGuard {
  private readonly checked = new WeakMap<object, Map<string, boolean>>();
  private window = 0;
  private checks = 0;

  constructor(private readonly options: ClaimGuardOptions) {}

  /** Whether the call on `connection` may be counted as that of `holders` (pids, any of them). */
  holds(connection: object, ports: ConnectionPorts | undefined, holders: readonly number[]): boolean {
    // The holders as they stand (a work token's grow as work commands start): their number and
    // ends, not every pid (thousands of work commands would make a key of kilobytes a request).
    const key = `${holders.length}:${holders[0]}:${holders.at(-1)}`;
    let known = this.checked.get(connection);
    const answer = known?.get(key);
    if (answer !== undefined) return answer;
    if (ports === undefined || holders.length === 0) return false;
    const second = Math.floor((this.options.now ?? Date.now)() / 1000);
    if (second !== this.window) {
      this.window = second;
      this.checks = 0;
    }
    if (++this.checks > this.options.lookupsPerSecond) return false;
    const inode = this.options.socketOf(ports);
    // The holder itself first (an agent calling with its own token): no process table to read;
    // then its tree through the kernel's child lists (an agent's gh); the table only when neither
    // found it (a forgery, or a process the lists missed as it moved).
    const { childrenOf, hasSocket } = this.options;
    const tried = new Set<number>();
    const found = (pids: Iterable<number>) => {
      for (const pid of pids) {
        if (pid <= 1 || tried.has(pid)) continue;
        tried.add(pid);
        if (hasSocket(pid, inode as string)) return true;
      }
      return false;
    };
    const holds =
      inode !== undefined &&
      (found(holders) ||
        (childrenOf !== undefined && found(listedDescendants(holders, childrenOf) ?? [])) ||
        found(holdersAndDescendants(holders, this.options.processes())));
    if (known === undefined) {
      known = new Map();
      this.checked.set(connection, known);
    }
    // One connection carries a handful of credentials at most; a client cycling through many
    // keeps only the latest few answers.
    if (known.size >= 8) known.clear();
    known.set(key, holds);
    return holds;
  }
}
