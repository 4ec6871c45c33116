/**
 * `agents: real` on the paperclip target (docs/agents.md, docs/paperclip.md#real-agents): the
 * agents Paperclip starts are the real codex (`codex_local`) and Claude Code (`claude_local`)
 * CLIs from fleetbench's install, run by Paperclip as its own user, each pointed at a provider
 * emulator this run serves on 127.0.0.1 with a key minted for its session. The emulator's
 * records (`provider.request`) go into the run's trace beside Paperclip's; each agent's binary
 * and version go into its `provider.boot` spans.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AGENT_PACKAGES,
  type AgentBinary,
  type AgentCli,
  claudeEnv,
  resolveAgentsInstall,
  writeCodexConfig,
} from '../../agents/index.ts';
import { FleetbenchError } from '../../base/errors.ts';
import type { Rng } from '../../base/rng.ts';
import { makeDirectories } from '../../base/safe-write.ts';
import type { Clock } from '../../clock/clock.ts';
import type { TraceSink } from '../../trace/writer.ts';
import type { ProviderSettings } from '../../workload/scenario.ts';
import { RunProvider } from '../run-provider.ts';
import type { PaperclipUser } from './install.ts';

/** fleetbench's provider adapter names → the CLI and Paperclip's local adapter that runs it. */
export const REAL_AGENT_OF: Record<
  string,
  { cli: AgentCli; adapter: 'codex_local' | 'claude_local' } | undefined
> = {
  codex: { cli: 'codex', adapter: 'codex_local' },
  claude: { cli: 'claude', adapter: 'claude_local' },
};

/** What a run's records say of the agent process (binary and version). */
export interface AgentIdentity {
  cli: AgentCli;
  version: string;
  binary: string;
}

export class RealAgents {
  private readonly binaries: Partial<Record<AgentCli, AgentBinary>>;
  private readonly provider: RunProvider;

  /** Finds the CLIs the providers need and checks that Paperclip's user can run them. */
  constructor(
    private readonly settings: ProviderSettings,
    providers: readonly string[],
    user: PaperclipUser | undefined,
  ) {
    const clis = [
      ...new Set(
        providers.map((provider) => REAL_AGENT_OF[provider]?.cli).filter((cli) => cli !== undefined),
      ),
    ];
    this.binaries = resolveAgentsInstall(undefined, clis).clis;
    this.provider = new RunProvider(settings);
    if (user)
      for (const binary of Object.values(this.binaries)) {
        const out = spawnSync(binary.command[0] as string, [...binary.command.slice(1), '--version'], {
          uid: user.uid,
          gid: user.gid,
          cwd: '/',
          encoding: 'utf8',
          timeout: 30_000,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp' },
        });
        if (out.status !== 0)
          throw new FleetbenchError(
            'E_TARGET',
            `${AGENT_PACKAGES[binary.cli].title} at ${binary.path} does not run as the user ${user.name}, who runs Paperclip's agents: ${(out.stderr ?? out.error?.message ?? '').trim().slice(0, 200)}`,
            {
              hint: 'install the agents where that user can read them (fleetbench targets install agents, as root, installs into /var/cache/fleetbench)',
            },
          );
      }
  }

  /** The agent CLIs' programs: a process whose command line names one is an agent. */
  programs(): string[] {
    return Object.values(this.binaries).map((binary) => binary.path);
  }

  describe(): string {
    const versions = Object.values(this.binaries).map((binary) => `${binary.cli} ${binary.version}`);
    return `agents: real (${versions.join(', ')}), against a provider emulator (latency ${this.settings.latency}, script ${this.provider.script})`;
  }

  /** Serves the provider emulator on 127.0.0.1 for the run. */
  start(clock: Clock, rng: Rng, trace: TraceSink): Promise<void> {
    return this.provider.start(clock, rng, trace, this.versions());
  }

  private versions(): Record<string, string> {
    return Object.fromEntries(Object.values(this.binaries).map((binary) => [binary.cli, binary.version]));
  }

  identity(adapter: string): AgentIdentity | undefined {
    const cli = adapter === 'codex_local' ? 'codex' : adapter === 'claude_local' ? 'claude' : undefined;
    const binary = cli ? this.binaries[cli] : undefined;
    return binary && { cli: binary.cli, version: binary.version, binary: binary.path };
  }

  /**
   * The agent's adapter config for Paperclip: the real CLI as its command, its home in `cwd`
   * pointing at the emulator with a key of the session's own. `cwd` is a git repository (codex
   * refuses to work outside one unless told to skip the check, which Paperclip does not).
   */
  adapterConfig(
    session: string,
    provider: string,
    cwd: string,
    node: string,
  ): { adapter: string; config: Record<string, unknown> } {
    const real = REAL_AGENT_OF[provider];
    if (!real) throw new Error(`no real agent for provider '${provider}'`);
    const binary = this.binaries[real.cli];
    if (!binary) throw new Error(`the ${real.cli} CLI was not resolved`);
    const key = this.provider.mintKey(session);
    makeDirectories(cwd, 0o755);
    execFileSync('git', ['init', '-q'], { cwd, stdio: 'ignore' });
    const endpoint = { url: this.provider.url, key };
    if (real.cli === 'codex') {
      const codexHome = join(cwd, 'codex-home');
      // The adapter checks for OPENAI_API_KEY: codex reads its key from there.
      writeCodexConfig(codexHome, endpoint, { envKey: 'OPENAI_API_KEY' });
      const wrapper = join(cwd, 'codex');
      // codex's npm launcher is a Node script: Paperclip's own Node runs it.
      writeFileSync(wrapper, `#!/bin/sh\nexec '${node}' '${binary.path}' "$@"\n`, { mode: 0o755 });
      return {
        adapter: 'codex_local',
        config: {
          // As for Claude Code: the CLI engine runs this codex, not the one Paperclip bundles.
          engine: 'cli',
          command: wrapper,
          cwd,
          timeoutSec: 600,
          model: AGENT_PACKAGES.codex.model,
          env: { OPENAI_API_KEY: key, CODEX_HOME: codexHome, NO_PROXY: '127.0.0.1,localhost' },
        },
      };
    }
    const configDir = join(cwd, 'claude-config');
    makeDirectories(configDir);
    return {
      adapter: 'claude_local',
      config: {
        // The CLI engine runs the command given; Paperclip's default ACP engine would run the
        // Claude Code its own install bundles (docs/paperclip.md#real-agents).
        engine: 'cli',
        command: binary.path,
        cwd,
        timeoutSec: 600,
        model: AGENT_PACKAGES.claude.model,
        env: { ...claudeEnv(endpoint, configDir), NO_PROXY: '127.0.0.1,localhost' },
      },
    };
  }

  /** A provider slowdown, on real agents: the emulator's first tokens come later while it lasts. */
  slowdown(factor: number, now: number, durationMs: number): void {
    this.provider.slowdown(factor, now, durationMs);
  }

  /** Stops the emulator and writes what it saw (any CLI version other than the configured one). */
  /** When the session's agent spawned at `from` made its first model request (its ready moment). */
  firstRequest(session: string, from: number, until?: number): number | undefined {
    return this.provider.firstRequest(session, from, until);
  }

  stop(trace: TraceSink, now: number): Promise<void> {
    return this.provider.stop(trace, now, this.versions());
  }
}
