/**
 * `fleetbench world [options] -- COMMAND [ARGS…]`: runs a command, unchanged, in a world where
 * github.com, api.github.com, api.openai.com and api.anthropic.com are a GitHub and a provider
 * emulator of this run's, and nothing else can be reached (docs/world.md). The command's own
 * stdin, stdout and stderr are the terminal's; fleetbench prints where the trace is and what
 * crossed the world's edges on stderr when it ends, and exits with the command's exit code
 * (128 + the signal's number when a signal ended it), or 2 for bad input.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { FleetbenchError } from '../base/errors.ts';
import { makeDirectories, outputError } from '../base/safe-write.ts';
import { VERSION } from '../base/version.ts';
import { emulatorInput } from './github.ts';
import { collect, integerOption } from './options.ts';
import type { CommandIo } from './output.ts';
import { modelsFrom } from './provider.ts';

interface WorldFlags {
  mode: string;
  out?: string;
  fixtures?: string;
  repos?: number;
  issuesPerRepo?: number;
  pullsPerRepo?: number;
  limit: string[];
  seed: number;
  host: string[];
  script?: string;
  scripts?: string;
  latency: string;
  fault: string[];
  model: string[];
  agents: boolean;
  agentsDir?: string;
  codex?: string;
  claude?: string;
  opencode?: string;
  user?: string;
  json?: boolean;
}

const MODES = ['auto', 'sandbox', 'proxy', 'env'] as const;

function mode(text: string): string {
  if (!(MODES as readonly string[]).includes(text))
    throw new InvalidArgumentError(`expected ${MODES.join(', ')}`);
  return text;
}

export function register(program: Command, io: CommandIo): void {
  program
    .command('world')
    .description(
      "run a command, unchanged, where github.com and the model APIs are this run's emulators and nothing else is reachable (docs/world.md)",
    )
    .usage('[options] -- COMMAND [ARGS...]')
    .argument('<command...>', 'the command and its arguments (after --)')
    .option(
      '--mode <mode>',
      'auto (sandbox where the kernel allows it, else proxy), sandbox (bwrap namespaces), proxy (HTTPS_PROXY), env (base URLs only)',
      mode,
      'auto',
    )
    .option(
      '--out <dir>',
      'the trace (trace.jsonl) and the world directory go here (default: a new temp dir)',
    )
    .option('--fixtures <file>', "the GitHub emulator's fixtures (YAML or JSON)")
    .option('--repos <n>', 'generate this many repos (default 1: fleetbench/repo-1)', integerOption(1, 1000))
    .option('--issues-per-repo <n>', 'open issues per generated repo (default 10)', integerOption(0, 10_000))
    .option(
      '--pulls-per-repo <n>',
      'open pull requests per generated repo (default 0)',
      integerOption(0, 10_000),
    )
    .option(
      '--limit <key=n>',
      'a GitHub emulator limit, as github serve --limit takes it (repeatable)',
      collect,
      [],
    )
    .option('--seed <n>', 'seed of the emulators', integerOption(0, 2 ** 31), 1)
    .option(
      '--host <name=service>',
      'serve another host name too: NAME=github or NAME=provider (repeatable)',
      collect,
      [],
    )
    .option(
      '--script <name>',
      "the provider's agent script: hello, tool-call, coding (default: the --scripts file's default, else coding)",
    )
    .option('--scripts <file>', 'agent scripts of your own (docs/provider-emulator.md)')
    .option('--latency <profile>', "the provider's latency: none, fast or realistic", 'fast')
    .option(
      '--fault <spec>',
      'a provider fault, as provider serve --fault takes it (repeatable)',
      collect,
      [],
    )
    .option(
      '--model <NAME[=WINDOW[/CAP]]>',
      'a model the provider serves beside its table, as provider serve --model takes it (repeatable)',
      collect,
      [],
    )
    .option(
      '--user <account>',
      'run the command as this host account (NAME, UID or UID:GID; needs root). Default as root: a mapped non-root user (docs/world.md, "Users")',
    )
    .option('--no-agents', 'no agent launchers on PATH (the agent CLIs need not be installed)')
    .option('--agents-dir <dir>', 'an install of the agent CLIs other than the cache')
    .option(
      '--codex <version>',
      'the codex version on PATH (installed by targets install agents --codex VERSION)',
    )
    .option('--claude <version>', 'the Claude Code version on PATH')
    .option('--opencode <version>', 'the opencode version on PATH')
    .option('--json', 'print the summary as one JSON line on stderr')
    .action((command: string[], flags: WorldFlags) => worldCommand(command, flags, io));
}

/** 128 + the signal's number, as a shell reports a command a signal ended. */
function exitCodeOf(status: { code: number | null; signal: string | null }): number {
  if (status.code !== null) return status.code;
  const number = status.signal ? (constants.signals as Record<string, number>)[status.signal] : undefined;
  return 128 + (number ?? 9);
}

async function worldCommand(command: string[], flags: WorldFlags, io: CommandIo): Promise<void> {
  if (command.length === 0)
    throw new FleetbenchError('E_USAGE', 'world: no command given (fleetbench world -- COMMAND ...)');
  // The command runs where fleetbench was started: a directory removed since is refused before the
  // world is made, not found by a command that cannot start in it.
  let cwd: string;
  try {
    cwd = process.cwd();
  } catch {
    throw new FleetbenchError(
      'E_USAGE',
      'world: the current directory no longer exists (it was removed after this shell entered it); cd into one that does',
    );
  }
  const [github, provider, { RealClock }, { Rng }, { TraceWriter, servedTraceHeader }, world] =
    await Promise.all([
      import('../github/index.ts'),
      import('../provider/index.ts'),
      import('../clock/index.ts'),
      import('../base/rng.ts'),
      import('../trace/writer.ts'),
      import('../world/index.ts'),
    ]);
  const { fixtures, limits } = emulatorInput(flags, github.loadFixturesFile);
  const latency = provider.LATENCY_PROFILES[flags.latency];
  if (!latency)
    throw new FleetbenchError(
      'E_USAGE',
      `--latency ${flags.latency}: expected ${Object.keys(provider.LATENCY_PROFILES).join(', ')}`,
    );
  const scriptsFile = flags.scripts ? provider.loadScriptsFile(flags.scripts) : undefined;
  const scriptNames = new Set([
    ...Object.keys(provider.BUILTIN_SCRIPTS),
    ...Object.keys(scriptsFile?.scripts ?? {}),
  ]);
  const script = provider.defaultScriptName(flags.script, scriptsFile);
  if (!scriptNames.has(script))
    throw new FleetbenchError('E_USAGE', `--script ${script}: expected ${[...scriptNames].join(', ')}`);
  const faults = flags.fault.map(provider.parseFaultFlag);
  const models = modelsFrom(flags.model, provider.parseModelSpecs);
  // Checked before anything starts: a bad --host is a usage error, not a half-made world.
  world.hostTable(flags.host);
  const resolved = world.resolveWorldMode(flags.mode as (typeof MODES)[number]);
  let agents: Awaited<ReturnType<typeof import('../agents/index.ts')['resolveAgentsInstall']>> | undefined;
  if (flags.agents) {
    const [{ resolveAgentsInstall }, { agentVersions }] = await Promise.all([
      import('../agents/index.ts'),
      import('./targets.ts'),
    ]);
    agents = resolveAgentsInstall(flags.agentsDir, undefined, io.env, {
      quick: true,
      versions: agentVersions(flags),
    });
  }

  const out = resolve(flags.out ?? mkdtempSync(join(tmpdir(), 'fleetbench-world-')));
  try {
    makeDirectories(out);
  } catch (error) {
    throw outputError(out, error);
  }
  const clock = new RealClock({ timeScale: 1 });
  const tracePath = join(out, 'trace.jsonl');
  const trace = new TraceWriter(
    tracePath,
    servedTraceHeader({
      runId: randomUUID(),
      toolVersion: VERSION,
      name: 'world',
      target: `world:${resolved.mode}`,
      seed: flags.seed,
      timeScale: 1,
      epochMs: clock.epochMs,
    }),
  );
  const rng = new Rng(flags.seed);
  const emulator = new github.GitHubEmulator({
    clock,
    rng: rng.fork('github'),
    trace,
    fixtures,
    limits,
    latency: false,
    acceptUnknownTokens: true,
    alwaysAttributeContent: true,
    // The command's calls are attributed by what they name, never by headers it sends.
    attributionHeaders: false,
    webUrl: 'https://github.com',
    secretTokens: true,
    adminToken: `fba_${randomBytes(18).toString('base64url')}`,
  });
  let opened: Awaited<ReturnType<typeof world.openWorld>>;
  try {
    opened = await world.openWorld({
      dir: join(out, 'world'),
      mode: resolved.mode,
      hosts: flags.host,
      clock,
      trace,
      github: emulator,
      provider: (resolveKey) => {
        const instance = new provider.ProviderEmulator({
          clock,
          rng: rng.fork('provider'),
          trace,
          scripts: { scripts: scriptsFile?.scripts ?? {}, default: script },
          latency,
          models,
          resolveKey,
        });
        for (const fault of faults) instance.addFault(fault);
        return instance;
      },
      agents,
      token: emulator.defaultToken,
      user: flags.user,
    });
  } catch (error) {
    trace.close('failed', clock.now());
    throw error;
  }
  io.notice(
    `fleetbench world (${opened.mode}${resolved.why ? `: ${resolved.why}` : ''}): github ${opened.hostUrls.github}, provider ${opened.hostUrls.provider}; trace ${tracePath}\n`,
  );

  // Ctrl-C reaches the command too (it is in the terminal's foreground group): wait for it. A
  // second Ctrl-C, or SIGTERM, ends it. Listened for before the command starts: a command can be
  // running, and a Ctrl-C on its way, before its start is reported here (a signal with no listener
  // yet killed fleetbench at once, under load).
  let interrupts = 0;
  let child: Awaited<ReturnType<typeof opened.spawn>> | undefined;
  let killWhenStarted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts += 1;
    if (signal !== 'SIGTERM' && interrupts < 2) return;
    if (child === undefined) killWhenStarted = true;
    else child.kill('SIGKILL');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    child = await opened.spawn({
      argv: command,
      cwd,
      env: opened.env(io.env),
      detached: false,
      stdin: 'inherit',
      stdout: 'inherit',
      stderr: 'inherit',
    });
  } catch (error) {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    // The world is closed and its trace ended whatever went wrong: nothing it opened holds on.
    await opened.close();
    emulator.close();
    trace.close('failed', clock.now());
    throw error;
  }
  if (killWhenStarted) child.kill('SIGKILL');
  let status: Awaited<typeof child.exited>;
  try {
    status = await child.exited;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  if (status.error) io.notice(`fleetbench world: ${status.error}\n`);
  await opened.close();
  const stats = emulator.stats();
  emulator.close();
  trace.close(interrupts > 0 ? 'interrupted' : 'completed', clock.now());
  const summary = {
    trace: tracePath,
    mode: opened.mode,
    exit: exitCodeOf(status),
    githubRequests: stats.requests,
    agentSpawns: opened.spawns?.all.length ?? 0,
    blocked: opened.blocked,
  };
  if (flags.json) io.stderr.write(`${JSON.stringify(summary)}\n`);
  else
    io.notice(
      `world ended: command exit ${summary.exit}; ${summary.githubRequests} GitHub request(s), ${summary.agentSpawns} agent spawn(s), ${summary.blocked} blocked attempt(s); fleetbench analyze ${tracePath}\n`,
    );
  io.exitCode = summary.exit;
}
