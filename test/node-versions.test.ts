/**
 * The Node versions fleetbench is tested on are one list, kept in step everywhere a user or CI
 * reads it: scripts/node.sh (the pinned builds), .ci/run (the whole suite on Node 20 and 24, the
 * smoke subset on 22 and 26), README's quick start and the Dockerfile's base image (a maintained
 * line, not Node 20 past its end of life). The CLI then runs a cell on each pinned build in the
 * cache: one that is not there is a skip said in one line, never a pass, and under CI (.ci/run
 * installs them before the suite) a failure.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const ROOT = join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const NODE_SH = read('scripts/node.sh');
const pinned = [
  ...NODE_SH.matchAll(/^ {2}(\d+)\) version="\$\{FLEETBENCH_NODE\d+_VERSION:-([\d.]+)\}"/gm),
].map((m) => ({ major: Number(m[1]), version: m[2]! }));

/** Where scripts/node.sh puts a pinned build (its own rule for the cache directory). */
function pinnedNode(version: string): string {
  const base =
    process.env.FLEETBENCH_CACHE_DIR ??
    (process.getuid?.() === 0
      ? '/var/cache/fleetbench'
      : join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'fleetbench'));
  const pkg = `node-${process.platform}-${process.arch}`;
  return join(base, 'node', `${pkg}-${version}`, 'node_modules', pkg, 'bin', 'node');
}

describe('the supported Node lines', () => {
  it('are one list: scripts/node.sh, .ci/run, the README and the Dockerfile agree', () => {
    expect(pinned.map((p) => p.major)).toEqual([22, 24, 26]);
    const ci = read('.ci/run');
    for (const { major } of pinned) expect(ci).toContain(`node${major}="$(scripts/node.sh ${major})"`);
    // The whole suite on the floor (the machine's Node) and on the active LTS; smoke on the others.
    expect(ci).toMatch(/^npm test$/m);
    expect(ci).toContain('PATH="$(dirname "$node24"):$PATH" npm test\n');
    expect(ci).toContain('for node in "$node22" "$node26"; do');
    expect(ci).toContain('PATH="$(dirname "$node"):$PATH" npm run test:smoke');
    const readme = read('README.md').replace(/\s+/g, ' ');
    expect(readme).toContain('Node 22, 24 or 26');
    expect(readme).toContain('the whole suite on Node 20 (the floor) and on Node 24 (the active LTS)');
    expect(readme).toMatch(/a smoke subset \([^)]*\) on Node 22 and Node 26/);
    const bases = [...read('Dockerfile').matchAll(/^FROM node:(\d+)-/gm)].map((m) => Number(m[1]));
    expect(bases.length).toBeGreaterThan(0);
    for (const major of bases) expect(pinned.map((p) => p.major)).toContain(major);
  });

  for (const { major, version } of pinned) {
    const node = pinnedNode(version);
    const present = existsSync(node);
    const ci = Boolean(process.env.CI);
    if (!present && !ci)
      process.stderr.write(
        `skipped: no pinned Node ${major} in the cache (bash scripts/node.sh ${major} installs it)\n`,
      );
    it.skipIf(!present && !ci)(`the CLI runs a cell on the pinned Node ${major} (${version})`, () => {
      expect(existsSync(node), `${node}: .ci/run installs it with scripts/node.sh ${major}`).toBe(true);
      const out = spawnSync(
        node,
        [
          BIN,
          'run',
          'S2-T1-1',
          '--set',
          'duration=4m',
          '--no-report',
          '--json',
          '--out',
          join(scratchDir(`fleetbench-node${major}-`), 'run'),
        ],
        { encoding: 'utf8', timeout: 120_000, env: { ...process.env, NO_COLOR: '1' } },
      );
      expect(out.status, out.stderr).toBe(0);
      const summary = JSON.parse(out.stdout);
      expect(summary.outcome.reason).toBe('completed');
      expect(summary.analysis.api.totals.calls).toBeGreaterThan(0);
    });
  }
});
