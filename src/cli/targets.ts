/**
 * `fleetbench targets`: the real systems fleetbench installs on demand (docs/paperclip.md).
 * `targets install paperclip` installs the pinned Paperclip and its Node 24 into a cache;
 * `targets check paperclip[:DIR]` checks an install as a run would, in a second or two.
 */
import type { Command } from 'commander';
import { FleetbenchError } from '../base/errors.ts';
import { parseTarget } from '../contract/target-ref.ts';
import { onInterrupt } from './interrupt.ts';
import type { CommandIo } from './output.ts';

function onlyPaperclip(name: string): void {
  if (name !== 'paperclip') {
    throw new FleetbenchError(
      'E_USAGE',
      `targets: unknown target '${name}'; fleetbench installs: paperclip, agents`,
    );
  }
}

export function register(program: Command, io: CommandIo): void {
  const targets = program
    .command('targets')
    .description('install and check the real systems fleetbench drives (Paperclip: docs/paperclip.md)');

  targets
    .command('install')
    .description(
      'install a target and what it runs on into fleetbench’s cache (paperclip: the pinned Paperclip packages and Node 24, about 1.5 GB; agents: the pinned codex, Claude Code and opencode CLIs, about 940 MB)',
    )
    .argument('<target>', 'paperclip or agents')
    .option('--dir <dir>', 'install here instead of the cache (then run with --target paperclip:DIR)')
    .option('--codex <version>', 'agents: this codex version instead of the pin (side by side in the cache)')
    .option('--claude <version>', 'agents: this Claude Code version instead of the pin')
    .option('--opencode <version>', 'agents: this opencode version instead of the pin')
    .option('--json', 'print {dir, seconds, version} as JSON')
    .action(async (name: string, options: InstallFlags) => {
      if (name === 'agents') return installAgentsCommand(options, io);
      onlyPaperclip(name);
      const { installPaperclip, PAPERCLIP_VERSION, paperclipUser, resolvePaperclipInstall } = await import(
        '../targets/paperclip/install.ts'
      );
      const interrupt = onInterrupt(STOPPING_INSTALL, io);
      let result: Awaited<ReturnType<typeof installPaperclip>>;
      try {
        result = await installPaperclip({
          ...(options.dir !== undefined ? { dir: options.dir } : {}),
          env: io.env,
          log: (text) => io.notice(text),
          signal: interrupt.signal,
        });
      } finally {
        interrupt.dispose();
      }
      // What a run checks, right away: a broken install is reported here, not mid-run.
      const install = resolvePaperclipInstall(options.dir, paperclipUser(io.env), io.env);
      if (options.json) {
        io.stdout.write(
          `${JSON.stringify({ dir: result.dir, seconds: result.seconds, version: install.serverVersion, node: install.nodeVersion })}\n`,
        );
        return;
      }
      io.stdout.write(
        `Paperclip ${PAPERCLIP_VERSION} (Node ${install.nodeVersion}) installed in ${result.dir} in ${result.seconds} s\n` +
          (options.dir === undefined
            ? 'run with --target paperclip\n'
            : `run with --target paperclip:${options.dir}\n`),
      );
    });

  targets
    .command('check')
    .description(
      'check an install as a run would (paperclip: the cache; paperclip:DIR: an install of your own)',
    )
    .argument('<target>', 'paperclip, paperclip:DIR, agents or agents:DIR')
    .option('--codex <version>', 'agents: check this codex version instead of the pin')
    .option('--claude <version>', 'agents: check this Claude Code version instead of the pin')
    .option('--opencode <version>', 'agents: check this opencode version instead of the pin')
    .option('--json', 'print what was found as JSON')
    .action(async (name: string, options: AgentVersionFlags & { json?: boolean }) => {
      if (name === 'agents' || name.startsWith('agents:')) return checkAgentsCommand(name, options, io);
      const ref = parseTarget(name);
      if (ref.kind !== 'paperclip') onlyPaperclip(name);
      const dir = ref.kind === 'paperclip' ? ref.dir : undefined;
      const { paperclipUser, resolvePaperclipInstall } = await import('../targets/paperclip/install.ts');
      const user = paperclipUser(io.env);
      const install = resolvePaperclipInstall(dir, user, io.env);
      const found = { ...install, user: user?.name ?? null };
      if (options.json) {
        io.stdout.write(`${JSON.stringify(found)}\n`);
        return;
      }
      io.stdout.write(
        `Paperclip ${install.serverVersion} on Node ${install.nodeVersion}: ${install.origin}\n` +
          `  server: ${install.serverEntry}\n  node:   ${install.node}\n` +
          (user
            ? `  runs as the user ${user.name} (fleetbench runs as root; PostgreSQL refuses root)\n`
            : ''),
      );
    });
}

interface AgentVersionFlags {
  codex?: string;
  claude?: string;
  opencode?: string;
}
type InstallFlags = AgentVersionFlags & { dir?: string; json?: boolean };

/** The versions the --codex, --claude and --opencode flags ask for (the pins for the rest). */
export function agentVersions(
  flags: AgentVersionFlags,
): Partial<Record<'codex' | 'claude' | 'opencode', string>> {
  return {
    ...(flags.codex !== undefined ? { codex: flags.codex } : {}),
    ...(flags.claude !== undefined ? { claude: flags.claude } : {}),
    ...(flags.opencode !== undefined ? { opencode: flags.opencode } : {}),
  };
}

async function installAgentsCommand(options: InstallFlags, io: CommandIo): Promise<void> {
  const { installAgents, resolveAgentsInstall } = await import('../agents/index.ts');
  const wanted = agentVersions(options);
  const interrupt = onInterrupt(STOPPING_INSTALL, io);
  let result: Awaited<ReturnType<typeof installAgents>>;
  try {
    result = await installAgents({
      dir: options.dir,
      env: io.env,
      log: (text) => io.notice(text),
      signal: interrupt.signal,
      runAlsoBy: await paperclipAgentsUser(io.env),
      versions: wanted,
    });
  } finally {
    interrupt.dispose();
  }
  // What a run checks, right away: a CLI that cannot start is reported here, not mid-run.
  const install = resolveAgentsInstall(options.dir, undefined, io.env, { versions: wanted });
  const versions = Object.fromEntries(Object.values(install.clis).map((cli) => [cli.cli, cli.version]));
  if (options.json) {
    io.stdout.write(`${JSON.stringify({ dir: result.dir, seconds: result.seconds, versions })}\n`);
    return;
  }
  io.stdout.write(
    `agent CLIs (${Object.entries(versions)
      .map(([cli, version]) => `${cli} ${version}`)
      .join(', ')}) installed in ${result.dir} in ${result.seconds} s\n` +
      `try them: fleetbench agents try${options.dir === undefined ? '' : ` --agents-dir ${options.dir}`}\n`,
  );
}

const STOPPING_INSTALL = 'stopping npm and removing what it installed';

/** Under root, the user Paperclip's real agents run as (when there is one): the install should reach it. */
async function paperclipAgentsUser(env: NodeJS.ProcessEnv) {
  if (process.getuid?.() !== 0) return undefined;
  const { paperclipUser } = await import('../targets/paperclip/install.ts');
  try {
    return paperclipUser(env);
  } catch {
    return undefined; // no such user: no Paperclip to run them under root
  }
}

async function checkAgentsCommand(
  name: string,
  options: AgentVersionFlags & { json?: boolean },
  io: CommandIo,
): Promise<void> {
  const dir = name.startsWith('agents:') ? name.slice('agents:'.length) : undefined;
  const { resolveAgentsInstall } = await import('../agents/index.ts');
  const install = resolveAgentsInstall(dir, undefined, io.env, { versions: agentVersions(options) });
  if (options.json) {
    io.stdout.write(`${JSON.stringify(install)}\n`);
    return;
  }
  io.stdout.write(
    [
      `agent CLIs: ${install.origin}`,
      ...Object.values(install.clis).map(
        (cli) => `  ${cli.cli.padEnd(8)} ${cli.version.padEnd(9)} ${cli.path}`,
      ),
      '',
    ].join('\n'),
  );
}
