/**
 * `fleetbench reference serve`: the reference control plane as a real HTTP server speaking the
 * `http` target protocol (docs/http-target.md), its durable state on disk, run by a supervisor
 * that can really kill and restart it (docs/live-runs.md). Prints the URL (or one JSON line with
 * --json); Ctrl-C or SIGTERM stops the control plane and the supervisor.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { FleetbenchError } from '../base/errors.ts';
import { startSupervisor } from '../reference/supervisor.ts';
import { listenHost } from './github.ts';
import { portOption, tokenOption } from './options.ts';
import type { CommandIo } from './output.ts';

interface ServeFlags {
  port: number;
  state: string;
  github?: string;
  token?: string;
  json?: boolean;
  host: '127.0.0.1' | '0.0.0.0';
}

export function register(program: Command, io: CommandIo): void {
  const reference = program
    .command('reference')
    .description('the reference control plane (the embedded default target) as a real server');
  reference
    .command('serve')
    .description('serve the reference control plane over the http target protocol on 127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', portOption, 0)
    .option(
      '--state <dir>',
      'durable state (sessions, native runs, the current run)',
      'fleetbench-out/reference-state',
    )
    .option(
      '--github <url>',
      "a GitHub of its own (e.g. a 'fleetbench github serve'); default: the one each run offers",
    )
    .option('--token <token>', 'token for --github', tokenOption)
    .option('--json', 'print the connection details as one JSON line')
    .option(
      '--host <addr>',
      '127.0.0.1, or 0.0.0.0 in a container behind a Service (docs/distributed.md)',
      listenHost,
      '127.0.0.1',
    )
    .addHelpText(
      'after',
      '\nThen, in another terminal:\n  fleetbench run S2-T1-5 --target http://127.0.0.1:PORT --clock real --set duration=2m\n  fleetbench run chaos-codex-c4 --target http://127.0.0.1:PORT --clock real --time-scale 10\n\nA restart fault really kills the control plane (hard: SIGKILL) and starts it again from --state;\nnative runs are recovered by the new process (graceful: drained first; hot: runners handed over).\nProtocol: docs/http-target.md. Live runs: docs/live-runs.md.',
    )
    .action((flags: ServeFlags) => serve(flags, io));
}

async function serve(flags: ServeFlags, io: CommandIo): Promise<void> {
  if ((flags.github === undefined) !== (flags.token === undefined))
    throw new FleetbenchError('E_USAGE', '--github and --token go together');
  const stateDir = resolve(flags.state);
  let supervisor: Awaited<ReturnType<typeof startSupervisor>>;
  try {
    supervisor = await startSupervisor({
      port: flags.port,
      host: flags.host,
      stateDir,
      github: flags.github ? { url: flags.github, token: flags.token! } : undefined,
      log: (line) => io.stderr.write(`reference: ${line}\n`),
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
      throw new FleetbenchError('E_USAGE', `port ${flags.port} is already in use`);
    throw error;
  }
  if (flags.json) {
    io.stdout.write(
      `${JSON.stringify({ url: supervisor.url, port: supervisor.port, pid: process.pid, controlPlanePid: supervisor.childPid(), state: stateDir })}\n`,
    );
  } else {
    io.stdout.write(
      [
        `fleetbench reference control plane listening on ${supervisor.url}`,
        `  protocol  fleetbench-target/1 (docs/http-target.md)`,
        `  state     ${stateDir}`,
        `  process   supervisor ${process.pid}, control plane ${supervisor.childPid()}`,
        `  github    ${flags.github ?? 'the one each run offers'}`,
        'Run against it:',
        `  fleetbench run S2-T1-5 --target ${supervisor.url} --clock real --set duration=2m`,
        `  fleetbench run chaos-codex-c4 --target ${supervisor.url} --clock real --time-scale 10`,
        'Restarts are logged here. Ctrl-C stops it.',
        '',
      ].join('\n'),
    );
  }
  await new Promise<void>((done) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void supervisor.close().then(done);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
