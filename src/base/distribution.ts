/**
 * Scripted times in scenarios (when an agent opens its PR, how long CI takes) are either fixed
 * or drawn from a seeded distribution:
 *   `3m`                      fixed
 *   `{ min: 2m, max: 8m }`    uniform
 *   `{ median: 4s, p95: 9s }` log-normal, the way latency profiles are usually stated
 */
import { z } from 'zod';
import { durationField } from './duration.ts';
import type { Rng } from './rng.ts';

export type Distribution =
  | { kind: 'fixed'; ms: number }
  | { kind: 'uniform'; min: number; max: number }
  | { kind: 'lognormal'; median: number; p95: number };

/** A resolved distribution as programs exchange it (the http target's run config, saved state). */
export const distributionSchema: z.ZodType<Distribution> = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('fixed'), ms: z.number().nonnegative() }),
  z.object({ kind: z.literal('uniform'), min: z.number().nonnegative(), max: z.number().nonnegative() }),
  z.object({ kind: z.literal('lognormal'), median: z.number().positive(), p95: z.number().positive() }),
]);

export const distributionField = z.union([
  durationField.transform((ms): Distribution => ({ kind: 'fixed', ms })),
  z
    .object({ min: durationField, max: durationField })
    .strict()
    .refine((v) => v.max >= v.min, { message: 'max must not be below min' })
    .transform((v): Distribution => ({ kind: 'uniform', min: v.min, max: v.max })),
  z
    .object({ median: durationField, p95: durationField })
    .strict()
    .refine((v) => v.p95 >= v.median && v.median > 0, { message: 'p95 must not be below median (> 0)' })
    .transform((v): Distribution => ({ kind: 'lognormal', median: v.median, p95: v.p95 })),
]);

export function sample(distribution: Distribution, rng: Rng): number {
  switch (distribution.kind) {
    case 'fixed':
      return distribution.ms;
    case 'uniform':
      return rng.uniform(distribution.min, distribution.max);
    case 'lognormal':
      return distribution.p95 === distribution.median
        ? distribution.median
        : rng.lognormal(distribution.median, distribution.p95);
  }
}

export const fixed = (ms: number): Distribution => ({ kind: 'fixed', ms });
