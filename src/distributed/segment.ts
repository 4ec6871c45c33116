/**
 * Segment records (docs/distributed.md): what every record of a matrix or run segment starts
 * with, and the found records by index for `fleetbench merge`. What a segment is (`i/n`, from
 * --segment or the Indexed Job's environment) is src/base/segment.ts.
 */
import { existsSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { z } from 'zod';
import { FleetbenchError } from '../base/errors.ts';
import type { Segment } from '../base/segment.ts';

/** What a segment is doing; `running` stays on a segment that was lost. */
export const segmentStatusSchema = z.enum(['running', 'done', 'interrupted', 'failed']);

/** The fields every segment record (of a matrix or a run) starts with: what it is and how it went. */
export function segmentRecordFields<K extends string, V extends number>(kind: K, schemaVersion: V) {
  return {
    kind: z.literal(kind),
    schemaVersion: z.literal(schemaVersion),
    generator: z.object({ name: z.string(), version: z.string() }),
    segment: z.object({ index: z.number().int().nonnegative(), count: z.number().int().positive() }),
    status: segmentStatusSchema.describe('running: started and not (yet) finished; a lost segment stays so'),
    error: z.string().optional(),
  };
}

/** Found segment records by index; one index recorded twice is bad input (keep one). */
export function segmentsByIndex<T extends { path: string; record: { segment: Segment } }>(
  found: readonly T[],
  name: (segment: Segment) => string,
): Map<number, T> {
  const byIndex = new Map<number, T>();
  for (const f of found) {
    const other = byIndex.get(f.record.segment.index);
    if (other)
      throw new FleetbenchError(
        'E_RESULTS',
        `segment ${name(f.record.segment)} is recorded twice: ${other.path} and ${f.path}; keep one`,
      );
    byIndex.set(f.record.segment.index, f);
  }
  return byIndex;
}

/**
 * Why `rel`, a path a segment record names relative to `root`, would lead out of root, or
 * undefined when it stays inside: by its text (absolute, or up through `..`), and by what it
 * resolves to on disk (a link inside root that points out, `runs/x -> /etc`; of a path not
 * there yet, its nearest existing part is resolved). A merge reads and writes only inside the
 * directories it was given.
 */
export function outsideDir(root: string, rel: string): string | undefined {
  const normal = normalize(rel);
  if (isAbsolute(rel) || normal === '..' || normal.startsWith(`..${sep}`)) return 'is outside';
  let at = join(root, rel);
  while (!existsSync(at) && at !== dirname(at)) at = dirname(at);
  let real: string;
  let realRoot: string;
  try {
    real = realpathSync(at);
    realRoot = realpathSync(root);
  } catch {
    return undefined;
  }
  if (real === realRoot || real.startsWith(`${realRoot}${sep}`)) return undefined;
  return `resolves outside (to ${real}, through a link)`;
}
