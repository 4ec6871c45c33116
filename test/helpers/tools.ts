import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';

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

/** `command args…` run inside a fresh loopback-only network namespace: spawn's argv. */
export function inLoopbackNamespace(command: string, args: readonly string[]): [string, string[]] {
  return ['unshare', ['-rn', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', command, ...args]];
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
