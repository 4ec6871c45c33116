/**
 * The `turnover:` section of a scenario (docs/scenarios.md#turnover): a pool of `registered` sessions, `awake` of
 * them resident, swapped at `target-rps`. User YAML in kebab-case → a resolved `TurnoverConfig`
 * with the session profile loaded (so the scenario hash covers the profile's content).
 */
import { z } from 'zod';
import { durationField } from '../base/duration.ts';
import {
  defaultFailureRates,
  type FailureRates,
  type LifecycleMode,
  lifecycleModes,
  type ResumeMode,
  resumeModes,
} from '../contract/types.ts';
import { type Profile, resolveProfileRef } from './profiles/index.ts';

const positiveInt = z
  .number({ error: 'expected a positive integer' })
  .int({ error: 'expected a positive integer' })
  .positive({ error: 'expected a positive integer' });
const rate = z.number({ error: 'expected a share between 0 and 1' }).min(0).max(1);

export const turnoverSection = z
  .object({
    registered: positiveInt.describe('sessions in the pool'),
    awake: positiveInt.describe('sessions resident once filled (at most `registered`)'),
    'target-rps': z
      .number({ error: 'expected a number of swaps per second' })
      .nonnegative({ error: 'expected a number of swaps per second' })
      .describe('swaps per second (one park and one wake each); fractions accumulate'),
    'registration-quiet': durationField
      .default(60_000)
      .describe('fill starts once registration has been idle this long'),
    'registration-concurrency': positiveInt.default(32).describe('sessions registering at once'),
    'fill-concurrency': positiveInt.default(8).describe('wakes at once while filling'),
    steady: durationField
      .optional()
      .describe(
        'length of the turnover phase after turnover.fill.done; the run ends then (default: at `duration`)',
      ),
    profile: z
      .string()
      .min(1)
      .default('coding-session')
      .describe('a built-in session profile or a profile YAML file'),
    'think-scale': z
      .number({ error: 'expected a non-negative number' })
      .nonnegative({ error: 'expected a non-negative number' })
      .default(1)
      .describe('multiplies think times (each with ±20 % seeded jitter)'),
    'lifecycle-mode': z
      .enum(lifecycleModes)
      .default('suspend')
      .describe('suspend: durable snapshots; pause: node-local; none: never parked'),
    'resume-mode': z
      .enum(resumeModes)
      .default('implicit')
      .describe('implicit: the first request wakes a parked session; explicit: a wake call first'),
    failures: z
      .object({ busy: rate.optional(), crashed: rate.optional(), 'not-found': rate.optional() })
      .strict()
      .optional()
      .describe('per-attempt failure rates of park, wake and create (default by lifecycle mode)'),
  })
  .strict()
  .refine((t) => t.awake <= t.registered, {
    path: ['awake'],
    message: 'must not exceed turnover.registered',
  });

export type UserTurnover = z.input<typeof turnoverSection>;

export interface TurnoverConfig {
  registered: number;
  awake: number;
  targetRps: number;
  registrationQuietMs: number;
  registrationConcurrency: number;
  fillConcurrency: number;
  steadyMs?: number;
  profile: Profile;
  thinkScale: number;
  lifecycleMode: LifecycleMode;
  resumeMode: ResumeMode;
  failures: FailureRates;
}

export interface ResolveContext {
  file?: string;
  lineOf?: (path: readonly PropertyKey[]) => number | undefined;
}

export function resolveTurnover(
  t: z.output<typeof turnoverSection>,
  context: ResolveContext = {},
): TurnoverConfig {
  const mode = t['lifecycle-mode'];
  const defaults = defaultFailureRates[mode === 'none' ? 'suspend' : mode];
  return {
    registered: t.registered,
    awake: t.awake,
    targetRps: t['target-rps'],
    registrationQuietMs: t['registration-quiet'],
    registrationConcurrency: t['registration-concurrency'],
    fillConcurrency: t['fill-concurrency'],
    steadyMs: t.steady,
    profile: resolveProfileRef(t.profile, context),
    thinkScale: t['think-scale'],
    lifecycleMode: mode,
    resumeMode: t['resume-mode'],
    failures: {
      busy: t.failures?.busy ?? defaults.busy,
      crashed: t.failures?.crashed ?? defaults.crashed,
      notFound: t.failures?.['not-found'] ?? defaults.notFound,
    },
  };
}
