/**
 * Provider faults on demand: what a real provider does on a bad day, so that a real CLI's
 * handling of it (its retries, its give-up, its deadline) can be seen and measured. A rule says
 * what goes wrong, to which requests (by CLI, session or key; the next N of them, or a seeded
 * share) and when (a run-time window). Rules come from the admin API, `provider serve --fault`
 * and scenarios (docs/provider-emulator.md, "Faults").
 */
import { z } from 'zod';
import { FleetbenchError } from '../base/errors.ts';
import { PROVIDER_LIMITS } from '../base/limits.ts';
import type { Rng } from '../base/rng.ts';

export const FAULT_KINDS = [
  /** 429 with retry-after (seconds). */
  'rate-limit',
  /** 429 without retry-after. */
  'rate-limit-bare',
  /** 529 overloaded (Anthropic's status; the OpenAI APIs answer 503 with their own words). */
  'overloaded',
  /** 500 internal error. */
  'server-error',
  /** 503 unavailable. */
  'unavailable',
  /** The stream starts, then the connection closes before the reply ends. */
  'cut',
  /**
   * The stream starts, then an error event ends it (Responses: response.failed, rate_limit_exceeded
   * with "try again in N s" when retryAfterS is set; Messages: an error event; Chat: an error chunk).
   */
  'stream-error',
  /** The first token comes `delayMs` later than the profile says. */
  'slow-first-token',
  /** The connection is reset without an answer (the provider is unreachable). */
  'outage',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** A window past 30 days is past any run fleetbench plays (docs/limits.md). */
const PAST_ANY_RUN = `at most ${PROVIDER_LIMITS.maxFaultWindowMs} ms (30 days, docs/limits.md): a window past any run can never fire`;

export const faultRuleSchema = z
  .object({
    kind: z.enum(FAULT_KINDS),
    /** rate-limit: the retry-after it sends, seconds. */
    retryAfterS: z.number().int().min(0).max(3600).optional(),
    /** slow-first-token: the added delay, ms. */
    delayMs: z.number().min(0).max(3_600_000).optional(),
    /** cut, stream-error: how many output chunks go out before it (default: half of them). */
    afterChunks: z.number().int().min(0).max(100_000).optional(),
    cli: z.string().max(64).optional(),
    session: z.string().max(256).optional(),
    key: z.string().max(1024).optional(),
    /** Only the next `count` matching requests (default: every matching one). */
    count: z.number().int().min(1).max(1_000_000).optional(),
    /** A seeded share of the matching requests, 0-1. */
    share: z.number().min(0).max(1).optional(),
    /** Run-time window, ms: within the run (docs/limits.md), and not empty. */
    fromMs: z.number().min(0).max(PROVIDER_LIMITS.maxFaultWindowMs, PAST_ANY_RUN).optional(),
    untilMs: z.number().min(0).max(PROVIDER_LIMITS.maxFaultWindowMs, PAST_ANY_RUN).optional(),
  })
  .strict()
  .refine((rule) => rule.untilMs === undefined || rule.untilMs > (rule.fromMs ?? 0), {
    error: 'untilMs must be after fromMs: a window that never opens would never fire',
    path: ['untilMs'],
  });

export type FaultRule = z.infer<typeof faultRuleSchema>;

/** What a request is matched on. */
export interface FaultSubject {
  cli: string;
  session: string | undefined;
  key: string;
  now: number;
}

interface ActiveRule {
  id: number;
  rule: FaultRule;
  left: number;
}

/**
 * `KIND[:N][@cli=codex,session=s1,share=0.5,from=10s,until=20s]`, the command line's short form:
 * `rate-limit:2` sends two 429s with retry-after 1 s... N is the count for every kind but
 * rate-limit (its retry-after) and slow-first-token (its delay in ms), which take `count=` instead.
 */
export function parseFaultFlag(text: string): FaultRule {
  const [head = '', options = ''] = text.split('@', 2);
  const [kind, number] = head.split(':', 2);
  const rule: Record<string, unknown> = { kind };
  if (number !== undefined && number !== '') {
    const value = Number(number);
    if (kind === 'rate-limit') rule.retryAfterS = value;
    else if (kind === 'slow-first-token') rule.delayMs = value;
    else if (kind === 'cut' || kind === 'stream-error') rule.afterChunks = value;
    else rule.count = value;
  }
  for (const pair of options.split(',').filter(Boolean)) {
    const [key = '', value = ''] = pair.split('=', 2);
    const numeric = Number(value);
    if (key === 'from' || key === 'until') rule[`${key}Ms`] = durationMs(value);
    else if (key === 'count' || key === 'share') rule[key] = numeric;
    else rule[key] = value;
  }
  const parsed = faultRuleSchema.safeParse(rule);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new FleetbenchError(
      'E_USAGE',
      `--fault ${text}: ${issue?.path.join('.') || 'fault'}: ${issue?.message} (kinds: ${FAULT_KINDS.join(', ')})`,
    );
  }
  return parsed.data;
}

function durationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text);
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === 'm' ? value * 60_000 : match[2] === 'ms' ? value : value * 1000;
}

export class FaultBook {
  private rules: ActiveRule[] = [];
  private nextId = 1;

  constructor(private readonly rng: Rng) {}

  add(rule: FaultRule): number {
    const id = this.nextId++;
    this.rules.push({ id, rule, left: rule.count ?? Number.POSITIVE_INFINITY });
    return id;
  }

  clear(): void {
    this.rules = [];
  }

  list(): Array<FaultRule & { id: number; left: number | null }> {
    return this.rules.map(({ id, rule, left }) => ({
      ...rule,
      id,
      left: Number.isFinite(left) ? left : null,
    }));
  }

  /** The first rule that fires for this request (its count is spent), if any. */
  match(subject: FaultSubject): FaultRule | undefined {
    for (const active of this.rules) {
      const { rule } = active;
      if (active.left <= 0) continue;
      if (rule.cli !== undefined && rule.cli !== subject.cli) continue;
      if (rule.session !== undefined && rule.session !== subject.session) continue;
      if (rule.key !== undefined && rule.key !== subject.key) continue;
      if (rule.fromMs !== undefined && subject.now < rule.fromMs) continue;
      if (rule.untilMs !== undefined && subject.now >= rule.untilMs) continue;
      if (rule.share !== undefined && !this.rng.chance(rule.share)) continue;
      active.left -= 1;
      return rule;
    }
    return undefined;
  }
}
