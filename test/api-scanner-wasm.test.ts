/**
 * The api scanner's WebAssembly module is committed (src/trace/api-scanner-wasm.ts) so that
 * neither a checkout nor the package needs a compiler to run it. This holds the committed module
 * to its source: `npm run build:wasm -- --check` compiles wasm/api-scanner.ts with the pinned
 * AssemblyScript (a devDependency, plain Node) and fails when the bytes differ.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_SCANNER_SOURCE_SHA256 } from '../src/trace/api-scanner-wasm.ts';

const root = join(import.meta.dirname, '..');

describe('the api scanner module', () => {
  it('was compiled from the committed source', () => {
    const source = readFileSync(join(root, 'wasm/api-scanner.ts'));
    expect(createHash('sha256').update(source).digest('hex')).toBe(API_SCANNER_SOURCE_SHA256);
  });

  it('is byte for byte what the source compiles to', () => {
    const check = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(root, 'scripts/build-wasm.ts'), '--check'],
      { cwd: root, encoding: 'utf8', timeout: 120_000 },
    );
    expect(check.status, check.stderr).toBe(0);
  }, 150_000);
});
