/**
 * Segments: one process's share of a run or a matrix when the work is split across machines
 * (a Kubernetes Indexed Job, one index per segment; docs/distributed.md). A segment is `i/n`,
 * 0-based like the Job's `JOB_COMPLETION_INDEX`, which Kubernetes sets in every pod of an
 * Indexed Job; the count is not set by Kubernetes, so the manifests fleetbench writes pass it
 * as `FLEETBENCH_SEGMENTS` (the Job's `completions`).
 */
import { existsSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { z } from 'zod';
import { FleetbenchError } from '../base/errors.ts';
import { MAX_SEGMENTS } from '../base/limits.ts';

export interface Segment {
  /** 0-based, < count. */
  index: number;
  count: number;
}

/** The environment an Indexed Job gives each pod (the count is ours, written into the manifest). */
export const INDEX_ENV = 'JOB_COMPLETION_INDEX';
export const COUNT_ENV = 'FLEETBENCH_SEGMENTS';

export function parseSegment(text: string, source = '--segment'): Segment {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  if (!m)
    throw new FleetbenchError('E_USAGE', `${source}: expected i/n (0 ≤ i < n, e.g. 0/3), got '${text}'`);
  return checkSegment(Number(m[1]), Number(m[2]), source);
}

function checkSegment(index: number, count: number, source: string): Segment {
  if (count < 1 || count > MAX_SEGMENTS)
    throw new FleetbenchError(
      'E_USAGE',
      `${source}: the segment count must be 1 to ${MAX_SEGMENTS}, got ${count}`,
    );
  if (index >= count)
    throw new FleetbenchError(
      'E_USAGE',
      `${source}: segment index ${index} is out of range for ${count} segments (indexes are 0-based: 0 to ${count - 1})`,
    );
  return { index, count };
}

/**
 * The segment a process runs: `--segment` if given, else the Indexed Job's environment, else
 * none (the whole work). `JOB_COMPLETION_INDEX` without a count is refused rather than ignored:
 * every pod would otherwise run the whole matrix.
 */
export function resolveSegment(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Segment | undefined {
  if (flag !== undefined) return parseSegment(flag);
  const index = env[INDEX_ENV];
  const count = env[COUNT_ENV];
  if (index === undefined && count === undefined) return undefined;
  if (index === undefined || count === undefined)
    throw new FleetbenchError(
      'E_USAGE',
      `${index === undefined ? COUNT_ENV : INDEX_ENV} is set but ${index === undefined ? INDEX_ENV : COUNT_ENV} is not: a segment needs both (or --segment i/n)`,
      { hint: 'see docs/distributed.md' },
    );
  if (!/^\d+$/.test(index))
    throw new FleetbenchError('E_USAGE', `${INDEX_ENV}: expected an integer, got '${index}'`);
  if (!/^\d+$/.test(count))
    throw new FleetbenchError('E_USAGE', `${COUNT_ENV}: expected an integer, got '${count}'`);
  return checkSegment(Number(index), Number(count), `${INDEX_ENV}/${COUNT_ENV}`);
}

/**
 * Whether item k (0-based, in the work's fixed order) belongs to the segment. Round-robin rather
 * than contiguous ranges: matrix units are ordered by scale, so ranges would give one segment
 * all the large cells; dealing them out keeps the segments' work close.
 */
export function inSegment(k: number, segment: Segment): boolean {
  return k % segment.count === segment.index;
}

export const segmentLabel = (s: Segment) => `${s.index}/${s.count}`;

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
