/**
 * The Node versions fleetbench is tested on are one list, kept in step everywhere a user or CI
 * reads it: scripts/node.sh (the pinned builds), .ci/run (the smoke subset on each), README's
 * quick start and the Dockerfile's base image (a maintained line, not Node 20 past its end of
 * life). When a pinned Node 26 is at hand (scripts/node.sh 26 put it in the cache), the CLI runs
 * a cell on it here too; .ci/run runs the whole smoke subset on every line.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const ROOT = join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

describe('the supported Node lines', () => {
  const pinned = [...read('scripts/node.sh').matchAll(/^ {2}(\d+)\) version=/gm)].map((m) => Number(m[1]));

  it('are one list: scripts/node.sh, .ci/run, the README and the Dockerfile agree', () => {
    expect(pinned).toEqual([22, 24, 26]);
    expect(read('.ci/run')).toContain(`for major in ${pinned.join(' ')}; do`);
    expect(read('README.md')).toContain('Node 22, 24 or 26');
    const bases = [...read('Dockerfile').matchAll(/^FROM node:(\d+)-/gm)].map((m) => Number(m[1]));
    expect(bases.length).toBeGreaterThan(0);
    for (const major of bases) expect(pinned).toContain(major);
  });

  it('the CLI runs a cell on the pinned Node 26', () => {
    const base =
      process.env.FLEETBENCH_CACHE_DIR ?? (process.getuid?.() === 0 ? '/var/cache/fleetbench' : '');
    const version = /26\) version="\$\{FLEETBENCH_NODE26_VERSION:-([\d.]+)\}"/.exec(
      read('scripts/node.sh'),
    )![1]!;
    const node = join(
      base,
      'node',
      `node-${process.platform}-${process.arch === 'x64' ? 'x64' : process.arch}-${version}`,
      'node_modules',
      `node-${process.platform}-${process.arch}`,
      'bin',
      'node',
    );
    if (!existsSync(node)) {
      process.stderr.write(`skipped: no pinned Node 26 in the cache (bash scripts/node.sh 26 installs it)\n`);
      return;
    }
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
        join(scratchDir('fleetbench-node26-'), 'run'),
      ],
      {
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    expect(out.status, out.stderr).toBe(0);
    const summary = JSON.parse(out.stdout);
    expect(summary.outcome.reason).toBe('completed');
    expect(summary.analysis.api.totals.calls).toBeGreaterThan(0);
  });
});
