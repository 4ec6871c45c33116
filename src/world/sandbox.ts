/**
 * The sandbox (docs/world.md, "The sandbox"): Debian's bubblewrap (`bwrap`) makes a network
 * namespace whose only interface is loopback, a pid namespace that ends with the world, and a
 * mount namespace in which /etc/hosts, /etc/resolv.conf, /etc/nsswitch.conf and the system's CA
 * bundle are the world's. Inside runs the gate (gate.mjs): it opens the world's listening
 * sockets and hands them out over Node's IPC channel, so fleetbench accepts on sockets that live
 * in the namespace while everything else of it (the emulators, the trace) stays outside; then it
 * starts the commands it is asked to.
 *
 * As root, bwrap needs no user namespace; otherwise it makes one (`--unshare-user`, mapped to
 * root inside so the gate may bind port 443). Either way a command runs as a non-root user in a
 * nested user namespace of its own (`unshare --map-user`, util-linux 2.38 or later), so CLIs
 * that refuse root (Claude Code's --dangerously-skip-permissions) work, while every file it
 * writes belongs to the user who ran fleetbench.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import type { Socket as UdpSocket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import { copyFileSync, existsSync, realpathSync } from 'node:fs';
import type { Server, Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FleetbenchError } from '../base/errors.ts';
import { prebuiltFile } from '../base/prebuilt.ts';
import { childPids, pidNamespaceOf, processFacts } from './procfs.ts';

export const GATE_FILE = 'world-gate.mjs';
const GATE = prebuiltFile(GATE_FILE) ?? fileURLToPath(new URL('./gate.mjs', import.meta.url));

/** How long the gate may take to open its sockets before the world gives up (docs/limits.md). */
export const GATE_READY_MS = 10_000;

export interface SandboxSupport {
  ok: boolean;
  /** Why not, when not: what to install or enable. */
  reason?: string;
  /** The command runs as a mapped non-root user (util-linux's unshare --map-user). */
  mapsUser: boolean;
}

let support: SandboxSupport | undefined;

const isRoot = () => process.getuid?.() === 0;

/**
 * Its own network, PID and System V IPC namespaces: an IPC segment a killed process leaves (a
 * SIGKILLed PostgreSQL's shared memory) goes with the world instead of staying on the host.
 */
function namespaceArgs(): string[] {
  return isRoot()
    ? ['--unshare-net', '--unshare-pid', '--unshare-ipc']
    : ['--unshare-user', '--uid', '0', '--gid', '0', '--unshare-net', '--unshare-pid', '--unshare-ipc'];
}

/**
 * The namespaces and the host's file system as the sandbox sees it (with its own /proc).
 * `capabilities: false` leaves out `--cap-add ALL` (the fallback probe: bwrap without it).
 */
function baseArgs(capabilities = true): string[] {
  return [
    '--die-with-parent',
    ...namespaceArgs(),
    ...(capabilities ? ['--cap-add', 'ALL'] : []),
    '--bind',
    '/',
    '/',
    '--dev-bind',
    '/dev',
    '/dev',
    '--proc',
    '/proc',
  ];
}

/** Whether this machine can make the sandbox: bwrap present and namespaces allowed (probed once). */
export function sandboxSupport(): SandboxSupport {
  if (support) return support;
  const probe = spawnSync(
    'bwrap',
    [...baseArgs(), '--', 'unshare', '--user', '--map-user=1000', '--map-group=1000', 'true'],
    { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000, encoding: 'utf8' },
  );
  if (probe.error && (probe.error as NodeJS.ErrnoException).code === 'ENOENT')
    support = {
      ok: false,
      mapsUser: false,
      reason: 'bwrap is not on PATH (Debian: apt-get install bubblewrap)',
    };
  else if (probe.status === 0) support = { ok: true, mapsUser: true };
  else {
    // bwrap works but unshare cannot map the user (util-linux before 2.38): the command runs as
    // the namespace's root, which CLIs that refuse root will refuse.
    const bare = spawnSync('bwrap', [...baseArgs(false), '--', 'true'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 10_000,
      encoding: 'utf8',
    });
    support =
      bare.status === 0
        ? { ok: true, mapsUser: false }
        : {
            ok: false,
            mapsUser: false,
            reason: `bwrap cannot make the namespaces here: ${(bare.stderr ?? '').trim() || `exit ${bare.status}`} (user namespaces may be disabled: sysctl kernel.unprivileged_userns_clone, or a container without CAP_SYS_ADMIN)`,
          };
  }
  return support;
}

/**
 * Who a command runs as. `mapped`: this uid and gid inside a user namespace of the command's own,
 * the user who ran fleetbench outside it (files stay theirs, no capabilities). Otherwise a real
 * account of the host (setuid; fleetbench must be root).
 */
export interface CommandUser {
  uid: number;
  gid: number;
  mapped: boolean;
}

export interface SandboxFiles {
  hosts: string;
  resolvConf: string;
  nsswitch: string;
  /** The CA bundle bound over each system bundle path that exists. */
  bundle: string;
  systemBundles: string[];
  passwd?: string | undefined;
  group?: string | undefined;
}

export interface SandboxListeners {
  tcp: Map<number, Server>;
  udp: Map<number, UdpSocket>;
}

export interface SpawnSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** Who runs it (undefined: the gate's own user): see CommandUser. */
  user?: CommandUser | undefined;
  /** Its own process group (kill takes the group), and no controlling terminal. */
  detached: boolean;
  stdin?: 'inherit' | 'ignore';
  /** 'inherit', 'ignore', or a file appended to. */
  stdout?: string;
  stderr?: string;
  /** When stdout or stderr is a file: the bytes of output it keeps (the rest is read and dropped). */
  outputCap?: number | undefined;
}

export interface ExitStatus {
  code: number | null;
  signal: string | null;
  /** Why it never ran, when it could not be started (its code is then a shell's: 126 or 127). */
  error?: string | undefined;
}

/** A command the gate could not start (not found, not executable, a directory): not the world's end. */
export class SpawnFailed extends Error {}

export interface SandboxedProcess {
  id: number;
  /** The pid inside the world's pid namespace. */
  innerPid: number;
  exited: Promise<ExitStatus>;
}

interface PendingSpawn {
  resolve: (process: SandboxedProcess) => void;
  reject: (error: Error) => void;
  exited: Promise<ExitStatus>;
  settleExit: (status: ExitStatus) => void;
}

/**
 * Where a path bound over a system file must go: bwrap mounts onto the path as it resolves, so a
 * /etc/resolv.conf that links to /run/... is replaced where it points (when that exists).
 */
function bindTarget(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

export class Sandbox extends EventEmitter {
  private nextId = 1;
  private readonly pending = new Map<number, PendingSpawn>();
  private readonly exits = new Map<number, (value: ExitStatus) => void>();
  /** The pid namespace of the world's processes (for mapping their pids), once known. */
  pidNamespace: string | undefined;
  /** The gate's pid as seen from here: reading its /proc/PID/net shows the namespace's sockets. */
  gatePid: number | undefined;
  routeAll = false;
  private closed: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly sockets: SandboxListeners,
  ) {
    super();
    this.closed = new Promise((resolve) => child.once('exit', () => resolve()));
    child.on('message', (message: GateMessage, handle: unknown) => this.onMessage(message, handle));
    child.once('exit', () => {
      for (const [, waiter] of this.pending) waiter.reject(new Error('the sandbox ended'));
      this.pending.clear();
      for (const [, waiter] of this.dials) waiter.reject(new Error('the sandbox ended'));
      this.dials.clear();
      for (const [, settle] of this.exits) settle({ code: null, signal: 'SIGKILL' });
      this.exits.clear();
      this.emit('ended');
    });
  }

  /** Starts bwrap and the gate; resolves when the gate has handed over every socket. */
  static async start(
    files: SandboxFiles,
    ports: { tcp: number[]; udp: number[] },
    worldDir: string,
  ): Promise<Sandbox> {
    const state = sandboxSupport();
    if (!state.ok)
      throw new FleetbenchError('E_USAGE', `the world's sandbox is not available: ${state.reason}`);
    const gate = join(worldDir, GATE_FILE);
    // A copy in the world's directory: the package's own may sit where the user namespace's
    // root cannot read (a 0700 home), and a copy also keeps a later upgrade from changing it.
    copyFileSync(GATE, gate);
    const binds: string[] = [];
    const bind = (source: string, target: string) => {
      const at = bindTarget(target);
      if (at) binds.push('--ro-bind', source, at);
    };
    bind(files.hosts, '/etc/hosts');
    bind(files.resolvConf, '/etc/resolv.conf');
    bind(files.nsswitch, '/etc/nsswitch.conf');
    for (const path of files.systemBundles) bind(files.bundle, path);
    if (files.passwd) bind(files.passwd, '/etc/passwd');
    if (files.group) bind(files.group, '/etc/group');
    const args = [...baseArgs(), ...binds, '--', process.execPath, gate];
    // bwrap is in fleetbench's process group, the terminal's foreground one, and Ctrl-C's SIGINT
    // ended it at once and the world with it, before the command could handle its own SIGINT
    // (docs/world.md: fleetbench waits for the command). Started with SIGINT ignored, bwrap
    // stays; the gate handles SIGINT itself and starts each command with the default back
    // (Node resets every signal's disposition in a child it spawns).
    const child = spawn('sh', ['-c', 'trap "" INT; exec bwrap "$@"', 'sh', ...args], {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        FLEETBENCH_GATE: JSON.stringify({ tcp: ports.tcp, udp: ports.udp, route: true }),
      },
    });
    const listeners: SandboxListeners = { tcp: new Map(), udp: new Map() };
    const sandbox = new Sandbox(child, listeners);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(
          new FleetbenchError(
            'E_USAGE',
            `the world's sandbox did not start within ${GATE_READY_MS / 1000} s`,
          ),
        );
      }, GATE_READY_MS);
      const onMessage = (message: GateMessage, handle: unknown) => {
        if (message.type === 'listener') {
          if (message.proto === 'tcp') listeners.tcp.set(message.port, handle as Server);
          else listeners.udp.set(message.port, handle as UdpSocket);
        } else if (message.type === 'ready') {
          clearTimeout(timer);
          child.off('message', onMessage);
          const failed = [...message.tcp, ...message.udp].filter((entry) => entry.error);
          if (failed.length > 0) {
            child.kill('SIGKILL');
            reject(
              new FleetbenchError(
                'E_USAGE',
                `the world's sandbox could not listen: ${failed.map((f) => `port ${f.port}: ${f.error}`).join('; ')}`,
              ),
            );
            return;
          }
          sandbox.routeAll = message.route;
          resolve();
        }
      };
      child.on('message', onMessage);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new FleetbenchError('E_USAGE', `the world's sandbox exited at start (${signal ?? `exit ${code}`})`),
        );
      });
    });
    // The gate is bwrap's child; its namespace is the world's.
    sandbox.gatePid = findGatePid(child.pid);
    if (sandbox.gatePid !== undefined) sandbox.pidNamespace = pidNamespaceOf(sandbox.gatePid);
    return sandbox;
  }

  private readonly dials = new Map<
    number,
    { resolve: (socket: Socket) => void; reject: (error: Error) => void }
  >();

  /** A TCP connection to `port` on the namespace's 127.0.0.1, made by the gate. */
  dial(port: number): Promise<Socket> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.dials.set(id, { resolve, reject });
      if (this.child.connected) this.child.send({ type: 'dial', id, port });
      else reject(new Error('the sandbox ended'));
    });
  }

  private onMessage(message: GateMessage, handle?: unknown): void {
    if (message.type === 'dialed' || message.type === 'dial-failed') {
      const waiter = this.dials.get(message.id);
      this.dials.delete(message.id);
      if (message.type === 'dialed' && handle) waiter?.resolve(handle as Socket);
      else
        waiter?.reject(
          new Error(
            `connection to 127.0.0.1 in the world refused (${message.type === 'dial-failed' ? message.error : 'no socket'})`,
          ),
        );
      return;
    }
    if (message.type === 'spawned') {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (waiter) {
        this.exits.set(message.id, waiter.settleExit);
        waiter.resolve({ id: message.id, innerPid: message.pid, exited: waiter.exited });
      }
    } else if (message.type === 'spawn-failed') {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      waiter?.reject(new SpawnFailed(message.error));
    } else if (message.type === 'exit') {
      this.exits.get(message.id)?.({ code: message.code, signal: message.signal });
      this.exits.delete(message.id);
    }
  }

  /** Starts a command inside the world. */
  spawn(spec: SpawnSpec): Promise<SandboxedProcess> {
    const id = this.nextId++;
    let settleExit!: (status: ExitStatus) => void;
    const exited = new Promise<ExitStatus>((resolve) => {
      settleExit = resolve;
    });
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, exited, settleExit });
      this.child.send({ type: 'spawn', id, ...spec });
    });
  }

  /** Signals a command (its whole process group when it was started detached). */
  kill(id: number, signal: NodeJS.Signals, group = true): void {
    if (this.child.connected) this.child.send({ type: 'kill', id, signal, group });
  }

  /**
   * Ends the world: the gate signals its commands, waits up to `graceMs`, and exits, which ends
   * the pid namespace and every process still in it.
   */
  async end(graceMs = 2_000): Promise<void> {
    for (const server of this.sockets.tcp.values()) server.close();
    for (const socket of this.sockets.udp.values()) {
      try {
        socket.close();
      } catch {
        // Already closed.
      }
    }
    if (this.child.exitCode === null && this.child.signalCode === null) {
      if (this.child.connected) this.child.send({ type: 'end', graceMs });
      const kill = setTimeout(() => this.child.kill('SIGKILL'), graceMs + 3_000);
      await this.closed;
      clearTimeout(kill);
    }
  }
}

type GateMessage =
  | { type: 'listener'; proto: 'tcp' | 'udp'; port: number }
  | {
      type: 'ready';
      route: boolean;
      route6: boolean;
      pid: number;
      tcp: Array<{ port: number; error?: string }>;
      udp: Array<{ port: number; error?: string }>;
    }
  | { type: 'spawned'; id: number; pid: number }
  | { type: 'spawn-failed'; id: number; error: string }
  | { type: 'exit'; id: number; code: number | null; signal: string | null }
  | { type: 'dialed'; id: number }
  | { type: 'dial-failed'; id: number; error: string };

/** bwrap's pid is outside; with --unshare-pid its init is its child and the gate that one's child. */
function findGatePid(bwrapPid: number | undefined): number | undefined {
  if (bwrapPid === undefined) return undefined;
  const own = pidNamespaceOf('self');
  // Walk down from bwrap until a process is in another pid namespace and runs the gate.
  const queue = [bwrapPid];
  for (let depth = 0; depth < 4 && queue.length > 0; depth++) {
    const next: number[] = [];
    for (const pid of queue) {
      for (const child of childPids(pid)) {
        const ns = pidNamespaceOf(child);
        if (ns !== undefined && ns !== own && isGate(child)) return child;
        next.push(child);
      }
    }
    queue.splice(0, queue.length, ...next);
  }
  return undefined;
}

function isGate(pid: number): boolean {
  return processFacts(pid)?.argv.some((arg) => arg.endsWith(GATE_FILE)) ?? false;
}
