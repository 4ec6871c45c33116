/**
 * The `gh` CLI agent-orchestrator shells out to: found, its version read, and the one feature
 * difference that changes what AO 0.2.0 sees. `gh pr checks --json` does not exist in older gh
 * (Debian 12 ships 2.23): gh answers "unknown flag: --json", which AO's fallback does not
 * recognise (it only catches "unknown json field"), so AO reads every open PR's CI as failing.
 * That is a real property of AO on such a machine, measured as it is and stated in the run's
 * header and docs/agent-orchestrator.md, not worked around.
 */
import { execFileSync } from 'node:child_process';
import { FleetbenchError } from '../../base/errors.ts';

export interface GhInfo {
  path: string;
  version: string;
  /** `gh pr checks --json` exists (Debian 12's gh 2.23 and Debian 13's 2.46 lack it): read from gh's help, not from a version table. */
  prChecksJson: boolean;
}

export function detectGh(bin = 'gh'): GhInfo {
  let versionText: string;
  try {
    versionText = execFileSync(bin, ['--version'], {
      encoding: 'utf8',
      timeout: 10_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new FleetbenchError(
      'E_TARGET',
      missing
        ? 'the ao target runs agent-orchestrator, which reaches GitHub only through the gh CLI, and gh is not on PATH'
        : `gh --version failed: ${String((error as Error).message).split('\n')[0]}`,
      { hint: 'install gh (Debian: apt-get install gh)' },
    );
  }
  const version = /gh version (\S+)/.exec(versionText)?.[1] ?? 'unknown';
  let help = '';
  try {
    help = execFileSync(bin, ['pr', 'checks', '--help'], {
      encoding: 'utf8',
      timeout: 10_000,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GH_PAGER: 'cat', NO_COLOR: '1' },
    });
  } catch (error) {
    help = String((error as { stdout?: string }).stdout ?? '');
  }
  return { path: bin, version, prChecksJson: /--json\b/.test(help) };
}

/** The run header's line about gh, and what an old gh does to AO. */
export function ghNote(gh: GhInfo): string {
  return gh.prChecksJson
    ? `gh ${gh.version}`
    : `gh ${gh.version}: no \`gh pr checks --json\`; AO 0.2.0's fallback does not catch gh's "unknown flag" error, so it reads every open PR's CI as failing (docs/agent-orchestrator.md)`;
}

let detected: { gh: GhInfo | undefined } | undefined;

/**
 * This machine's gh, found once per process (two short gh processes), or undefined when there is
 * none: what the `ao-0.2` model assumes by default (a real run here would use this gh).
 */
export function detectGhOnce(): GhInfo | undefined {
  if (!detected) {
    try {
      detected = { gh: detectGh() };
    } catch {
      detected = { gh: undefined };
    }
  }
  return detected.gh;
}
