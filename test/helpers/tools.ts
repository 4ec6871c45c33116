import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type AgentCli, resolveAgentsInstall } from '../../src/agents/index.ts';

/**
 * A system tool a test needs (gh, promtool, Chromium, …), by name on PATH or by absolute path.
 * Missing on a developer machine: the suite is skipped with one line naming the Debian package.
 * Missing with CI set: the suite runs and fails in `require()`, since .ci/run installs every
 * package the tests need.
 */
export function systemTool(command: string, versionArgs: string[], debianPackage: string) {
  const present = spawnSync(command, versionArgs, { stdio: 'ignore', timeout: 30_000 }).status === 0;
  const ci = Boolean(process.env.CI);
  if (!present && !ci) {
    process.stderr.write(`skipped: needs \`${command}\` (Debian package ${debianPackage})\n`);
  }
  return {
    present,
    /** True when the suite should be skipped (missing, and not on CI). */
    skip: !present && !ci,
    require(): void {
      if (!present)
        throw new Error(
          `\`${command}\` is missing: install the Debian package ${debianPackage} (.ci/run does)`,
        );
    },
  };
}

/**
 * What `world --mode proxy` needs to run a command here: as root, util-linux's `unshare
 * --map-user` (the command runs as a mapped non-root user, docs/world.md "Users"); as anyone
 * else, nothing. The same skip-or-require contract as `systemTool`.
 */
export function proxyWorldTool(): { skip: boolean; require(): void } {
  if (process.getuid?.() !== 0) return { skip: false, require() {} };
  return systemTool('unshare', ['--version'], 'util-linux');
}

/**
 * A network namespace with only loopback, up (`unshare -rn` from util-linux, `ip` from
 * iproute2): the real agent CLIs run in one, so nothing beyond 127.0.0.1 can be reached. Off CI
 * its absence skips the suite with one line; on CI the suite runs and fails.
 */
export function loopbackNamespace(): boolean {
  const probe = spawnSync('unshare', ['-rn', 'sh', '-c', 'ip link set lo up'], {
    stdio: 'ignore',
    timeout: 30_000,
  });
  if (probe.status !== 0 && !process.env.CI)
    process.stderr.write(
      'skipped: needs `unshare -rn` and `ip` (Debian packages util-linux and iproute2) for an isolated network\n',
    );
  return probe.status === 0;
}

/**
 * `command args…` run inside a fresh loopback-only network namespace: spawn's argv. With
 * `connectLog`, every `connect()` of the command and of every process it starts is written there
 * (`straceConnects`): what `dialled()` reads.
 */
export function inLoopbackNamespace(
  command: string,
  args: readonly string[],
  connectLog?: string,
): [string, string[]] {
  const observe = connectLog === undefined ? [] : straceConnects(connectLog);
  return [
    'unshare',
    ['-rn', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', ...observe, command, ...args],
  ];
}

let strace: ReturnType<typeof systemTool> | undefined;
/**
 * strace (Debian package strace), to observe the connects; required under CI. Looked up on
 * first use, so only a file that observes connects says it is skipped without it.
 */
export function straceTool(): ReturnType<typeof systemTool> {
  strace ??= systemTool('strace', ['-V'], 'strace');
  return strace;
}

/**
 * The argv prefix that records every `connect()` of a process tree in `log` (strace, following
 * forks; seccomp-bpf stops only at `connect`, so the processes run at nearly full speed). `-D`:
 * the tracer runs as a grandchild, so the command keeps the spawned pid and a signal sent to it
 * (a test's SIGINT) reaches the command, not strace (which would detach and leave it running).
 */
export function straceConnects(log: string): string[] {
  return ['strace', '-D', '-f', '--seccomp-bpf', '-qq', '-e', 'trace=connect', '-o', log];
}

/**
 * What a process tree dialled, from `straceConnects`' log: every IPv4 and IPv6 connect, and
 * those to anything but loopback (127.0.0.0/8, ::1, an IPv4-mapped 127.x) as `address:port`.
 * Unix sockets and netlink are local by nature and not counted.
 */
export function dialled(log: string): { inet: number; beyondLoopback: string[] } {
  const beyond: string[] = [];
  let inet = 0;
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (!line.includes('connect(')) continue;
    const v4 = /sa_family=AF_INET, sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)/.exec(line);
    const v6 = /sa_family=AF_INET6, sin6_port=htons\((\d+)\).*inet_pton\(AF_INET6, "([^"]+)"/.exec(line);
    const hit = v4 ?? v6;
    if (!hit) continue;
    inet++;
    const [, port, address] = hit as unknown as [string, string, string];
    const loopback =
      (v4 !== null && address.startsWith('127.')) ||
      (v6 !== null && (address === '::1' || address.startsWith('::ffff:127.')));
    if (!loopback) beyond.push(`${address}:${port}`);
  }
  return { inet, beyondLoopback: beyond };
}

export const PROMTOOL = '/usr/bin/promtool';

/** `promtool check metrics` on an exposition text: its complaints (empty when clean). */
/** `promtool check rules FILE`: PromQL expressions (e.g. a dashboard's) parse and type-check. */
export function promtoolCheckRules(file: string): { code: number | null; problems: string } {
  const result = spawnSync(PROMTOOL, ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
  return { code: result.status, problems: `${result.stdout}${result.stderr}`.trim() };
}

export function promtoolCheck(text: string): { code: number | null; problems: string } {
  const result = spawnSync(PROMTOOL, ['check', 'metrics'], {
    input: text,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, problems: `${result.stdout}${result.stderr}`.trim() };
}

/**
 * Debian 13's gh (2.46), unpacked privately by scripts/gh-debian13.sh (which .ci/run runs), for
 * the compatibility rows where it behaves differently from Debian 12's gh 2.23 on PATH.
 */
export const GH_DEBIAN13 =
  process.env.FLEETBENCH_GH_DEBIAN13 ??
  join(
    process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'),
    'fleetbench',
    'gh-debian13',
    'usr',
    'bin',
    'gh',
  );

/**
 * Whether the agent CLIs `clis` (all by default) are in fleetbench's cache (`fleetbench targets
 * install agents`). Off CI their absence is said in one line, naming why, and the suite is
 * skipped by its caller; under CI the caller runs it anyway (.ci/run installs them), so it fails.
 */
export function agentClisPresent(
  clis?: readonly AgentCli[],
  options: { quick?: boolean; what?: string } = {},
): boolean {
  try {
    resolveAgentsInstall(undefined, clis, process.env, options.quick ? { quick: true } : {});
    return true;
  } catch (error) {
    if (!process.env.CI)
      process.stderr.write(
        `skipped: needs ${options.what ?? 'the agent CLIs'} (fleetbench targets install agents): ${(error as Error).message}\n`,
      );
    return false;
  }
}
