/** Whole-run counts of api calls: calls, points, bytes, failures, conditional requests, limits. */
import type { ApiRecord } from '../../trace/schema.ts';
import type { Accumulator } from './accumulator.ts';
import { addTo } from './accumulator.ts';

export interface ApiTotalsState {
  calls: number;
  points: number;
  secondaryPoints: number;
  bytes: number;
  errors: number;
  failed: number;
  killed: number;
  conditional: number;
  conditionalNotModified: number;
  notModified: number;
  opaque: number;
  status403: number;
  status429: number;
  retryAfter: number;
  limitedAnswers: number;
  limitedPrimary: number;
  limitedSecondary: number;
  opaqueByResource: Map<string, number>;
}

/**
 * Whether an api record's `error` says its client was killed by a signal (docs/trace-format.md:
 * `signal SIGKILL`, or `signal (exit 137)` when only the exit code ≥ 128 tells).
 */
export function isKilledError(error: string): boolean {
  return error.startsWith('signal');
}

export class ApiTotals implements Accumulator<ApiTotalsState> {
  calls = 0;
  points = 0;
  secondaryPoints = 0;
  bytes = 0;
  errors = 0;
  failed = 0;
  killed = 0;
  conditional = 0;
  conditionalNotModified = 0;
  notModified = 0;
  opaque = 0;
  status403 = 0;
  status429 = 0;
  retryAfter = 0;
  limitedAnswers = 0;
  limitedPrimary = 0;
  limitedSecondary = 0;
  opaqueByResource = new Map<string, number>();

  addApi(r: ApiRecord): void {
    const status = r.status;
    this.calls++;
    this.points += r.cost;
    this.secondaryPoints += r.secondaryCost;
    if (r.bytes !== undefined) this.bytes += r.bytes;
    if (r.conditional) {
      this.conditional++;
      if (r.notModified) this.conditionalNotModified++;
    }
    if (r.notModified) this.notModified++;
    let limited = false;
    // A failed call: answered ≥ 400, or no answer and the client reported an error (a gh that
    // exited non-zero, or was killed by a signal: `error: "signal …"`), as the runbook counts.
    if (status === null) {
      if (r.error !== undefined) this.failed++;
      this.opaque++;
      addTo(this.opaqueByResource, r.resource, 1);
    } else if (status >= 400) {
      this.failed++;
      this.errors++;
      if (status === 403) {
        this.status403++;
        limited = true;
      } else if (status === 429) {
        this.status429++;
        limited = true;
      }
    }
    if (r.error !== undefined && isKilledError(r.error)) this.killed++;
    if (r.retryAfter !== undefined) {
      this.retryAfter++;
      limited = true;
    }
    if (limited) this.limitedAnswers++;
    if (r.limited === 'primary') this.limitedPrimary++;
    else if (r.limited === 'secondary') this.limitedSecondary++;
  }

  merge(other: ApiTotals): void {
    this.calls += other.calls;
    this.points += other.points;
    this.secondaryPoints += other.secondaryPoints;
    this.bytes += other.bytes;
    this.errors += other.errors;
    this.failed += other.failed;
    this.killed += other.killed;
    this.conditional += other.conditional;
    this.conditionalNotModified += other.conditionalNotModified;
    this.notModified += other.notModified;
    this.opaque += other.opaque;
    this.status403 += other.status403;
    this.status429 += other.status429;
    this.retryAfter += other.retryAfter;
    this.limitedAnswers += other.limitedAnswers;
    this.limitedPrimary += other.limitedPrimary;
    this.limitedSecondary += other.limitedSecondary;
    for (const [key, value] of other.opaqueByResource) addTo(this.opaqueByResource, key, value);
  }

  toState(): ApiTotalsState {
    return { ...this };
  }

  static fromState(state: ApiTotalsState): ApiTotals {
    return Object.assign(new ApiTotals(), state);
  }
}
