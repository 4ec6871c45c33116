/**
 * How long an emulated model takes: time to first token (a seeded log-normal draw, plus the
 * prefill of the input: a long resumed history is slower to start), then output tokens at a
 * rate, sent in chunks. The profiles are fleetbench's choice, not a vendor's figures
 * (docs/provider-emulator.md, "Latency"); `none` answers at once, for tests and for measuring
 * the CLI alone.
 */
import { z } from 'zod';
import { type Distribution, sample } from '../base/distribution.ts';
import { PROVIDER_LIMITS } from '../base/limits.ts';
import type { Rng } from '../base/rng.ts';

export interface LatencyProfile {
  name: string;
  /** Time to first token before prefill, ms. */
  ttft: Distribution;
  /** Input tokens prefilled per second (0: prefill is free). */
  prefillTokensPerSec: number;
  /** Output tokens per second (0: the whole reply at once). */
  outputTokensPerSec: number;
  /** A stream's chunks are this far apart (ms) while output flows. */
  chunkMs: number;
  /** Each request's rates are multiplied by a factor in [1 - spread, 1 + spread]. */
  spread: number;
}

export const LATENCY_PROFILES: Record<string, LatencyProfile> = {
  none: {
    name: 'none',
    ttft: { kind: 'fixed', ms: 0 },
    prefillTokensPerSec: 0,
    outputTokensPerSec: 0,
    chunkMs: 0,
    spread: 0,
  },
  // A hosted frontier model on a normal day: first token in about half a second, longer at p95,
  // a 100k-token history adds about 2 s of prefill, output at ~70 tokens/s.
  realistic: {
    name: 'realistic',
    ttft: { kind: 'lognormal', median: 450, p95: 1500 },
    prefillTokensPerSec: 50_000,
    outputTokensPerSec: 70,
    chunkMs: 50,
    spread: 0.2,
  },
  // The same shape ten times faster: real CLIs, short runs.
  fast: {
    name: 'fast',
    ttft: { kind: 'lognormal', median: 45, p95: 150 },
    prefillTokensPerSec: 500_000,
    outputTokensPerSec: 700,
    chunkMs: 20,
    spread: 0.2,
  },
};

export const latencyProfileSchema = z
  .object({
    ttftMs: z
      .object({
        median: z.number().min(0).max(PROVIDER_LIMITS.maxTtftMs),
        p95: z.number().min(0).max(PROVIDER_LIMITS.maxTtftMs),
      })
      .strict(),
    prefillTokensPerSec: z.number().min(0).max(1e9).default(0),
    outputTokensPerSec: z
      .number()
      .refine(
        (n) =>
          n === 0 ||
          (n >= PROVIDER_LIMITS.minOutputTokensPerSec && n <= PROVIDER_LIMITS.maxOutputTokensPerSec),
        {
          error: `0 (all at once) or ${PROVIDER_LIMITS.minOutputTokensPerSec} to ${PROVIDER_LIMITS.maxOutputTokensPerSec} tokens a second (docs/limits.md)`,
        },
      )
      .default(0),
    chunkMs: z.number().min(0).max(10_000).default(50),
    spread: z.number().min(0).max(0.9).default(0),
  })
  .strict()
  .refine((p) => p.ttftMs.p95 >= p.ttftMs.median, { error: 'ttftMs.p95 must not be below its median' });

export function customProfile(name: string, input: z.infer<typeof latencyProfileSchema>): LatencyProfile {
  const { median, p95 } = input.ttftMs;
  return {
    name,
    ttft: median === p95 || median === 0 ? { kind: 'fixed', ms: median } : { kind: 'lognormal', median, p95 },
    prefillTokensPerSec: input.prefillTokensPerSec,
    outputTokensPerSec: input.outputTokensPerSec,
    chunkMs: input.chunkMs,
    spread: input.spread,
  };
}

export interface Timing {
  /** From arrival to the first output token, ms. */
  ttftMs: number;
  /** From the first token to the last, ms. */
  outputMs: number;
  /** How many chunks the output is sent in (at least 1). */
  chunks: number;
}

/**
 * One request's timing. `extraFirstTokenMs` is a fault's slow first token. Drawn from the
 * request's own stream so the same request gets the same timing whatever else is in flight.
 */
export function planTiming(
  profile: LatencyProfile,
  inputTokens: number,
  outputTokens: number,
  rng: Rng,
  extraFirstTokenMs = 0,
): Timing {
  const factor = profile.spread > 0 ? rng.jitter(1, profile.spread) : 1;
  const prefill = profile.prefillTokensPerSec > 0 ? (inputTokens / profile.prefillTokensPerSec) * 1000 : 0;
  const ttftMs = sample(profile.ttft, rng) * factor + prefill * factor + extraFirstTokenMs;
  const outputMs =
    profile.outputTokensPerSec > 0 ? ((outputTokens / profile.outputTokensPerSec) * 1000) / factor : 0;
  // At most maxChunks: a long reply at a slow rate sends bigger chunks, not more timers.
  const chunks =
    profile.chunkMs > 0 && outputMs > 0
      ? Math.min(PROVIDER_LIMITS.maxChunks, Math.max(1, Math.ceil(outputMs / profile.chunkMs)))
      : 1;
  return { ttftMs, outputMs, chunks };
}
