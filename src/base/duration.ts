/**
 * Durations in scenario and budget files read like k6's: `500ms`, `30s`, `2m`, `1h30m`.
 * A bare number means seconds (the unit the spec's tables use). Everything is stored in ms.
 */
import { z } from 'zod';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;

/** Parses `1h30m`, `2.5s`, `250ms`, or a number of seconds. Returns ms, or undefined if malformed. */
export function parseDuration(input: string | number): number | undefined {
  const ms = parseDurationMs(input);
  // 400 digits of seconds overflow to Infinity: never a duration (a limit no figure can pass).
  return ms !== undefined && Number.isFinite(ms) ? ms : undefined;
}

function parseDurationMs(input: string | number): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) && input >= 0 ? input * 1_000 : undefined;
  const text = input.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1_000;
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let match = PART.exec(text); match !== null; match = PART.exec(text)) {
    total += Number(match[1]) * (UNIT_MS[match[2]!] ?? Number.NaN);
    consumed = PART.lastIndex;
  }
  return consumed === text.length ? total : undefined;
}

/** Formats ms the way users write them back: 90000 → `1m30s`, 250 → `250ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms * 100) / 100}ms`;
  if (ms < 60_000) return `${Math.round(ms / 10) / 100}s`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.round((ms % 60_000) / 1_000);
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}` || '0s';
}

/** A zod field accepting a duration string or seconds, producing ms. */
export const durationField = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration like 30s, 2m, 1h30m or a number of seconds, got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  return ms;
});
