/**
 * Finding an npm package on disk, as Node's resolution does, for the targets that load or start a
 * system from an install of the user's choice (`ao:DIR`, `paperclip:DIR`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface PackageJson {
  name?: string;
  version?: string;
  main?: string;
  exports?: unknown;
}

/** DIR/package.json, parsed; undefined when there is none or it is not JSON. */
export function readPackage(dir: string): PackageJson | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
  } catch {
    return undefined;
  }
}

/** node_modules/<name> in `start` or any directory above it. */
export function inNodeModules(start: string, name: string): string | undefined {
  for (let dir = start; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}
