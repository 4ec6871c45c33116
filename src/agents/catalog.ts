/**
 * The real agent CLIs fleetbench runs against its provider emulator: each one's pinned npm
 * package, the API it speaks, and the settings that make it reach nothing but 127.0.0.1
 * (updates, telemetry, plugins off), as found on the pinned versions (docs/agents.md says how
 * each was checked). Everything a CLI needs is written into a home directory of its own, so
 * two agents never share state and nothing of the user's is read or changed.
 */

export const AGENT_CLIS = ['codex', 'claude', 'opencode'] as const;
export type AgentCli = (typeof AGENT_CLIS)[number];

export interface AgentPackage {
  cli: AgentCli;
  /** The npm package and its pinned version. */
  name: string;
  version: string;
  /** The executable, relative to the package directory. */
  bin: string;
  /** The bin is a Node script (started with Node) rather than a native executable. */
  node: boolean;
  /** The wire API it speaks to the provider. */
  api: 'responses' | 'messages' | 'chat';
  /** A model name the CLI knows (codex warns about names it has no metadata for). */
  model: string;
  /** Product name, for messages. */
  title: string;
}

export const AGENT_PACKAGES: Record<AgentCli, AgentPackage> = {
  codex: {
    cli: 'codex',
    name: '@openai/codex',
    version: '0.169.0',
    bin: 'bin/codex.js',
    node: true,
    api: 'responses',
    model: 'gpt-5.5',
    title: 'Codex CLI',
  },
  claude: {
    cli: 'claude',
    name: '@anthropic-ai/claude-code',
    version: '2.1.328',
    bin: 'bin/claude.exe',
    node: false,
    api: 'messages',
    model: 'claude-sonnet-4-5',
    title: 'Claude Code',
  },
  opencode: {
    cli: 'opencode',
    name: 'opencode-ai',
    version: '1.18.33',
    bin: 'bin/opencode.exe',
    node: false,
    api: 'chat',
    model: 'fleetbench-model',
    title: 'opencode',
  },
};

export function isAgentCli(name: string): name is AgentCli {
  return (AGENT_CLIS as readonly string[]).includes(name);
}

/**
 * Versions other than the pins, side by side (`targets install agents --codex 0.170.0`): a
 * control plane supports the versions it supports (docs/agents.md, "Other versions").
 */
export type AgentVersions = Partial<Record<AgentCli, string>>;

/** An npm version: x.y.z with an optional pre-release, at most 64 characters. */
export const VERSION_PATTERN = /^\d{1,6}\.\d{1,6}\.\d{1,6}(?:-[0-9A-Za-z.-]{1,40})?$/;

export function versionOf(cli: AgentCli, versions: AgentVersions = {}): string {
  return versions[cli] ?? AGENT_PACKAGES[cli].version;
}
