/**
 * The package as a user gets it: `npm pack`, installed from the tarball into an empty project
 * with engine-strict on (any dependency whose `engines` excludes this Node fails the install,
 * where a plain install would only print EBADENGINE), then `npx fleetbench demo` there.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../helpers/tmp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = scratchDir('fleetbench-pack-');

function sh(command: string, args: string[], cwd: string, timeout = 240_000) {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', npm_config_update_notifier: 'false' };
  // Not the test runner's own npm settings (vitest started by `npm test` exports npm_* vars).
  for (const key of Object.keys(env))
    if (key.startsWith('npm_config_') && key !== 'npm_config_update_notifier') delete env[key];
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('npm pack → install in an empty directory → npx fleetbench demo', () => {
  it('installs on this Node with engine-strict and runs the demo', { timeout: 420_000 }, () => {
    const packDir = join(dir, 'pack');
    mkdirSync(packDir);
    const pack = sh('npm', ['pack', '--pack-destination', packDir], ROOT);
    expect(pack.code, pack.out).toBe(0);
    const tarball = readdirSync(packDir).find((f) => f.endsWith('.tgz'))!;
    expect(tarball).toMatch(/^fleetbench-\d+\.\d+\.\d+\.tgz$/);
    // What a user gets: sources and data, no tests, benches or caches.
    const listing = sh('tar', ['tzf', join(packDir, tarball)], packDir).out.split('\n');
    expect(listing).toContain('package/bin/fleetbench.js');
    expect(listing).toContain('package/budgets/native-speed.yaml');
    expect(listing.some((f) => f.startsWith('package/test/') || f.startsWith('package/bench/'))).toBe(false);
    expect(listing.some((f) => f.includes('node_modules'))).toBe(false);

    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      '{"name":"user-project","version":"1.0.0","private":true}\n',
    );
    const install = sh(
      'npm',
      ['install', join(packDir, tarball), '--engine-strict', '--no-audit', '--no-fund', '--prefer-offline'],
      project,
    );
    expect(install.code, install.out).toBe(0);
    expect(install.out).not.toMatch(/EBADENGINE/);

    const demo = sh('npx', ['--no-install', 'fleetbench', 'demo'], project, 300_000);
    expect(demo.code, demo.out).toBe(0);
    expect(demo.out).toMatch(/Budgets: all \d+ runs pass/);
    expect(existsSync(join(project, 'fleetbench-out', 'report.html'))).toBe(true);
  });
});
