/**
 * One resource's `/rate_limit` bracket as the summaries show it (results/overview.ts builds it).
 * Imports nothing, so the HTML report's page script type-checks against it (and takes its columns)
 * without Node's types.
 */
export interface BracketRow {
  resource: string;
  beforeUsed: number | null;
  afterUsed: number | null;
  limit: number | null;
  /** after.used − before.used, or null when the window reset in between. */
  delta: number | null;
  sameWindow: boolean;
  tracePoints: number;
  unseenPoints: number | null;
}

/** The bracket table's columns, the same in the markdown summary and the HTML report. */
export const BRACKET_COLUMNS = [
  'resource',
  'used before',
  'used after',
  'limit',
  'delta',
  'charged in the trace',
  'unseen by the trace',
] as const;
