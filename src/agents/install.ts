/**
 * `fleetbench targets install agents`: the pinned codex, Claude Code and opencode CLIs installed
 * from npm into fleetbench's cache (about 940 MB with their native binaries), never a dependency
 * of fleetbench; `resolveAgentsInstall` finds and checks an install in a second or two, running
 * each CLI's `--version` (docs/agents.md).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import {
  type InstallReader,
  installCacheDir,
  installNpmPackages,
  readInstallMarker,
} from '../base/npm-install.ts';
import {
  AGENT_CLIS,
  AGENT_PACKAGES,
  type AgentCli,
  type AgentVersions,
  VERSION_PATTERN,
  versionOf,
} from './catalog.ts';

/** Written last into an install: a directory without it is not a finished install. */
export const AGENTS_MARKER = { file: 'fleetbench-install.json', kind: 'agents' } as const;

const installName = (versions: AgentVersions) =>
  `agents-${AGENT_CLIS.map((cli) => `${cli}-${versionOf(cli, versions)}`).join('-')}`;

/** Where the cache keeps an install of these versions (the pins by default): one directory per set. */
export function defaultAgentsDir(env: NodeJS.ProcessEnv = process.env, versions: AgentVersions = {}): string {
  return join(installCacheDir(env), installName(versions));
}

/** Versions given on the command line, checked (an npm version each). */
export function checkAgentVersions(versions: AgentVersions): AgentVersions {
  for (const [cli, version] of Object.entries(versions))
    if (version !== undefined && !VERSION_PATTERN.test(version))
      throw new FleetbenchError(
        'E_USAGE',
        `--${cli} ${version}: expected an npm version such as ${AGENT_PACKAGES[cli as AgentCli].version}`,
      );
  return versions;
}

export async function installAgents(options: {
  dir?: string | undefined;
  log: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  versions?: AgentVersions;
  /** Ctrl-C or SIGTERM: npm is stopped and nothing is installed (exit 130). */
  signal?: AbortSignal;
  /** Who else runs these CLIs (Paperclip's real agents, as its own user under root): said when they cannot reach them. */
  runAlsoBy?: InstallReader;
}): Promise<{ dir: string; seconds: number }> {
  const env = options.env ?? process.env;
  const versions = checkAgentVersions(options.versions ?? {});
  const dir = resolve(options.dir ?? defaultAgentsDir(env, versions));
  const dependencies = Object.fromEntries(
    AGENT_CLIS.map((cli) => [AGENT_PACKAGES[cli].name, versionOf(cli, versions)]),
  );
  options.log(
    `installing ${AGENT_CLIS.map((cli) => `${AGENT_PACKAGES[cli].name}@${versionOf(cli, versions)}`).join(', ')} into ${dir} (about 940 MB, a minute or two)\n`,
  );
  const seconds = await installNpmPackages({
    dir,
    manifest: {
      name: 'fleetbench-agents',
      private: true,
      description: 'The real agent CLIs fleetbench runs against its provider emulator (docs/agents.md)',
      dependencies,
      // Their postinstalls only link the native binary of this platform into bin/.
      allowScripts: { '@anthropic-ai/claude-code': true, 'opencode-ai': true },
    },
    marker: { ...AGENTS_MARKER, fields: { versions: dependencies } },
    what: 'the agent CLIs',
    log: options.log,
    env,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.runAlsoBy
      ? {
          readableBy: {
            user: options.runAlsoBy,
            required: false,
            why: `Paperclip's real agents run as ${options.runAlsoBy.name} under root`,
          },
        }
      : {}),
  });
  return { dir, seconds };
}

export interface AgentBinary {
  cli: AgentCli;
  /** What to execute: [node, script] or [binary]. */
  command: string[];
  /** The package's executable (a script or a native binary). */
  path: string;
  /** What `--version` printed, parsed. */
  version: string;
}

export interface AgentsInstall {
  dir: string;
  origin: string;
  clis: Partial<Record<AgentCli, AgentBinary>>;
}

function packageVersion(packageDir: string): string | undefined {
  try {
    const version = (
      JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version?: unknown }
    ).version;
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}

/** `1.18.33`, `codex-cli 0.169.0`, `2.1.328 (Claude Code)`: the first x.y.z in the output. */
function versionIn(text: string): string | undefined {
  return /\d+\.\d+\.\d+/.exec(text)?.[0];
}

/**
 * Finds and checks an install (the cache, or DIR), for the CLIs asked for (all by default).
 * Each is run once with `--version`: an install whose binary cannot start is refused here, not
 * in the middle of a run.
 */
export function resolveAgentsInstall(
  dir: string | undefined,
  clis: readonly AgentCli[] = AGENT_CLIS,
  env: NodeJS.ProcessEnv = process.env,
  options: { quick?: boolean; versions?: AgentVersions } = {},
): AgentsInstall {
  const versions = checkAgentVersions(options.versions ?? {});
  const root = resolve(dir ?? defaultAgentsDir(env, versions));
  const installHint = `fleetbench targets install agents${Object.entries(versions)
    .map(([cli, version]) => ` --${cli} ${version}`)
    .join('')}`;
  const origin = dir === undefined ? `fleetbench's cache (${root})` : root;
  if (!existsSync(root) || !statSync(root).isDirectory())
    throw new FleetbenchError(
      'E_TARGET',
      dir === undefined
        ? `the agent CLIs are not installed (looked in ${root})`
        : `agents:${dir}: no such directory ${root}`,
      { hint: installHint },
    );
  if (dir === undefined && readInstallMarker(root, AGENTS_MARKER.file)?.kind !== AGENTS_MARKER.kind)
    throw new FleetbenchError('E_TARGET', `the install in ${root} is incomplete (an interrupted install?)`, {
      hint: `run ${installHint} again`,
    });
  const found: AgentsInstall['clis'] = {};
  for (const cli of clis) {
    const pkg = AGENT_PACKAGES[cli];
    const path = join(root, 'node_modules', ...pkg.name.split('/'), pkg.bin);
    if (!existsSync(path))
      throw new FleetbenchError(
        'E_TARGET',
        `${pkg.title} (${pkg.name}) is missing from ${origin}: no ${path}`,
        {
          hint: installHint,
        },
      );
    const command = pkg.node ? [process.execPath, path] : [path];
    // Quick: the version its package says, without starting it (opencode's --version takes seconds
    // on a busy machine; a world puts the CLIs on PATH and need not run them).
    if (options.quick) {
      const version = packageVersion(join(root, 'node_modules', ...pkg.name.split('/')));
      if (version !== undefined && (version === versionOf(cli, versions) || dir !== undefined)) {
        found[cli] = { cli, command, path, version };
        continue;
      }
    }
    const out = spawnSync(command[0] as string, [...command.slice(1), '--version'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { PATH: env.PATH ?? '/usr/bin:/bin', HOME: env.HOME ?? '/tmp' },
    });
    const version = versionIn(`${out.stdout ?? ''} ${out.stderr ?? ''}`);
    if (out.status !== 0 || version === undefined)
      throw new FleetbenchError(
        'E_TARGET',
        `${pkg.title} at ${path} does not start (${out.error?.message ?? `exit ${out.status}`}: ${(out.stderr ?? '').trim().slice(0, 200)})`,
        { hint: `its native package for ${process.platform}-${process.arch} may be missing: ${installHint}` },
      );
    if (version !== versionOf(cli, versions) && dir === undefined)
      throw new FleetbenchError(
        'E_TARGET',
        `${pkg.title} in ${origin} is ${version}, not the pinned ${versionOf(cli, versions)}`,
        {
          hint: `run ${installHint} again`,
        },
      );
    found[cli] = { cli, command, path, version };
  }
  return { dir: root, origin, clis: found };
}
