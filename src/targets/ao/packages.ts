/**
 * Where agent-orchestrator's code comes from: by default the packages pinned as fleetbench's
 * optional peer dependencies (AO_PINNED_VERSION), installed beside it on demand (a checkout's
 * npm install has them as development dependencies), or `--target ao:DIR` for a local install or checkout, so AO's
 * developers can measure their branch. The three packages the control plane's GitHub side needs
 * are loaded: @composio/ao-core, @composio/ao-plugin-scm-github and
 * @composio/ao-plugin-tracker-github, each from its built `dist/` entry; with `agents: real`
 * also AO's tmux runtime, Claude Code agent and git worktree workspace plugins
 * (docs/agent-orchestrator.md#real-agents-agents-real).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FleetbenchError } from '../../base/errors.ts';
import { inNodeModules, type PackageJson, readPackage } from '../node-packages.ts';

export const AO_PINNED_VERSION = '0.2.0';

export const AO_PACKAGES = {
  core: '@composio/ao-core',
  scm: '@composio/ao-plugin-scm-github',
  tracker: '@composio/ao-plugin-tracker-github',
} as const;

/** AO's own plugins that start a real agent in a terminal: loaded only with `agents: real`. */
export const AO_AGENT_PACKAGES = {
  runtime: '@composio/ao-plugin-runtime-tmux',
  agent: '@composio/ao-plugin-agent-claude-code',
  workspace: '@composio/ao-plugin-workspace-worktree',
} as const;

/** How to install the pinned packages beside fleetbench (they are optional peer dependencies). */
export function aoInstallCommand(names: readonly string[] = Object.values(AO_PACKAGES)): string {
  return `npm i -D -E ${names.map((name) => `${name}@${AO_PINNED_VERSION}`).join(' ')}`;
}

/** The exports of ao-core the target calls; a build without them cannot be driven. */
export const AO_CORE_EXPORTS = [
  'loadConfig',
  'createPluginRegistry',
  'createSessionManager',
  'createLifecycleManager',
];

type AoPackageKey = keyof typeof AO_PACKAGES | keyof typeof AO_AGENT_PACKAGES;

export interface AoPackages {
  /** ESM entry (dist/index.js) of each package: the agent plugins only when asked for. */
  entries: Record<keyof typeof AO_PACKAGES, string> & Partial<Record<keyof typeof AO_AGENT_PACKAGES, string>>;
  versions: Record<keyof typeof AO_PACKAGES, string> &
    Partial<Record<keyof typeof AO_AGENT_PACKAGES, string>>;
  /** Where they were found: `fleetbench (pinned)` or the DIR given. */
  origin: string;
}

/** The ESM entry a package declares (`exports["."].import`, else `main`). */
function entryOf(dir: string, pkg: PackageJson): string {
  const dot = (pkg.exports as Record<string, unknown> | undefined)?.['.'];
  const viaExports =
    typeof dot === 'string'
      ? dot
      : typeof (dot as Record<string, unknown> | undefined)?.import === 'string'
        ? ((dot as Record<string, unknown>).import as string)
        : undefined;
  return resolve(dir, viaExports ?? pkg.main ?? 'dist/index.js');
}

/** A monorepo checkout: packages/**\/package.json (three levels deep at most) with that name. */
function inCheckout(root: string, name: string): string | undefined {
  const base = join(root, 'packages');
  if (!existsSync(base)) return undefined;
  const queue: Array<{ dir: string; depth: number }> = [{ dir: base, depth: 0 }];
  while (queue.length > 0) {
    const { dir, depth } = queue.shift()!;
    if (readPackage(dir)?.name === name) return dir;
    if (depth >= 3) continue;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name !== 'node_modules' && !entry.name.startsWith('.'))
        queue.push({ dir: join(dir, entry.name), depth: depth + 1 });
    }
  }
  return undefined;
}

const FLEETBENCH_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/**
 * Finds the three packages. `dir` undefined: the pinned ones, in a node_modules at or above
 * fleetbench's own directory (beside it in a project that installed fleetbench). Errors say what
 * is missing and how to get it.
 */
export function resolveAoPackages(dir: string | undefined, options: { agents?: boolean } = {}): AoPackages {
  const root = dir === undefined ? FLEETBENCH_ROOT : resolve(dir);
  const origin = dir === undefined ? `the pinned packages (${AO_PINNED_VERSION})` : root;
  if (dir !== undefined && (!existsSync(root) || !statSync(root).isDirectory())) {
    throw new FleetbenchError('E_TARGET', `target ao:${dir}: no such directory ${root}`, {
      hint: 'give an agent-orchestrator checkout (built) or a directory where its packages are installed',
    });
  }
  const entries: Record<string, string> = {};
  const versions: Record<string, string> = {};
  const wanted: Record<string, string> = options.agents
    ? { ...AO_PACKAGES, ...AO_AGENT_PACKAGES }
    : AO_PACKAGES;
  for (const [key, name] of Object.entries(wanted) as Array<[AoPackageKey, string]>) {
    const found = (dir !== undefined ? inCheckout(root, name) : undefined) ?? inNodeModules(root, name);
    if (found === undefined) {
      throw new FleetbenchError(
        'E_TARGET',
        dir === undefined
          ? `the ao target needs ${name}@${AO_PINNED_VERSION}, and it is not installed`
          : `target ao:${dir}: ${name} is neither in ${join(root, 'packages')} (a checkout) nor in a node_modules at or above ${root} (an install)`,
        {
          hint:
            dir === undefined
              ? `agent-orchestrator's packages are optional (not installed with fleetbench): ${aoInstallCommand(Object.values(wanted))} where fleetbench is installed (in a fleetbench checkout, npm install has them)`
              : `install it there (npm i -E ${name}) or point ao: at the checkout's root`,
        },
      );
    }
    const pkg = readPackage(found)!;
    const entry = entryOf(found, pkg);
    if (!existsSync(entry)) {
      throw new FleetbenchError('E_TARGET', `${name} at ${found} is not built: ${entry} does not exist`, {
        hint: 'build the checkout first (pnpm install && pnpm build in agent-orchestrator)',
      });
    }
    entries[key] = entry;
    versions[key] = pkg.version ?? 'unknown';
  }
  const core = readFileSync(entries.core!, 'utf8');
  const missing = AO_CORE_EXPORTS.filter((name) => !new RegExp(`\\b${name}\\b`).test(core));
  if (missing.length > 0) {
    throw new FleetbenchError(
      'E_TARGET',
      `${AO_PACKAGES.core} ${versions.core} (${entries.core}) does not export ${missing.join(', ')}: the ao target drives AO through them (tested with ${AO_PINNED_VERSION})`,
    );
  }
  return {
    entries: entries as AoPackages['entries'],
    versions: versions as AoPackages['versions'],
    origin,
  };
}
