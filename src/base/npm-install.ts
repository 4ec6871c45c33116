/**
 * Installing real systems fleetbench drives but never depends on (Paperclip, the agent CLIs) from
 * the npm registry into a cache of their own: pinned versions, an install that is complete or
 * absent (npm works in a sibling directory, renamed into place when it succeeded, with a marker
 * file written last), and a directory of the user's never overwritten unless fleetbench's own
 * marker says it is an earlier install of the same kind (docs/paperclip.md, docs/agents.md).
 *
 * npm runs as a process group of its own: an interrupt (the `signal`), or fleetbench leaving,
 * stops the whole group and removes the staging directory, so nothing keeps installing into a
 * directory nobody will use. No existing directory changes mode: the directories the install
 * creates are 0755, and one that another user must read through (Paperclip runs as `nobody`
 * under root) is checked, not opened up.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { ExitCode, FleetbenchError } from './errors.ts';
import { makeDirectories, outputError } from './safe-write.ts';

/**
 * The cache real systems install into. Root's home is usually closed to other users, and some
 * systems run as another user under root (Paperclip's PostgreSQL refuses root), so root's cache
 * is /var/cache/fleetbench, readable by all. FLEETBENCH_CACHE_DIR overrides it.
 */
export function installCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.FLEETBENCH_CACHE_DIR ??
    (process.getuid?.() === 0
      ? '/var/cache/fleetbench'
      : join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'fleetbench'));
  return join(resolve(base), 'targets');
}

export interface NpmInstallOptions {
  /** Where the install goes. */
  dir: string;
  /** The install's package.json (name, dependencies pinned exactly, allowScripts). */
  manifest: Record<string, unknown>;
  /** The marker file written last, and what it records beside the time taken. */
  marker: { file: string; kind: string; fields: Record<string, unknown> };
  /** What is installed, for messages ("Paperclip", "the agent CLIs"). */
  what: string;
  log: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Aborted (Ctrl-C, SIGTERM): npm's process group is stopped and nothing is installed. */
  signal?: AbortSignal;
  /**
   * Another user that must reach the install (Paperclip's, under root). `required`: an install
   * that user cannot reach is refused before npm runs; otherwise it is said and goes on.
   */
  readableBy?: { user: InstallReader; required: boolean; why: string };
}

/** A user that reads an install (as `id` gives it). */
export interface InstallReader {
  name: string;
  uid: number;
  gid: number;
}

/** What a marker file says, when `dir` holds one of this kind. */
export function readInstallMarker(dir: string, file: string): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An install goes into a new or empty directory, or replaces one that holds an earlier install
 * of the same kind, which only fleetbench's own marker file says (written last by an install
 * that finished: a `package.json` named like an install's is anyone's to write). Anything else
 * in `dir` (a home directory, a project) is refused, exit 2, before anything is touched:
 * `--dir ~` must never remove a home directory.
 */
export function checkInstallDir(dir: string, own: { marker: { file: string; kind: string } }): void {
  let entries: string[];
  try {
    const stats = lstatSync(dir);
    if (stats.isSymbolicLink() || !stats.isDirectory())
      throw new FleetbenchError('E_USAGE', `targets install: ${dir} exists and is not a directory`, {
        hint: 'give --dir a new or empty directory (a link: the directory it points to)',
      });
    entries = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    // A file on the way (ENOTDIR), no permission to look: said with the path, exit 2.
    throw outputError(dir, error);
  }
  if (entries.length === 0) return;
  if (readInstallMarker(dir, own.marker.file)?.kind === own.marker.kind) return;
  throw new FleetbenchError(
    'E_USAGE',
    `targets install: ${dir} is not empty and holds no install of fleetbench's (${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}, e.g. ${entries.slice(0, 3).join(', ')}): only a directory with fleetbench's marker (${own.marker.file}) is an earlier install, and an install replaces its directory whole, so it is refused; nothing was changed`,
    { hint: 'give --dir a new or empty directory (it is created)' },
  );
}

/**
 * The first directory on the way to `dir` (those that exist) that `user` cannot pass through,
 * with its mode; undefined when every one can be. By the mode bits (owner, group, others);
 * supplementary groups are not looked at.
 */
export function closedAncestor(dir: string, user: InstallReader): { path: string; mode: number } | undefined {
  const parts = resolve(dir).split(sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const path = sep + parts.slice(0, i).join(sep);
    let stats: ReturnType<typeof statSync>;
    try {
      stats = statSync(path);
    } catch {
      return undefined; // the rest is created by the install, 0755
    }
    const bit = stats.uid === user.uid ? 0o100 : stats.gid === user.gid ? 0o010 : 0o001;
    if ((stats.mode & bit) === 0) return { path, mode: stats.mode & 0o7777 };
  }
  return undefined;
}

/** `dir` and its missing parents created, each made 0755 whatever the umask; existing ones untouched. */
function createOpenDirs(dir: string): void {
  const first = makeDirectories(dir, 0o755);
  if (first === undefined) return;
  for (let d = dir; ; d = dirname(d)) {
    chmodSync(d, 0o755);
    if (d === first || d === dirname(d)) break;
  }
}

/** Runs npm install of `manifest` into `dir`, atomically; resolves with the seconds it took. */
export async function installNpmPackages(options: NpmInstallOptions): Promise<number> {
  const env = options.env ?? process.env;
  const dir = resolve(options.dir);
  checkInstallDir(dir, { marker: options.marker });
  checkReadable(dir, options);
  const started = Date.now();
  try {
    createOpenDirs(dirname(dir));
  } catch (error) {
    // --dir /proc/x, a file in the way, no permission: a clear message naming the path (exit 2).
    throw outputError(dirname(dir), error);
  }
  const staging = `${dir}.installing-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { mode: 0o755 });
  chmodSync(staging, 0o755);
  writeFileSync(join(staging, 'package.json'), `${JSON.stringify(options.manifest, null, 2)}\n`);
  let code: number;
  try {
    code = await runNpm(staging, env, options);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
  if (code !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new FleetbenchError(
      'E_TARGET',
      `npm install of ${options.what} failed (exit ${code}); nothing was installed`,
      {
        hint: 'its output is above; the registry must be reachable',
      },
    );
  }
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  writeFileSync(
    join(staging, options.marker.file),
    `${JSON.stringify({ kind: options.marker.kind, ...options.marker.fields, installedAt: new Date().toISOString(), seconds }, null, 2)}\n`,
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return seconds;
}

/** An install another user must reach, checked before anything is created (nothing is chmod-ed). */
function checkReadable(dir: string, options: NpmInstallOptions): void {
  const reader = options.readableBy;
  if (!reader) return;
  const closed = closedAncestor(dir, reader.user);
  if (!closed) return;
  const text = `${closed.path} (${closed.mode.toString(8).padStart(4, '0')}) keeps other users out: ${reader.why}, and the user ${reader.user.name} cannot reach ${dir}`;
  const hint = `install elsewhere (the cache, /var/cache/fleetbench, is open to all), or let others through: chmod o+x ${closed.path}`;
  if (reader.required)
    throw new FleetbenchError('E_USAGE', `targets install: ${text}; nothing was changed`, { hint });
  options.log(`note: ${text} (${hint})\n`);
}

/** How long npm's group has to stop after SIGTERM before it is killed. */
const NPM_STOP_GRACE_MS = 3_000;

/**
 * npm install in `staging`, as a process group of its own: resolves with its exit code; an abort
 * stops the whole group (SIGTERM, then SIGKILL after NPM_STOP_GRACE_MS) and rejects once it is
 * gone (exit 130). Should fleetbench leave meanwhile (a second Ctrl-C exits at once), the group
 * is killed and the staging directory removed on the way out.
 */
function runNpm(staging: string, env: NodeJS.ProcessEnv, options: NpmInstallOptions): Promise<number> {
  if (options.signal?.aborted) return Promise.reject(interrupted(staging));
  return new Promise<number>((resolveCode, reject) => {
    const child = spawn('npm', ['install', '--no-audit', '--no-fund', '--omit=dev', '--loglevel=error'], {
      cwd: staging,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...env, npm_config_update_notifier: 'false' },
      detached: true,
    });
    const group = (signal: NodeJS.Signals) => killGroup(child, signal);
    const onExit = () => {
      group('SIGKILL');
      rmSync(staging, { recursive: true, force: true });
    };
    let killTimer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      options.log(`stopping npm (process group ${child.pid}) and removing ${staging}\n`);
      group('SIGTERM');
      killTimer = setTimeout(() => group('SIGKILL'), NPM_STOP_GRACE_MS);
    };
    process.once('exit', onExit);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      process.off('exit', onExit);
      options.signal?.removeEventListener('abort', onAbort);
      clearTimeout(killTimer);
    };
    child.stdout.on('data', (chunk: Buffer) => options.log(chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => options.log(chunk.toString('utf8')));
    child.on('error', (error) => {
      done();
      reject(
        new FleetbenchError('E_TARGET', `cannot run npm: ${error.message}`, {
          hint: 'npm comes with Node; put it on PATH',
        }),
      );
    });
    child.on('exit', (exitCode, signal) => {
      done();
      // npm itself is gone; whatever it started in its group goes with it.
      group('SIGKILL');
      if (options.signal?.aborted) reject(interrupted(staging));
      else resolveCode(exitCode ?? (signal ? 128 : 1));
    });
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is gone already
  }
}

function interrupted(staging: string): FleetbenchError {
  return new FleetbenchError(
    'E_TARGET',
    `targets install: interrupted; npm was stopped and ${staging} removed: nothing was installed`,
    { exitCode: ExitCode.interrupted },
  );
}
