/**
 * `fleetbench agents try`: the real codex, Claude Code and opencode CLIs, each run for a turn and
 * a resumed turn against a provider emulator of its own on 127.0.0.1, and what the emulator saw
 * of them (docs/agents.md). Exit 0 when every turn completed, 3 when one did not (a fault it did
 * not survive, a deadline), 2 for bad input.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import { claimOutputDir } from '../base/output-dir.ts';
import { collect, integerOption } from './options.ts';
import type { CommandIo } from './output.ts';

interface TryFlags {
  script: string;
  fault: string[];
  latency: string;
  limit: string[];
  turns: number;
  deadline: number;
  requestRetries?: number;
  streamRetries?: number;
  out?: string;
  agentsDir?: string;
  seed: number;
  json?: boolean;
}

export function register(program: Command, io: CommandIo): void {
  const agents = program
    .command('agents')
    .description(
      'the real agent CLIs (codex, Claude Code, opencode) against the provider emulator (docs/agents.md)',
    );
  agents
    .command('try')
    .description(
      'run each real CLI for a turn and a resumed turn against a provider emulator of its own; print what it did and every request it made',
    )
    .argument('[cli...]', 'codex, claude, opencode (default: all three)')
    .option('--script <name>', 'the agent script to follow: hello, tool-call, coding', 'tool-call')
    .option(
      '--fault <spec>',
      'a provider fault, as provider serve --fault takes it (repeatable)',
      collect,
      [],
    )
    .option('--latency <profile>', 'none, fast or realistic', 'none')
    .option(
      '--limit <key=n>',
      'a per-key limit, as provider serve --limit takes it (repeatable)',
      collect,
      [],
    )
    .option('--turns <n>', 'turns: the first, then resumes', integerOption(1, 20), 2)
    .option(
      '--deadline <s>',
      'a turn still running after this many seconds is ended',
      integerOption(1, 3600),
      120,
    )
    .option(
      '--request-retries <n>',
      "the CLI's HTTP retries (codex request_max_retries, CLAUDE_CODE_MAX_RETRIES)",
      integerOption(0, 100),
    )
    .option('--stream-retries <n>', "codex's stream_max_retries", integerOption(0, 100))
    .option('--out <dir>', 'homes, workspaces and trace.jsonl go here (default: a new temp dir)')
    .option(
      '--agents-dir <dir>',
      'an install of the CLIs other than the cache (targets install agents --dir)',
    )
    .option('--seed <n>', 'seed of the emulator', integerOption(0, 2 ** 31), 1)
    .option('--json', 'print the report as JSON')
    .action((clis: string[], flags: TryFlags) => tryCommand(clis, flags, io));
  agents
    .command('env')
    .description(
      'the home and environment that point one CLI at a provider emulator and turn off everything else it would reach: for wiring agents by hand (docs/agents.md)',
    )
    .argument('<cli>', 'codex, claude or opencode')
    .requiredOption(
      '--url <url>',
      "the provider emulator's origin, e.g. http://127.0.0.1:8080 (provider serve prints it)",
    )
    .option(
      '--key <key>',
      'the API key the CLI sends (a key minted for a session attributes its requests)',
      'fleetbench',
    )
    .option('--model <name>', 'the model the CLI asks for (default: one it knows)')
    .option('--home <dir>', 'write the home there (default: a new temp dir)')
    .option('--json', 'print {home, env} as JSON instead of export lines')
    .action((cli: string, flags: EnvFlags) => envCommand(cli, flags, io));
}

interface EnvFlags {
  url: string;
  key: string;
  model?: string;
  home?: string;
  json?: boolean;
}

async function envCommand(cli: string, flags: EnvFlags, io: CommandIo): Promise<void> {
  const { AGENT_CLIS, isAgentCli, makeAgentHome } = await import('../agents/index.ts');
  if (!isAgentCli(cli))
    throw new FleetbenchError('E_USAGE', `agents env: unknown CLI '${cli}' (have: ${AGENT_CLIS.join(', ')})`);
  let url: URL;
  try {
    url = new URL(flags.url);
  } catch {
    throw new FleetbenchError(
      'E_USAGE',
      `--url ${flags.url}: expected an origin such as http://127.0.0.1:8080`,
    );
  }
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    (url.pathname !== '/' && url.pathname !== '')
  )
    throw new FleetbenchError(
      'E_USAGE',
      `--url ${flags.url}: expected an origin (scheme, host and port, no path)`,
    );
  if (flags.key.length === 0 || flags.key.length > 1024 || /\s/.test(flags.key))
    throw new FleetbenchError('E_USAGE', '--key: expected 1 to 1024 characters without spaces');
  const home = resolve(flags.home ?? mkdtempSync(join(tmpdir(), `fleetbench-${cli}-home-`)));
  const made = makeAgentHome(cli, home, { url: url.origin, key: flags.key, model: flags.model }, { env: {} });
  // The variables fleetbench sets beyond PATH, LANG and TERM: what a person adds to their own.
  const env = Object.fromEntries(
    Object.entries(made.env).filter(([name]) => !['PATH', 'LANG', 'TERM'].includes(name)),
  );
  if (flags.json) io.stdout.write(`${JSON.stringify({ cli, home, env, turn: made.turnArgs('PROMPT') })}\n`);
  else {
    const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
    const lines = [
      `# ${cli} against ${url.origin}: its home is ${home} (docs/agents.md)`,
      ...Object.entries(env).map(([name, value]) => `export ${name}=${quote(value)}`),
      `# a turn: ${cli} ${made
        .turnArgs('PROMPT')
        .map((arg) => (/\s/.test(arg) ? quote(arg) : arg))
        .join(' ')}`,
    ];
    io.stdout.write(`${lines.join('\n')}\n`);
  }
}

async function tryCommand(names: string[], flags: TryFlags, io: CommandIo): Promise<void> {
  const [agentsModule, provider, { TraceWriter }, { VERSION }, { limitsFrom }] = await Promise.all([
    import('../agents/index.ts'),
    import('../provider/index.ts'),
    import('../trace/writer.ts'),
    import('../base/version.ts'),
    import('./provider.ts'),
  ]);
  const { AGENT_CLIS, isAgentCli, resolveAgentsInstall } = agentsModule;
  const clis = names.length === 0 ? [...AGENT_CLIS] : names;
  for (const name of clis)
    if (!isAgentCli(name))
      throw new FleetbenchError(
        'E_USAGE',
        `agents try: unknown CLI '${name}' (have: ${AGENT_CLIS.join(', ')})`,
      );
  if (!provider.BUILTIN_SCRIPTS[flags.script])
    throw new FleetbenchError(
      'E_USAGE',
      `--script ${flags.script}: expected ${Object.keys(provider.BUILTIN_SCRIPTS).join(', ')}`,
    );
  const latency = provider.LATENCY_PROFILES[flags.latency];
  if (!latency)
    throw new FleetbenchError(
      'E_USAGE',
      `--latency ${flags.latency}: expected ${Object.keys(provider.LATENCY_PROFILES).join(', ')}`,
    );
  const faults = flags.fault.map(provider.parseFaultFlag);
  const limits = limitsFrom(flags.limit, provider.LIMIT_KEYS);
  const install = resolveAgentsInstall(flags.agentsDir, clis.filter(isAgentCli), io.env);
  const out = resolve(flags.out ?? mkdtempSync(join(tmpdir(), 'fleetbench-agents-')));
  // --out is claimed as a run's is: one at a time, nothing written through a link there (the
  // lock goes at exit should the trace not open).
  const claim = claimOutputDir(out, 'agents try');
  const trace = new TraceWriter(join(out, 'trace.jsonl'), {
    runId: `agents-try-${Date.now().toString(36)}`,
    tool: { name: 'fleetbench', version: VERSION },
    clock: 'real',
    seed: flags.seed,
    scenario: { name: 'agents-try', hash: null },
    target: 'provider-emulator',
    epochMs: Date.now(),
    startedAt: new Date().toISOString(),
  });
  const { tryAgents } = await import('../agents/try.ts');
  let report: Awaited<ReturnType<typeof tryAgents>>;
  try {
    report = await tryAgents({
      install,
      clis: clis.filter(isAgentCli),
      out,
      script: flags.script,
      faults,
      latency,
      limits,
      retries: { requests: flags.requestRetries, streams: flags.streamRetries },
      turns: flags.turns,
      deadlineMs: flags.deadline * 1000,
      seed: flags.seed,
      trace,
      log: (text) => io.notice(text),
    });
  } finally {
    trace.close('completed');
    claim.release();
  }
  if (flags.json) io.stdout.write(`${JSON.stringify({ out, trace: join(out, 'trace.jsonl'), ...report })}\n`);
  else {
    const lines: string[] = [
      `provider emulator ${report.providerUrl}; homes, workspaces and trace.jsonl in ${out}`,
    ];
    for (const agent of report.agents) {
      lines.push(`${agent.cli} ${agent.version} (${agent.binary})`);
      agent.turns.forEach((turn, i) => {
        const how = turn.completed
          ? 'completed'
          : turn.timedOut
            ? `ended at the ${flags.deadline} s deadline`
            : `did not complete (exit ${turn.exitCode ?? turn.signal}${turn.errors[0] ? `: ${turn.errors[0].slice(0, 120)}` : ''})`;
        lines.push(
          `  turn ${i + 1}${turn.resumed ? ' (resumed)' : ''}: ${how} in ${(turn.durationMs / 1000).toFixed(2)} s, first activity ${turn.firstActivityMs === undefined ? '–' : `${(turn.firstActivityMs / 1000).toFixed(2)} s`}, commands: ${turn.commands.length === 0 ? 'none' : turn.commands.join('; ')}`,
        );
      });
      const statuses = new Map<string, number>();
      for (const request of agent.requests)
        statuses.set(request.status, (statuses.get(request.status) ?? 0) + 1);
      const retried = agent.requests.filter((request) => (request.attempt ?? 1) > 1).length;
      lines.push(
        `  requests: ${agent.requests.length} (${[...statuses].map(([status, n]) => `${n}× ${status}`).join(', ')}), retries ${retried}, tokens in ${agent.requests.reduce((sum, r) => sum + (r.tokensIn ?? 0), 0)}, out ${agent.requests.reduce((sum, r) => sum + (r.tokensOut ?? 0), 0)}`,
      );
    }
    lines.push(report.ok ? 'every turn completed' : 'a turn did not complete');
    io.stdout.write(`${lines.join('\n')}\n`);
  }
  if (!report.ok) io.exitCode = ExitCode.runFailed;
}
