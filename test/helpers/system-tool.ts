import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * Whether a system tool a test drives is installed. Missing on a developer's machine: the test
 * skips with one line naming the Debian package. Missing under CI: an error (.ci/run installs it).
 */
export function haveSystemTool(path: string, debianPackage: string): boolean {
  if (existsSync(path)) return true;
  const message = `${path} not found: install the Debian package '${debianPackage}'`;
  if (process.env.CI) throw new Error(`${message} (CI requires it: .ci/run installs it)`);
  process.stderr.write(`skipped: ${message}\n`);
  return false;
}

export const PROMTOOL = '/usr/bin/promtool';

/** `promtool check metrics` on an exposition text: its complaints (empty when clean). */
export function promtoolCheck(text: string): { code: number | null; problems: string } {
  const result = spawnSync(PROMTOOL, ['check', 'metrics'], {
    input: text,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, problems: `${result.stdout}${result.stderr}`.trim() };
}
