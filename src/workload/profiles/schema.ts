/**
 * Session profiles (docs/scenarios.md#session-profiles): what one session does, as scripted steps. Each step has a think
 * time (the user's pause after it, before the next request) and operations the session runs
 * (ingest bytes, burn CPU, write and read disk, fill and touch memory, ping). YAML in kebab-case,
 * validated strictly: an unknown field or operation, a read of disk or memory nothing wrote
 * before, or a repeated step name is an error naming the file, line and field.
 */
import { z } from 'zod';
import { parseDuration } from '../../base/duration.ts';
import { publishedJsonSchema } from '../../base/json-schema.ts';
import type { ActorFootprint, ActorOp } from '../../contract/types.ts';

export interface ProfileStep {
  name: string;
  /** The user's pause after this step before sending the next request (ms, before think-scale). */
  thinkMs: number;
  ops: ActorOp[];
}

/** A resolved profile: footprints in bytes, times in ms. */
export interface Profile {
  name: string;
  description: string;
  /** Where it came from: `built-in` or the file path. */
  source: string;
  /** A fresh session's memory and disk. */
  base: ActorFootprint;
  /** Growth stops here. */
  max: ActorFootprint;
  /**
   * The think-time gate: a parked session is woken only once its user's think time has passed.
   * Off by default: the method swaps with parked sessions every second, whoever is next.
   */
  thinkGate: boolean;
  steps: ProfileStep[];
}

const UNITS: Record<string, number> = {
  B: 1,
  kB: 1e3,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
  TiB: 1024 ** 4,
};

/** `64MB`, `1.5GiB`, `512KiB`, `100B`, or a number of bytes. Undefined when malformed. */
export function parseBytes(input: unknown): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) && input >= 0 ? input : undefined;
  if (typeof input !== 'string') return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(input);
  if (!match) return undefined;
  const unit = match[2] === '' ? 'B' : match[2]!;
  const factor = UNITS[unit];
  return factor === undefined ? undefined : Math.round(Number(match[1]) * factor);
}

const bytesField = (what: 'positive' | 'any') =>
  z.union([z.string(), z.number()]).transform((value, ctx) => {
    const bytes = parseBytes(value);
    if (bytes === undefined || (what === 'positive' && bytes <= 0)) {
      ctx.addIssue({
        code: 'custom',
        message: `expected ${what === 'positive' ? 'a positive size' : 'a size'} like 64MB, 1.5GiB or a number of bytes, got ${JSON.stringify(value)}`,
      });
      return z.NEVER;
    }
    return bytes;
  });

const footprintField = z
  .object({ memory: bytesField('any'), disk: bytesField('any') })
  .strict()
  .transform((v): ActorFootprint => ({ memoryBytes: v.memory, diskBytes: v.disk }));

export const operationNames = [
  'ingest',
  'cpu',
  'disk-write',
  'disk-read',
  'memory-fill',
  'memory-touch',
  'ping',
] as const;
type OperationName = (typeof operationNames)[number];

/** One operation: a one-key mapping, `- disk-write: 50MB`, `- cpu: 1.5s`, `- ping: 3`. */
const operationField = z.unknown().transform((value, ctx): ActorOp => {
  const fail = (message: string, path: PropertyKey[] = []) => {
    ctx.addIssue({ code: 'custom', message, path });
    return z.NEVER;
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail(`expected one operation, e.g. '- disk-write: 50MB' (one of ${operationNames.join(', ')})`);
  }
  const keys = Object.keys(value);
  if (keys.length !== 1) {
    return fail(
      keys.length === 0
        ? `expected one operation (one of ${operationNames.join(', ')})`
        : `one operation per list item, got ${keys.map((k) => `'${k}'`).join(', ')}`,
    );
  }
  const op = keys[0]!;
  const arg = (value as Record<string, unknown>)[op];
  if (!(operationNames as readonly string[]).includes(op)) {
    return fail(`unknown operation '${op}' (expected one of ${operationNames.join(', ')})`);
  }
  switch (op as OperationName) {
    case 'cpu': {
      const ms = typeof arg === 'string' || typeof arg === 'number' ? parseDuration(arg) : undefined;
      if (ms === undefined || ms <= 0)
        return fail(`expected a positive duration like 500ms or 2s, got ${JSON.stringify(arg)}`, [op]);
      return { op: 'cpu', ms };
    }
    case 'ping': {
      if (typeof arg !== 'number' || !Number.isInteger(arg) || arg <= 0)
        return fail(`expected a positive number of round trips, got ${JSON.stringify(arg)}`, [op]);
      return { op: 'ping', count: arg };
    }
    default: {
      const bytes = parseBytes(arg);
      if (bytes === undefined || bytes <= 0)
        return fail(`expected a positive size like 64MB or 1.5GiB, got ${JSON.stringify(arg)}`, [op]);
      return { op: op as Exclude<OperationName, 'cpu' | 'ping'>, bytes };
    }
  }
});

/** Required, and said so (a missing duration would read "Invalid input"). */
const thinkField = z.unknown().transform((value, ctx) => {
  const ms = typeof value === 'string' || typeof value === 'number' ? parseDuration(value) : undefined;
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message:
        value === undefined
          ? 'expected a think time (a duration like 2s)'
          : `expected a duration like 2s, 1m or a number of seconds, got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  return ms;
});

const stepSchema = z
  .object({
    name: z.string({ error: 'expected a step name' }).min(1, { error: 'expected a step name' }),
    think: thinkField.describe('the pause after this step before the next request (a duration: 2s, 1m)'),
    ops: z.array(operationField).min(1, { error: 'expected at least one operation' }),
  })
  .strict();

const DEFAULT_BASE: ActorFootprint = { memoryBytes: 128e6, diskBytes: 512e6 };
const DEFAULT_MAX: ActorFootprint = { memoryBytes: 4e9, diskBytes: 20e9 };

export const userProfileSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().optional(),
    base: footprintField.optional().describe("a fresh session's memory and disk (default 128MB, 512MB)"),
    max: footprintField.optional().describe('growth stops here (default 4GB memory, 20GB disk)'),
    'think-gate': z
      .boolean()
      .default(false)
      .describe(
        "turnover wakes a parked session only once its user's think time has passed (default false: every swap wakes the parked session that has waited longest)",
      ),
    steps: z.array(stepSchema).min(1, { error: 'expected at least one step' }),
  })
  .strict()
  .superRefine((profile, ctx) => {
    const seen = new Map<string, number>();
    profile.steps.forEach((step, i) => {
      const first = seen.get(step.name);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['steps', i, 'name'],
          message: `duplicate step name '${step.name}' (also steps[${first}])`,
        });
      } else seen.set(step.name, i);
    });
    // Reads need an earlier write in script order: a session reads only what it wrote.
    let diskWritten = false;
    let memoryWritten = false;
    profile.steps.forEach((step, i) => {
      step.ops.forEach((op, k) => {
        const path = ['steps', i, 'ops', k];
        if (op.op === 'disk-write') diskWritten = true;
        else if (op.op === 'ingest' || op.op === 'memory-fill') memoryWritten = true;
        else if (op.op === 'disk-read' && !diskWritten)
          ctx.addIssue({ code: 'custom', path, message: 'disk-read before any disk-write' });
        else if (op.op === 'memory-touch' && !memoryWritten)
          ctx.addIssue({ code: 'custom', path, message: 'memory-touch before any memory-fill or ingest' });
      });
    });
    const base = profile.base ?? DEFAULT_BASE;
    const max = profile.max ?? DEFAULT_MAX;
    if (max.memoryBytes < base.memoryBytes)
      ctx.addIssue({ code: 'custom', path: ['max', 'memory'], message: 'must not be below base.memory' });
    if (max.diskBytes < base.diskBytes)
      ctx.addIssue({ code: 'custom', path: ['max', 'disk'], message: 'must not be below base.disk' });
  });

export type UserProfile = z.input<typeof userProfileSchema>;

export function resolveProfile(parsed: z.output<typeof userProfileSchema>, source: string): Profile {
  return {
    name: parsed.name,
    description: parsed.description ?? parsed.name,
    source,
    base: parsed.base ?? DEFAULT_BASE,
    max: parsed.max ?? DEFAULT_MAX,
    thinkGate: parsed['think-gate'],
    steps: parsed.steps.map((s) => ({ name: s.name, thinkMs: s.think, ops: s.ops })),
  };
}

export function profileJsonSchema(): Record<string, unknown> {
  return publishedJsonSchema(
    userProfileSchema,
    {
      id: 'profile-1',
      title: 'fleetbench session profile',
      description: `A session profile (YAML): steps, each with a think time and operations, one per list item, one of: ${operationNames.join(', ')}. Sizes like 64MB or 1.5GiB, durations like 2s.`,
    },
    { io: 'input', unrepresentable: 'any' },
  );
}
