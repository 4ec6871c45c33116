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
}

/** How far up the parent chain a holder is looked for (a process tree is never this deep). */
export const MAX_ANCESTRY = 64;

/**
 * True when `pid` or one of its ancestors (by `parentOf`, at most MAX_ANCESTRY steps) is a
 * holder. Stops at a pid seen twice, at 0 and 1 (init: every orphan's parent, never a holder's
 * proof), and where the parent is unknown.
 */
export function descendsFrom(
  pid: number,
  isHolder: (pid: number) => boolean,
  parentOf: (pid: number) => number | undefined,
): boolean {
  const seen = new Set<number>();
  let at: number | undefined = pid;
  for (let step = 0; step <= MAX_ANCESTRY && at !== undefined && at > 1 && !seen.has(at); step++) {
    if (isHolder(at)) return true;
    seen.add(at);
    at = parentOf(at);
  }
  return false;
}

export interface ClaimGuardOptions {
  /** The pid (as fleetbench sees it) of the process that holds the client end of a connection. */
  ownerOf(ports: ConnectionPorts): number | undefined;
  parentOf(pid: number): number | undefined;
  /** At most this many owner lookups a second (each reads /proc); past it a claim is not taken. */
  lookupsPerSecond: number;
  now?: () => number;
}

/**
 * Checks claims connection by connection: the process behind a connection is looked up once, on
 * the first claim it carries (an agent's keep-alive connection costs one lookup), and a flood of
 * new connections past the budget has its claims refused rather than the machine's CPU spent.
 */
export class ClaimGuard {
  private readonly owners = new WeakMap<object, number | null>();
  private window = 0;
  private lookups = 0;

  constructor(private readonly options: ClaimGuardOptions) {}

  /** The process behind `connection`, or undefined when it cannot be known (gone, past the budget). */
  owner(connection: object, ports: ConnectionPorts | undefined): number | undefined {
    const known = this.owners.get(connection);
    if (known !== undefined) return known ?? undefined;
    if (ports === undefined) return undefined;
    const second = Math.floor((this.options.now ?? Date.now)() / 1000);
    if (second !== this.window) {
      this.window = second;
      this.lookups = 0;
    }
    if (++this.lookups > this.options.lookupsPerSecond) return undefined;
    const pid = this.options.ownerOf(ports);
    this.owners.set(connection, pid ?? null);
    return pid;
  }

  /** Whether the call on `connection` may be counted as `isHolder`'s; with the process found. */
  holds(
    connection: object,
    ports: ConnectionPorts | undefined,
    isHolder: (pid: number) => boolean,
  ): { holds: boolean; pid: number | undefined } {
    const pid = this.owner(connection, ports);
    return { holds: pid !== undefined && descendsFrom(pid, isHolder, this.options.parentOf), pid };
  }
}
