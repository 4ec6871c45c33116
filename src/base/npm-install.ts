/**
 * Installing real systems fleetbench drives but never depends on (Paperclip, the agent CLIs) from
 * the npm registry into a cache of their own: pinned versions, an install that is complete or
 * absent (npm works in a sibling directory, renamed into place when it succeeded, with a marker
 * file written last), and a directory of the user's never overwritten unless it is an earlier
 * install of the same kind (docs/contributing.md, "Real systems").
 */
import { spawn } from 'node:child_process';
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
import { dirname, join, resolve } from 'node:path';
import { FleetbenchError } from './errors.ts';

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
 * An install goes into a new directory, or replaces one that holds an earlier install of the same
 * kind (its manifest's name, or its marker): anything else in `dir` (a home directory, a project)
 * is refused, exit 2, before anything is touched: `--dir ~` must never remove a home directory.
 */
export function checkInstallDir(
  dir: string,
  own: { manifestName: string; marker: { file: string; kind: string } },
): void {
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
    throw error;
  }
  if (entries.length === 0) return;
  if (readInstallMarker(dir, own.marker.file)?.kind === own.marker.kind) return;
  if (readInstallMarker(dir, 'package.json')?.name === own.manifestName) return;
  throw new FleetbenchError(
    'E_USAGE',
    `targets install: ${dir} is not empty and holds no install of fleetbench's (${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}, e.g. ${entries.slice(0, 3).join(', ')}): an install replaces its directory whole, so it is refused; nothing was changed`,
    { hint: 'give --dir a new or empty directory (it is created)' },
  );
}

/** Runs npm install of `manifest` into `dir`, atomically; resolves with the seconds it took. */
export async function installNpmPackages(options: NpmInstallOptions): Promise<number> {
  const env = options.env ?? process.env;
  const dir = resolve(options.dir);
  checkInstallDir(dir, { manifestName: String(options.manifest.name), marker: options.marker });
  const started = Date.now();
  const parent = dirname(dir);
  mkdirSync(parent, { recursive: true });
  openUpPath(parent);
  const staging = `${dir}.installing-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { mode: 0o755 });
  writeFileSync(join(staging, 'package.json'), `${JSON.stringify(options.manifest, null, 2)}\n`);
  const code = await new Promise<number>((resolveCode, reject) => {
    const child = spawn('npm', ['install', '--no-audit', '--no-fund', '--omit=dev', '--loglevel=error'], {
      cwd: staging,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...env, npm_config_update_notifier: 'false' },
    });
    child.stdout.on('data', (chunk: Buffer) => options.log(chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => options.log(chunk.toString('utf8')));
    child.on('error', (error) =>
      reject(
        new FleetbenchError('E_TARGET', `cannot run npm: ${error.message}`, {
          hint: 'npm comes with Node; put it on PATH',
        }),
      ),
    );
    child.on('exit', (exitCode, signal) => resolveCode(exitCode ?? (signal ? 128 : 1)));
  }).catch((error: unknown) => {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  });
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
  openUpPath(dir);
  return seconds;
}

/** The directories leading to an install are searchable by all (a system may run as another user). */
export function openUpPath(dir: string): void {
  if (process.getuid?.() !== 0) return;
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    try {
      const { mode, uid } = statSync(d);
      if (uid === 0 && (mode & 0o005) !== 0o005) chmodSync(d, mode | 0o005);
    } catch {
      return;
    }
  }
}
