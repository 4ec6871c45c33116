/**
 * An agent's home: the directory and environment that point one real CLI at the provider
 * emulator and at nothing else. Every file a CLI reads or writes (its config, its saved
 * sessions, its caches) lives under the home fleetbench makes for it, and every setting that
 * would reach another host (updates, telemetry, error reports, model lists, plugins) is turned
 * off, as docs/agents.md lists per CLI.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeDirectories } from '../base/safe-write.ts';
import { AGENT_PACKAGES, type AgentCli } from './catalog.ts';

export interface ProviderEndpoint {
  /** The emulator's origin, `http://127.0.0.1:PORT`. */
  url: string;
  /** The API key the CLI sends (a key minted for its session attributes its requests). */
  key: string;
  /** Model name; the CLI's own default for the emulator when absent. */
  model?: string | undefined;
}

/** Retry settings a CLI exposes (absent: the CLI's own defaults, which are what users get). */
export interface RetrySettings {
  /** codex request_max_retries, Claude Code CLAUDE_CODE_MAX_RETRIES. */
  requests?: number | undefined;
  /** codex stream_max_retries. */
  streams?: number | undefined;
}

export interface AgentHome {
  cli: AgentCli;
  dir: string;
  /** The environment the CLI runs with (nothing else of fleetbench's is passed). */
  env: Record<string, string>;
  /** Arguments for one non-interactive turn; `resume` continues a saved session. */
  turnArgs(prompt: string, resume?: string): string[];
}

/** The variables every CLI keeps (where binaries and the shell are). */
function baseEnv(home: string, parent: NodeJS.ProcessEnv): Record<string, string> {
  return {
    PATH: parent.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    LANG: parent.LANG ?? 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    // No proxy: the emulator is on loopback, and a proxy from the user's environment must not see it.
    NO_PROXY: '127.0.0.1,localhost',
  };
}

/**
 * Writes `CODEX_HOME/config.toml` pointing codex at the emulator only. `envKey` names the
 * variable codex reads the key from (a control plane may insist on OPENAI_API_KEY).
 */
export function writeCodexConfig(
  codexDir: string,
  endpoint: ProviderEndpoint,
  options: { envKey?: string; retries?: RetrySettings } = {},
): void {
  makeDirectories(codexDir);
  const retries = options.retries ?? {};
  const model = endpoint.model ?? AGENT_PACKAGES.codex.model;
  const lines = [
    '# Written by fleetbench: codex against the provider emulator only (docs/agents.md).',
    `model = ${JSON.stringify(model)}`,
    'model_provider = "fleetbench"',
    'check_for_update_on_startup = false',
    '',
    '[model_providers.fleetbench]',
    'name = "fleetbench provider emulator"',
    `base_url = ${JSON.stringify(`${endpoint.url}/v1`)}`,
    'wire_api = "responses"',
    `env_key = ${JSON.stringify(options.envKey ?? 'FLEETBENCH_PROVIDER_KEY')}`,
    ...(retries.requests !== undefined ? [`request_max_retries = ${retries.requests}`] : []),
    ...(retries.streams !== undefined ? [`stream_max_retries = ${retries.streams}`] : []),
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    'apps = false',
    'remote_plugin = false',
    '',
  ];
  writeFileSync(join(codexDir, 'config.toml'), lines.join('\n'));
}

function codexHome(
  dir: string,
  endpoint: ProviderEndpoint,
  retries: RetrySettings,
  parent: NodeJS.ProcessEnv,
): AgentHome {
  const codexDir = join(dir, 'codex');
  writeCodexConfig(codexDir, endpoint, { retries });
  return {
    cli: 'codex',
    dir,
    env: { ...baseEnv(dir, parent), CODEX_HOME: codexDir, FLEETBENCH_PROVIDER_KEY: endpoint.key },
    turnArgs: (prompt, resume) => [
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--sandbox',
      'danger-full-access',
      ...(resume !== undefined ? ['resume', resume] : []),
      prompt,
    ],
  };
}

/**
 * The variables that turn off every outbound feature a CLI documents (updates, telemetry, error
 * reports, model lists, plugins and their marketplace): the same for an agent fleetbench starts
 * and for one a control plane starts in the world (docs/agents.md). codex has none: its switches
 * are settings in config.toml (writeCodexConfig).
 */
export function agentOutboundEnv(cli: AgentCli): Record<string, string> {
  switch (cli) {
    case 'codex':
      return {};
    case 'claude':
      return {
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
        // Its plugin marketplace is a git clone of a GitHub repository at first start.
        CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: '1',
      };
    case 'opencode':
      return {
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        OPENCODE_DISABLE_SHARE: '1',
        OPENCODE_DISABLE_CLAUDE_CODE: '1',
        OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
        // At its first turn it installs a package from npm into its configuration directory, and
        // no switch turns that off: its registry (npm's own setting, which it reads) is a loopback
        // port nothing listens on, so the install is refused at once without a lookup beyond the
        // machine, and opencode goes on (docs/world.md#what-the-clis-try).
        npm_config_registry: 'http://127.0.0.1:9/',
        npm_config_fetch_retries: '0',
      };
  }
}

/** The environment that points Claude Code at the emulator and turns off everything else. */
export function claudeEnv(
  endpoint: ProviderEndpoint,
  configDir: string,
  retries: RetrySettings = {},
): Record<string, string> {
  const model = endpoint.model ?? AGENT_PACKAGES.claude.model;
  return {
    CLAUDE_CONFIG_DIR: configDir,
    ANTHROPIC_BASE_URL: endpoint.url,
    ANTHROPIC_API_KEY: endpoint.key,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    ...agentOutboundEnv('claude'),
    ...(retries.requests !== undefined ? { CLAUDE_CODE_MAX_RETRIES: String(retries.requests) } : {}),
  };
}

function claudeHome(
  dir: string,
  endpoint: ProviderEndpoint,
  retries: RetrySettings,
  parent: NodeJS.ProcessEnv,
): AgentHome {
  const configDir = join(dir, '.claude');
  makeDirectories(configDir);
  return {
    cli: 'claude',
    dir,
    env: { ...baseEnv(dir, parent), ...claudeEnv(endpoint, configDir, retries) },
    // The prompt before --allowedTools, which takes every argument after it. As root,
    // --dangerously-skip-permissions is refused; allowing Bash is what the scripts need.
    turnArgs: (prompt, resume) => [
      '-p',
      prompt,
      '--output-format',
      'stream-json',
      '--verbose',
      ...(resume !== undefined ? ['--resume', resume] : []),
      '--allowedTools',
      'Bash',
    ],
  };
}

/**
 * opencode's configuration at `path`: a provider `fleetbench` through the bundled
 * `@ai-sdk/openai-compatible` at the emulator, its model the default, and its own outbound
 * features off. `endpoint.key` may be opencode's `{env:NAME}` substitution.
 */
export function writeOpencodeConfig(path: string, endpoint: ProviderEndpoint): void {
  const model = endpoint.model ?? AGENT_PACKAGES.opencode.model;
  const settings = {
    $schema: 'https://opencode.ai/config.json',
    autoupdate: false,
    share: 'disabled',
    model: `fleetbench/${model}`,
    provider: {
      fleetbench: {
        npm: '@ai-sdk/openai-compatible',
        name: 'fleetbench provider emulator',
        options: { baseURL: `${endpoint.url}/v1`, apiKey: endpoint.key },
        models: { [model]: { name: model } },
      },
    },
  };
  makeDirectories(dirname(path));
  writeFileSync(path, `${JSON.stringify(settings, null, 2)}\n`);
}

function opencodeHome(dir: string, endpoint: ProviderEndpoint, parent: NodeJS.ProcessEnv): AgentHome {
  const config = join(dir, 'config');
  writeOpencodeConfig(join(config, 'opencode', 'opencode.json'), endpoint);
  return {
    cli: 'opencode',
    dir,
    env: {
      ...baseEnv(dir, parent),
      XDG_CONFIG_HOME: config,
      XDG_DATA_HOME: join(dir, 'data'),
      XDG_CACHE_HOME: join(dir, 'cache'),
      XDG_STATE_HOME: join(dir, 'state'),
      ...agentOutboundEnv('opencode'),
    },
    // --title: the session's title is given, so opencode sends no title request before the turn.
    turnArgs: (prompt, resume) => [
      'run',
      '--format',
      'json',
      '--title',
      'fleetbench',
      ...(resume !== undefined ? ['--session', resume] : []),
      prompt,
    ],
  };
}

/** Makes `dir` the home of one CLI pointed at `endpoint`. */
export function makeAgentHome(
  cli: AgentCli,
  dir: string,
  endpoint: ProviderEndpoint,
  options: { retries?: RetrySettings; env?: NodeJS.ProcessEnv } = {},
): AgentHome {
  makeDirectories(dir, 0o700);
  const parent = options.env ?? process.env;
  const retries = options.retries ?? {};
  switch (cli) {
    case 'codex':
      return codexHome(dir, endpoint, retries, parent);
    case 'claude':
      return claudeHome(dir, endpoint, retries, parent);
    case 'opencode':
      return opencodeHome(dir, endpoint, parent);
  }
}
