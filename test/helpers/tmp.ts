import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const pending = new Set<string>();

/**
 * A scratch directory removed after the current file's tests (by test/setup.ts, which runs
 * for every file). Not by an afterAll of its own: a helper module calls it too, and with
 * `isolate: false` a helper is imported once per worker, not once per file.
 */
export function scratchDir(prefix = 'fleetbench-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  pending.add(dir);
  return dir;
}

export function removeScratchDirs(): void {
  for (const dir of pending) rmSync(dir, { recursive: true, force: true });
  pending.clear();
}
