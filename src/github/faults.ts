/**
 * Injected faults: extra latency, a share of 5xx answers, forced secondary-limit answers. Each
 * can be limited to a protocol or a route and to a duration; its start and end become trace
 * events (`fault.start` / `fault.end`, labels `target: github`, `fault: <kind>`, `id`), so an
 * analysis can tell injected trouble from the system's own.
 */
import { z } from 'zod';
import type { Rng } from '../base/rng.ts';
import type { Clock, TimerId } from '../clock/index.ts';
import type { TraceSink } from '../trace/writer.ts';

const scope = {
  /** Only requests of this protocol. */
  protocol: z.enum(['rest', 'graphql']).optional(),
  /** Only this templated route (`/repos/{owner}/{repo}/pulls`, or `/graphql`). */
  route: z.string().optional(),
  /** Run-time ms until the fault ends by itself; forever when absent. */
  durationMs: z.number().positive().optional(),
};

export const faultInputSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('latency'),
      /** Added to every matching request. */
      ms: z.number().nonnegative(),
      /** ± spread as a share of ms (0.2 = ±20%), seeded. */
      jitter: z.number().min(0).max(1).optional(),
      ...scope,
    })
    .strict(),
  z
    .object({
      kind: z.literal('error'),
      /** Share of matching requests answered with `status` (0..1). */
      share: z.number().min(0).max(1),
      status: z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504)]).optional(),
      ...scope,
    })
    .strict(),
  z
    .object({
      kind: z.literal('secondary'),
      /** Share of matching requests answered with a secondary-limit 403/429 (default 1: all). */
      share: z.number().min(0).max(1).optional(),
      retryAfterS: z.number().int().positive().optional(),
      ...scope,
    })
    .strict(),
]);

export type FaultInput = z.input<typeof faultInputSchema>;

export interface ActiveFault {
  id: string;
  input: FaultInput;
  startedAt: number;
  endsAt?: number;
  timer?: TimerId;
}

export class FaultBoard {
  private readonly clock: Clock;
  private readonly rng: Rng;
  private readonly trace?: TraceSink;
  private readonly faults = new Map<string, ActiveFault>();
  private serial = 0;

  constructor(clock: Clock, rng: Rng, trace?: TraceSink) {
    this.clock = clock;
    this.rng = rng;
    this.trace = trace;
  }

  get size(): number {
    return this.faults.size;
  }

  list(): ActiveFault[] {
    return [...this.faults.values()];
  }

  inject(input: FaultInput): ActiveFault {
    const parsed = faultInputSchema.parse(input);
    const now = this.clock.now();
    const fault: ActiveFault = { id: `fault-${++this.serial}`, input: parsed, startedAt: now };
    if (parsed.durationMs !== undefined) {
      fault.endsAt = now + parsed.durationMs;
      fault.timer = this.clock.setTimeout(() => this.end(fault), parsed.durationMs);
    }
    this.faults.set(fault.id, fault);
    this.trace?.write({
      kind: 'event',
      name: 'fault.start',
      t: now,
      labels: { target: 'github', fault: parsed.kind, id: fault.id },
      data: { ...parsed },
    });
    return fault;
  }

  /** Ends one fault, or all. Returns how many ended. */
  clear(id?: string): number {
    const targets =
      id === undefined ? [...this.faults.values()] : [this.faults.get(id)].filter((f) => f !== undefined);
    for (const fault of targets) {
      if (fault.timer !== undefined) this.clock.clearTimeout(fault.timer);
      this.end(fault);
    }
    return targets.length;
  }

  private end(fault: ActiveFault): void {
    if (!this.faults.delete(fault.id)) return;
    this.trace?.write({
      kind: 'event',
      name: 'fault.end',
      t: this.clock.now(),
      labels: { target: 'github', fault: fault.input.kind, id: fault.id },
    });
  }

  private matches(fault: ActiveFault, protocol: string, route: string): boolean {
    const input = fault.input;
    return (
      (input.protocol === undefined || input.protocol === protocol) &&
      (input.route === undefined || input.route === route)
    );
  }

  /** Extra latency (ms) for a request. */
  latency(protocol: string, route: string): number {
    let ms = 0;
    for (const fault of this.faults.values()) {
      const input = fault.input;
      if (input.kind !== 'latency' || !this.matches(fault, protocol, route)) continue;
      ms += input.jitter ? this.rng.jitter(input.ms, input.jitter) : input.ms;
    }
    return ms;
  }

  /** A 5xx status when an error fault hits this request. */
  error(protocol: string, route: string): number | undefined {
    for (const fault of this.faults.values()) {
      const input = fault.input;
      if (input.kind !== 'error' || !this.matches(fault, protocol, route)) continue;
      if (this.rng.chance(input.share)) return input.status ?? 503;
    }
    return undefined;
  }

  /** retry-after seconds when a forced secondary limit hits this request (0: use the default). */
  secondary(protocol: string, route: string): { retryAfterS?: number; endsAt?: number } | undefined {
    for (const fault of this.faults.values()) {
      const input = fault.input;
      if (input.kind !== 'secondary' || !this.matches(fault, protocol, route)) continue;
      if (this.rng.chance(input.share ?? 1)) return { retryAfterS: input.retryAfterS, endsAt: fault.endsAt };
    }
    return undefined;
  }
}
