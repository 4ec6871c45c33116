/**
 * The static checks, as part of `vitest run` instead of before it: `tsc --noEmit` over the
 * project (tsconfig.json: src, test, bench, scripts, examples, bin) and over the HTML report's
 * browser client (its own tsconfig, DOM types), both incremental (build info in
 * node_modules/.cache/tsc/), and
 * `biome check .` (format and lint). Run here, side by side, they use the core the suite leaves
 * idle while its real-clock files wait (docs/contributing.md); a finding fails this file with
 * the tool's own messages. `npm run typecheck` and `npm run lint` run them alone.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
const TSC = require.resolve('typescript/bin/tsc');
const BIOME = join(ROOT, 'node_modules', '.bin', 'biome');

function tsc(args: string[]) {
  return run(process.execPath, [TSC, '--noEmit', '--incremental', ...args]);
}

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/**
 * Sized for a loaded 2-core machine: tsc on a fresh clone (no build info yet) takes 12-13 s alone
 * and over 60 s with both cores busy (load 14); what fails this file is a finding, never the clock.
 */
const STATIC_CHECK_TIMEOUT_MS = 300_000;

describe('static checks', () => {
  it.concurrent(
    'biome check . (format and lint)',
    async () => {
      const { code, output } = await run(BIOME, ['check', '.', '--colors=off']);
      expect(code, output).toBe(0);
    },
    STATIC_CHECK_TIMEOUT_MS,
  );

  it.concurrent(
    'tsc --noEmit: the project (tsconfig.json: src, test, bench, scripts, examples, bin)',
    async () => {
      const { code, output } = await tsc(['--tsBuildInfoFile', 'node_modules/.cache/tsc/main.tsbuildinfo']);
      expect(output).toBe('');
      expect(code).toBe(0);
    },
    STATIC_CHECK_TIMEOUT_MS,
  );

  it.concurrent(
    'tsc --noEmit: the HTML report client (src/report-html/client/tsconfig.json)',
    async () => {
      const { code, output } = await tsc([
        '--tsBuildInfoFile',
        'node_modules/.cache/tsc/client.tsbuildinfo',
        '-p',
        'src/report-html/client',
      ]);
      expect(output).toBe('');
      expect(code).toBe(0);
    },
    STATIC_CHECK_TIMEOUT_MS,
  );
});
