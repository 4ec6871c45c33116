import { spawnSync } from 'node:child_process';
import { it } from 'vitest';

/**
 * Whether a system tool the tests drive for real is installed. Missing on a developer's machine:
 * one line naming the Debian package, and the tests that need it skip. Missing under CI (`CI`
 * set, which .ci/run guarantees to install): a failing test, never a silent skip.
 */
export function systemTool(command: string, debianPackage: string, args = ['--version']): boolean {
  const present = spawnSync(command, args, { stdio: 'ignore' }).status === 0;
  if (present) return true;
  if (process.env.CI) {
    it(`needs ${command} (CI installs the Debian package ${debianPackage})`, () => {
      throw new Error(`${command} is not installed: apt-get install -y ${debianPackage}`);
    });
  } else {
    console.log(`skipped: these tests need ${command} (Debian: apt-get install ${debianPackage})`);
  }
  return false;
}
