/**
 * The package as a user gets it: `npm pack` (its prepack step compiles dist/, scripts/build.ts),
 * installed from the tarball into an empty project with engine-strict on (any dependency whose
 * `engines` excludes this Node fails the install, where a plain install would only print
 * EBADENGINE), then `npx fleetbench demo` and `npx fleetbench run S2-T1-50` there. What the
 * README's quick start promises: compiled JavaScript, no install-time warning, no compile step
 * at the first run, a small install, agent-orchestrator's packages left out until asked for.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../helpers/tmp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = scratchDir('fleetbench-pack-');
/** The quick start's promise for the consumer install (docs/contributing.md, "The package"). */
const MAX_INSTALL_BYTES = 30 * 1024 * 1024;

function sh(command: string, args: string[], cwd: string, timeout = 240_000) {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', npm_config_update_notifier: 'false' };
  // Not the test runner's own npm settings (vitest started by `npm test` exports npm_* vars).
  for (const key of Object.keys(env))
    if (key.startsWith('npm_config_') && key !== 'npm_config_update_notifier') delete env[key];
  const started = performance.now();
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout });
  return { code: r.status, out: `${r.stdout}${r.stderr}`, seconds: (performance.now() - started) / 1000 };
}

/** Bytes of the files under `path` (apparent sizes; symlinks counted as links). */
function bytesUnder(path: string): number {
  const stats = lstatSync(path);
  if (!stats.isDirectory()) return stats.size;
  let total = 0;
  for (const name of readdirSync(path)) total += bytesUnder(join(path, name));
  return total;
}

describe('npm pack → install in an empty directory → npx fleetbench demo and run', () => {
  it('ships compiled JavaScript, installs lean and quietly, and runs with no compile step', {
    timeout: 600_000,
  }, () => {
    const packDir = join(dir, 'pack');
    mkdirSync(packDir);
    const pack = sh('npm', ['pack', '--pack-destination', packDir], ROOT, 300_000);
    expect(pack.code, pack.out).toBe(0);
    const tarball = readdirSync(packDir).find((f) => f.endsWith('.tgz'))!;
    expect(tarball).toMatch(/^fleetbench-\d+\.\d+\.\d+\.tgz$/);
    // What a user gets: compiled modules, data and docs; no sources, tests, benches or caches.
    const listing = sh('tar', ['tzf', join(packDir, tarball)], packDir).out.split('\n');
    for (const file of [
      'package/bin/fleetbench.js',
      'package/dist/main.mjs',
      'package/dist/analyze-worker.cjs',
      'package/dist/report-client.js',
      'package/dist/types/index.d.ts',
      'package/dist/paperclip-standin.mjs',
      'package/budgets/native-speed.yaml',
      'package/LICENSE',
    ])
      expect(listing).toContain(file);
    expect(listing.filter((f) => f.startsWith('package/src/'))).toEqual([]);
    expect(listing.some((f) => f.startsWith('package/test/') || f.startsWith('package/bench/'))).toBe(false);
    expect(listing.some((f) => f.includes('node_modules'))).toBe(false);
    // TypeScript only as declarations and the module-target example.
    expect(
      listing.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('package/examples/')),
    ).toEqual([]);

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
    // No EBADENGINE, no install scripts to approve, no deprecation: nothing to warn about.
    expect(install.out).not.toMatch(/warn|EBADENGINE|install script/i);
    const modules = join(project, 'node_modules');
    for (const absent of [
      'tsx',
      'esbuild',
      'protobufjs',
      '@opentelemetry',
      '@composio',
      'uplot',
      'typescript',
    ])
      expect(existsSync(join(modules, absent)), `${absent} installed`).toBe(false);
    const installBytes = bytesUnder(modules);
    expect(installBytes).toBeLessThan(MAX_INSTALL_BYTES);

    const demo = sh('npx', ['--no-install', 'fleetbench', 'demo'], project, 300_000);
    expect(demo.code, demo.out).toBe(0);
    expect(demo.out).toMatch(/Budgets: all \d+ runs pass/);
    expect(existsSync(join(project, 'fleetbench-out', 'report.html'))).toBe(true);
    const run = sh('npx', ['--no-install', 'fleetbench', 'run', 'S2-T1-50'], project, 120_000);
    expect(run.code, run.out).toBe(0);
    expect(run.out).toMatch(/every judged budget holds/);
    expect(existsSync(join(project, 'fleetbench-out', 'runs', 'S2-T1-50', 'report.html'))).toBe(true);
    // Nothing was compiled on the user's machine: no bundle cache beside the package.
    expect(existsSync(join(modules, '.cache', 'fleetbench'))).toBe(false);
    expect(existsSync(join(modules, 'fleetbench', 'node_modules'))).toBe(false);

    // agent-orchestrator's packages are optional: --target ao says how to get them.
    const ao = sh('npx', ['--no-install', 'fleetbench', 'run', 'S2-T1-5', '--target', 'ao'], project, 60_000);
    expect(ao.code, ao.out).toBe(2);
    expect(ao.out).toContain('npm i -D -E @composio/ao-core@0.2.0');

    // The paperclip target's stand-in agent, which Paperclip's own Node runs from the install.
    const standin = spawnSync(
      process.execPath,
      [join(modules, 'fleetbench', 'dist', 'paperclip-standin.mjs'), 'process'],
      {
        env: {
          ...process.env,
          FLEETBENCH_STANDIN: JSON.stringify({
            bootMs: [0, 0],
            firstEventMs: [0, 0],
            itemGapMs: [0, 0],
            items: [1, 1],
          }),
        },
        input: '',
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(standin.status, standin.stderr).toBe(0);
    expect(standin.stdout).toMatch(/"type":"thread\.started"[\s\S]*"type":"turn\.completed"/);

    // The public API: the values src/index.ts exports, from the compiled module.
    const api = sh(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const m = await import('fleetbench'); console.log(Object.keys(m).sort().join(','))",
      ],
      project,
    );
    expect(api.code, api.out).toBe(0);
    const source = readFileSync(join(ROOT, 'src', 'index.ts'), 'utf8');
    const values = [...source.matchAll(/^export \{([^}]*)\}/gm)].flatMap((m) =>
      m[1]!.split(',').map((name) => name.trim()),
    );
    expect(api.out.trim()).toBe(values.filter(Boolean).sort().join(','));

    process.stdout.write(
      `packaging: install ${(installBytes / 1024 / 1024).toFixed(1)} MB in ${install.seconds.toFixed(1)} s; ` +
        `first demo ${demo.seconds.toFixed(1)} s, run S2-T1-50 ${run.seconds.toFixed(1)} s\n`,
    );
  });
});
