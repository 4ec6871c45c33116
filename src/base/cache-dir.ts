/**
 * The per-user cache of generated code that fleetbench runs (the analysis worker's bundle, the
 * compiled trace validators). It lives in the OS temp directory, in a directory of this user's
 * own (mode 0700, checked before every use): code that someone else could have written there is
 * never run. Undefined when no such directory can be had; callers then work in memory.
 */
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDirectories } from './safe-write.ts';

export function privateCacheDir(): string | undefined {
  const dir = join(tmpdir(), `fleetbench-cache-${process.getuid?.() ?? 'user'}`);
  try {
    makeDirectories(dir, 0o700);
    const stats = statSync(dir);
    const uid = process.getuid?.();
    const own = stats.isDirectory() && (uid === undefined || stats.uid === uid) && (stats.mode & 0o022) === 0;
    return own ? dir : undefined;
  } catch {
    return undefined;
  }
}
