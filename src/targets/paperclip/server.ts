/**
 * The Paperclip server as a real child process of the run (docs/paperclip.md): headless, on
 * 127.0.0.1, with a home, ports and (under root) a user of its own, its embedded PostgreSQL
 * inside that home. `start` spawns it and waits for its two moments: listening (the first answer
 * of /api/health) and ready (`startupRecovery.phase: ready`: it listens before its startup
 * recovery is done). `kill` is a real kill -9 or SIGTERM of the server process alone, as an
 * operator's would be: a kill -9 leaves its PostgreSQL running, and the next server reuses it.
 *
 * Nothing outlives the run: `close` asks the server to stop, then kills what is left, and a
 * sweep ends every process tied to the run's directory (a PostgreSQL orphaned by a kill -9,
 * stand-ins); a process exit (a second Ctrl-C) does the same synchronously.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  copyFileSync,
  createWriteStream,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  type WriteStream,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import { prebuiltFile } from '../../base/prebuilt.ts';
import { makeDirectories } from '../../base/safe-write.ts';
import { PaperclipApi } from './api.ts';
import type { PaperclipInstall, PaperclipUser } from './install.ts';
import { PlainText } from './log.ts';

/** The stand-in's file: beside this source in a checkout, copied into dist/ by the package's build. */
export const STANDIN_FILE = 'paperclip-standin.mjs';
const STANDIN = prebuiltFile(STANDIN_FILE) ?? fileURLToPath(new URL('./standin.mjs', import.meta.url));
/** A first boot initialises PostgreSQL and applies ~280 migrations: 35 s on a loaded 2-core machine. */
export const BOOT_TIMEOUT_MS = 300_000;
/** A graceful stop drains runs and stops PostgreSQL; past this it is killed. */
const STOP_TIMEOUT_MS = 60_000;
const HEALTH_POLL_MS = 100;
/** On the exit path, how long PostgreSQL gets to act on SIGQUIT (it needs well under a second). */
const SYNC_QUIT_MS = 3_000;
/** Linux's USER_HZ: /proc times are in these ticks. */
const TICKS_PER_SECOND = 100;

export interface ServerBoot {
  pid: number;
  /** Wall-clock ms: spawned, first /api/health answer, startup recovery ready (as we saw it). */
  spawnedAt: number;
  listeningAt: number;
  readyAt: number;
  /** Paperclip's own time of its ready phase (`startupRecovery.updatedAt`). */
  paperclipReadyAt: number | undefined;
  /** CPU of the boot: the server's, plus what its PostgreSQL spent meanwhile. */
  cpuMs: number;
  port: number;
  version: string;
}

export interface PaperclipServerOptions {
  install: PaperclipInstall;
  user: PaperclipUser | undefined;
  /** The run's private directory for Paperclip (home, tmp, stand-ins, agents' directories). */
  workDir: string;
  /** Where the server's own output goes. */
  logPath: string;
  /** The server exited without being asked (not by kill or close). */
  onUnexpectedExit: (how: string) => void;
  /** The server's process exists (called at each start, before its boot is over). */
  onSpawned?: (pid: number) => void;
}

/** Every server alive in this process, for the synchronous exit hook. */
const live = new Set<PaperclipServer>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const server of live) server.killEverythingNow();
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolvePort(port));
    });
  });
}

export class PaperclipServer {
  readonly home: string;
  readonly standinDir: string;
  readonly agentsDir: string;
  readonly controlFile: string;
  private child: ChildProcess | undefined;
  private expectedExit: ChildProcess | undefined;
  private closed = false;
  private port = 0;
  private log: WriteStream | undefined;
  private readonly jwtSecret = randomBytes(32).toString('hex');
  private readonly api = new PaperclipApi(() => this.apiUrl);

  constructor(private readonly options: PaperclipServerOptions) {
    this.home = join(options.workDir, 'home');
    this.standinDir = join(options.workDir, 'standin');
    this.agentsDir = join(options.workDir, 'agents');
    this.controlFile = join(options.workDir, 'standin', 'control.json');
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The run's directory, Paperclip's config (ports chosen free now) and the stand-ins. */
  async prepare(): Promise<void> {
    const { workDir, user, install } = this.options;
    for (const dir of [this.home, join(workDir, 'tmp'), this.standinDir, this.agentsDir])
      makeDirectories(dir, 0o755);
    this.port = await freePort();
    const pgPort = await freePort();
    const instance = join(this.home, 'instances', 'default');
    makeDirectories(instance);
    writeFileSync(
      join(instance, 'config.json'),
      `${JSON.stringify(
        {
          $meta: { version: 1, updatedAt: new Date().toISOString(), source: 'onboard' },
          database: {
            mode: 'embedded-postgres',
            embeddedPostgresDataDir: join(instance, 'db'),
            embeddedPostgresPort: pgPort,
            backup: { enabled: false, intervalMinutes: 60, retentionDays: 1, dir: join(instance, 'backups') },
          },
          logging: { mode: 'file', logDir: join(instance, 'logs') },
          server: {
            deploymentMode: 'local_trusted',
            exposure: 'private',
            host: '127.0.0.1',
            port: this.port,
            serveUi: false,
          },
          telemetry: { enabled: false },
          updates: { checkEnabled: false },
        },
        null,
        2,
      )}\n`,
    );
    copyFileSync(STANDIN, join(this.standinDir, 'standin.mjs'));
    for (const mode of ['codex', 'process']) {
      const wrapper = join(this.standinDir, mode);
      writeFileSync(
        wrapper,
        `#!/bin/sh\nexec '${install.node}' '${join(this.standinDir, 'standin.mjs')}' ${mode} "$@"\n`,
        {
          mode: 0o755,
        },
      );
    }
    writeFileSync(this.controlFile, '{}\n', { mode: 0o644 });
    if (user) chownTree(workDir, user);
    // The run's own log: emptied here (once a run), a restart's output follows its first boot's.
    this.log = createWriteStream(this.options.logPath, { flags: 'w' });
    live.add(this);
    installExitHook();
  }

  private env(): NodeJS.ProcessEnv {
    const { workDir } = this.options;
    return {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      LANG: 'C.UTF-8',
      HOME: this.home,
      TMPDIR: join(workDir, 'tmp'),
      PAPERCLIP_HOME: this.home,
      PAPERCLIP_CONFIG: join(this.home, 'instances', 'default', 'config.json'),
      PORT: String(this.port),
      HOST: '127.0.0.1',
      SERVE_UI: 'false',
      PAPERCLIP_TELEMETRY_DISABLED: '1',
      DO_NOT_TRACK: '1',
      PAPERCLIP_ANNOUNCEMENTS_ENABLED: 'false',
      PAPERCLIP_MIGRATION_AUTO_APPLY: 'true',
      PAPERCLIP_MIGRATION_PROMPT: 'never',
      PAPERCLIP_DB_BACKUP_ENABLED: 'false',
      PAPERCLIP_OPEN_ON_LISTEN: 'false',
      PAPERCLIP_AGENT_JWT_SECRET: this.jwtSecret,
      NO_COLOR: '1',
      FORCE_COLOR: '0',
    };
  }

  /** Spawns the server and waits until it listens and its startup recovery is done. */
  async start(): Promise<ServerBoot> {
    if (this.closed) throw new Error('the Paperclip server was closed');
    const { install, user } = this.options;
    const pgCpuBefore = this.cpuOfSweep();
    const spawnedAt = Date.now();
    const child = spawn(install.node, [install.serverEntry], {
      cwd: this.home,
      env: this.env(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    });
    this.child = child;
    if (child.pid !== undefined) this.options.onSpawned?.(child.pid);
    let boundPort: number | undefined;
    let tail = '';
    // Each stream as plain text (its colour codes out, its characters whole across chunks).
    const output = (stream: NodeJS.ReadableStream | null) => {
      const decoder = new StringDecoder('utf8');
      const plain = new PlainText();
      stream?.on('data', (chunk: Buffer) => {
        const text = plain.write(decoder.write(chunk));
        this.log?.write(text);
        const seen = tail + text;
        const match = /Server listener bound on [0-9.]+:(\d+)/.exec(seen);
        if (match) boundPort = Number(match[1]);
        tail = seen.slice(-200);
      });
    };
    output(child.stdout);
    output(child.stderr);
    let exited: string | undefined;
    let booted = false;
    child.on('exit', (code, signal) => {
      exited = signal ?? `code ${code}`;
      if (this.child === child) this.child = undefined;
      // Before it is ready, start() reports its exit; after, nobody else would.
      if (!booted || this.expectedExit === child || this.closed) return;
      this.options.onUnexpectedExit(exited);
    });
    child.on('error', (error) => {
      exited = error.message;
    });

    let listeningAt: number | undefined;
    const deadline = spawnedAt + BOOT_TIMEOUT_MS;
    for (;;) {
      if (exited !== undefined) throw new Error(`the Paperclip server exited while starting (${exited})`);
      if (Date.now() > deadline) {
        this.expectedExit = child;
        child.kill('SIGKILL');
        throw new Error(`the Paperclip server was not ready after ${BOOT_TIMEOUT_MS / 1000} s`);
      }
      if (boundPort !== undefined && boundPort !== this.port) this.port = boundPort;
      const health = await this.health(2_000);
      if (health) {
        listeningAt ??= Date.now();
        const recovery = health.startupRecovery as { phase?: string; updatedAt?: string } | undefined;
        if (recovery?.phase === 'ready') {
          booted = true;
          const readyAt = Date.now();
          const paperclipReadyAt = recovery.updatedAt ? Date.parse(recovery.updatedAt) : undefined;
          const serverCpu = child.pid ? cpuMsOf(child.pid) : 0;
          const pgCpu = Math.max(0, this.cpuOfSweep(child.pid) - pgCpuBefore);
          return {
            pid: child.pid ?? 0,
            spawnedAt,
            listeningAt,
            readyAt,
            paperclipReadyAt: Number.isFinite(paperclipReadyAt) ? paperclipReadyAt : undefined,
            cpuMs: serverCpu + pgCpu,
            port: this.port,
            version: String(health.serverVersion ?? health.version ?? 'unknown'),
          };
        }
      }
      await sleep(HEALTH_POLL_MS);
    }
  }

  /**
   * GET /api/health, or undefined when it does not answer (in `timeoutMs`). Asked every
   * HEALTH_POLL_MS while a server boots, restarts inside a run included: through the API's
   * keep-alive pool (api.ts) rather than fetch, whose abort timer per call made an exception
   * object for every poll seconds later, answered or not.
   */
  health(timeoutMs: number): Promise<Record<string, unknown> | undefined> {
    return this.api.health(timeoutMs);
  }

  /**
   * Kills the server process as an operator would: `hard` is SIGKILL of the server alone (its
   * PostgreSQL and agent processes are left to themselves), `graceful` is SIGTERM, then (after
   * STOP_TIMEOUT_MS) SIGKILL. Resolves when the process is gone.
   */
  async kill(kind: 'hard' | 'graceful'): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.expectedExit = child;
    const exited = new Promise<void>((resolveExit) => {
      if (child.exitCode !== null || child.signalCode !== null) resolveExit();
      else child.once('exit', () => resolveExit());
    });
    child.kill(kind === 'hard' ? 'SIGKILL' : 'SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  /** Stops everything of this run (server, PostgreSQL, stand-ins) and removes its directory. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.kill('graceful').catch(() => undefined);
    await this.sweep();
    live.delete(this);
    await new Promise<void>((resolveEnd) => (this.log ? this.log.end(() => resolveEnd()) : resolveEnd()));
    rmSync(this.options.workDir, { recursive: true, force: true });
  }

  /**
   * Ends every process tied to the run's directory (PostgreSQL, whose data and working directory
   * are in it; stand-ins, whose script is): PostgreSQL gets SIGQUIT (an immediate shutdown that
   * cleans its shared memory) and 5 s, then whatever is left SIGKILL.
   */
  private async sweep(): Promise<void> {
    const postmasters = this.tiedPids().filter((p) => p.postmaster);
    for (const { pid } of postmasters) signal(pid, 'SIGQUIT');
    const until = Date.now() + 5_000;
    while (postmasters.some(({ pid }) => alive(pid)) && Date.now() < until) await sleep(100);
    for (const { pid } of this.tiedPids()) signal(pid, 'SIGKILL');
    const end = Date.now() + 5_000;
    while (this.tiedPids().length > 0 && Date.now() < end) await sleep(100);
  }

  /**
   * The synchronous last resort (process exit, a second Ctrl-C): PostgreSQL gets SIGQUIT first
   * and a moment to shut down (a SIGKILLed postmaster leaves its shared-memory segment behind),
   * then everything SIGKILL, and the directory is removed.
   */
  killEverythingNow(): void {
    this.closed = true;
    const postmasters = this.tiedPids().filter((p) => p.postmaster);
    for (const { pid } of postmasters) signal(pid, 'SIGQUIT');
    const until = Date.now() + SYNC_QUIT_MS;
    while (postmasters.some(({ pid }) => alive(pid)) && Date.now() < until) sleepSync(20);
    if (this.child?.pid) signal(this.child.pid, 'SIGKILL');
    for (const { pid } of this.tiedPids()) signal(pid, 'SIGKILL');
    try {
      rmSync(this.options.workDir, { recursive: true, force: true });
    } catch {
      // The exit goes on.
    }
    live.delete(this);
  }

  /** Processes whose command line or working directory is inside the run's directory. */
  tiedPids(): Array<{ pid: number; postmaster: boolean }> {
    const dir = this.options.workDir;
    const found: Array<{ pid: number; postmaster: boolean }> = [];
    let entries: string[];
    try {
      entries = readdirSync('/proc');
    } catch {
      return found;
    }
    for (const entry of entries) {
      const pid = Number(entry);
      if (!Number.isInteger(pid) || pid === process.pid) continue;
      let cmdline = '';
      let cwd = '';
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        continue;
      }
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // Not ours to read, or gone.
      }
      if (cmdline.includes(dir) || cwd === dir || cwd.startsWith(`${dir}/`)) {
        found.push({ pid, postmaster: /\bpostgres -D /.test(cmdline) });
      }
    }
    return found;
  }

  /** CPU ms of the tied processes (PostgreSQL, mostly), the server excluded. */
  private cpuOfSweep(except?: number): number {
    let total = 0;
    for (const { pid } of this.tiedPids()) if (pid !== except) total += cpuMsOf(pid);
    return total;
  }
}

export function chownTree(dir: string, user: PaperclipUser): void {
  chownSync(dir, user.uid, user.gid);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) chownTree(path, user);
    else chownSync(path, user.uid, user.gid);
  }
}

/** utime + stime of a process, in ms (0 when it is gone or unreadable). */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : 0;
  } catch {
    return 0;
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise<void>((resolveSleep) => setTimeout(resolveSleep, ms));

/** A blocking wait, for the exit path (no event loop is left to wait on). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
