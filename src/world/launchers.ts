/**
 * The agents of a world (docs/world.md, "Agents"): the real codex, Claude Code and opencode from
 * fleetbench's cache are on the command's PATH, each behind a launcher, a few lines of POSIX sh
 * that note the spawn in the world's spawn list, give the agent a key of its own and exec the
 * real binary with the arguments it was given, unchanged. The pid the control plane holds is the
 * agent's own, so its signals, waits and exit codes are the real ones.
 *
 * The key is `fbw-<world tag>-<pid>`: the provider emulator asks the world whose key it is
 * (`resolveKey`), so every model request is attributed to the process that made it. Where the
 * control plane set no home of its own for the CLI (CODEX_HOME, CLAUDE_CONFIG_DIR, OPENCODE_CONFIG),
 * the launcher gives it the world's, configured for the world's provider with every outbound
 * feature the CLI documents turned off; where it did, its home is kept, and the world's host
 * names still bring the CLI's requests to the emulator.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_PACKAGES, type AgentCli } from '../agents/catalog.ts';
import { agentOutboundEnv, writeCodexConfig, writeOpencodeConfig } from '../agents/home.ts';
import type { AgentsInstall } from '../agents/install.ts';
import { makeDirectories } from '../base/safe-write.ts';

/** A shell word: single-quoted, with any single quote closed, escaped and reopened. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export interface LauncherOptions {
  install: AgentsInstall;
  /** The world's directory: launchers in bin/, homes in agents/, the spawn list `spawns`. */
  dir: string;
  /** Short, unique per world: in every key, so two worlds' keys never meet. */
  tag: string;
  /** What the agents' homes point at: the provider's URL as the command sees it. */
  providerUrl: string;
  /** Set the vendors' base-URL variables too (proxy and env modes: no host names to rely on). */
  baseUrls: boolean;
}

export interface Launchers {
  /** The directory to put first on the command's PATH. */
  binDir: string;
  spoolPath: string;
  /** The key prefix every launcher's key starts with. */
  keyPrefix: string;
  /** The prefix of the GitHub token a launcher gives its spawn. */
  tokenPrefix: string;
}

/** The variables a launcher sets for `cli` (beyond the key), as `export` lines. */
function cliLines(cli: AgentCli, options: LauncherOptions, homes: string): string[] {
  const key = '"$FLEETBENCH_WORLD_KEY"';
  const lines: string[] = [];
  const setDefault = (name: string, value: string) =>
    lines.push(`[ -n "\${${name}:-}" ] || export ${name}=${shellQuote(value)}`);
  for (const [name, value] of Object.entries(agentOutboundEnv(cli)))
    lines.push(`export ${name}=${shellQuote(value)}`);
  switch (cli) {
    case 'codex':
      lines.push(`export OPENAI_API_KEY=${key} CODEX_API_KEY=${key}`);
      setDefault('CODEX_HOME', join(homes, 'codex'));
      if (options.baseUrls) lines.push(`export OPENAI_BASE_URL=${shellQuote(`${options.providerUrl}/v1`)}`);
      break;
    case 'claude':
      lines.push(`export ANTHROPIC_API_KEY=${key}`);
      setDefault('CLAUDE_CONFIG_DIR', join(homes, 'claude'));
      if (options.baseUrls) lines.push(`export ANTHROPIC_BASE_URL=${shellQuote(options.providerUrl)}`);
      break;
    case 'opencode':
      lines.push(`export OPENAI_API_KEY=${key} ANTHROPIC_API_KEY=${key}`);
      setDefault('OPENCODE_CONFIG', join(homes, 'opencode', 'opencode.json'));
      break;
  }
  return lines;
}

/** Writes the launchers and the world's agent homes; the spawn list starts empty. */
export function writeLaunchers(options: LauncherOptions): Launchers {
  const binDir = join(options.dir, 'bin');
  const homes = join(options.dir, 'agents');
  makeDirectories(binDir, 0o755);
  makeDirectories(homes, 0o755);
  const spoolPath = join(options.dir, 'spawns');
  writeFileSync(spoolPath, '', { mode: 0o666 });
  chmodSync(spoolPath, 0o666);
  const endpoint = { url: options.providerUrl, key: '' };
  writeCodexConfig(join(homes, 'codex'), endpoint, { envKey: 'OPENAI_API_KEY' });
  makeDirectories(join(homes, 'claude'));
  writeOpencodeConfig(join(homes, 'opencode', 'opencode.json'), { ...endpoint, key: '{env:OPENAI_API_KEY}' });
  const keyPrefix = `fbw-${options.tag}-`;
  const tokenPrefix = `fbwgh-${options.tag}-`;
  for (const agent of Object.values(options.install.clis)) {
    if (!agent) continue;
    const cli = agent.cli;
    const pkg = AGENT_PACKAGES[cli];
    const exec = `exec ${agent.command.map(shellQuote).join(' ')} "$@"`;
    const script = [
      '#!/bin/sh',
      `# fleetbench world: the real ${pkg.title} ${agent.version}, with a key of this spawn's own (docs/world.md, "Agents").`,
      `printf '%s ${cli}\\n' "$$" >> ${shellQuote(spoolPath)} 2>/dev/null`,
      `FLEETBENCH_WORLD_KEY=${shellQuote(keyPrefix)}"$$"`,
      // The world's GitHub token becomes this spawn's own (the same user, so the same quota): its
      // GitHub calls are then the spawn's. A token the control plane chose itself is kept.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
      'if [ "${GH_TOKEN:-}" = "${FLEETBENCH_WORLD_TOKEN:-}" ] && [ "${GITHUB_TOKEN:-}" = "${FLEETBENCH_WORLD_TOKEN:-}" ]; then',
      `  export GH_TOKEN=${shellQuote(tokenPrefix)}"$$" GITHUB_TOKEN=${shellQuote(tokenPrefix)}"$$"`,
      'fi',
      ...cliLines(cli, options, homes),
      exec,
      '',
    ].join('\n');
    const path = join(binDir, cli);
    writeFileSync(path, script, { mode: 0o755 });
    chmodSync(path, 0o755);
  }
  return { binDir, spoolPath, keyPrefix, tokenPrefix };
}
