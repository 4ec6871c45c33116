/**
 * A synthetic but realistic canonical trace of `api` records, for the analysis benchmark and the
 * parallel-reader tests: 200 sessions over 40 repos polled every 30 s by a guarded control plane
 * (ETag guards with many 304s, PR detection, GraphQL batches, review-comment writes), about 55
 * calls per second, rate-limit headers with hourly reset windows, and a few 403/429 answers.
 * Seeded: the same arguments always write the same bytes.
 */
import { Rng } from '../src/base/rng.ts';
import type { ApiRecord } from '../src/trace/schema.ts';
import { TraceWriter } from '../src/trace/writer.ts';

export interface SyntheticOptions {
  records: number;
  seed?: number;
  sessions?: number;
  repos?: number;
  /** Calls per second of run time. */
  rate?: number;
  /** Extra lines appended after the footer is written (tests use it to plant bad lines). */
  footer?: boolean;
}

const EPOCH_MS = Date.UTC(2026, 0, 1, 0, 20, 0);
const HOUR_MS = 3_600_000;

export function writeSyntheticTrace(path: string, options: SyntheticOptions): void {
  const rng = new Rng(options.seed ?? 7);
  const sessions = options.sessions ?? 200;
  const repos = options.repos ?? 40;
  const rate = options.rate ?? 55;
  const writer = new TraceWriter(
    path,
    {
      runId: `synthetic-${options.records}`,
      tool: { name: 'fleetbench', version: 'synthetic' },
      clock: 'virtual',
      seed: options.seed ?? 7,
      scenario: { name: 'synthetic', hash: null },
      epochMs: EPOCH_MS,
      startedAt: new Date(EPOCH_MS).toISOString(),
    },
    { flushIntervalMs: 0, bufferBytes: 4 * 1024 * 1024 },
  );
  const used = { core: 0, graphql: 0 };
  let window = -1;
  for (let i = 0; i < options.records; i++) {
    // Unrounded, as a measured clock gives them: JSON.stringify writes most as 16-17 digits.
    const t = (i / rate) * 1000 + rng.next() * 900;
    const wall = EPOCH_MS + t;
    const w = Math.floor(wall / HOUR_MS);
    if (w !== window) {
      window = w;
      used.core = 0;
      used.graphql = 0;
    }
    const reset = ((w + 1) * HOUR_MS) / 1000;
    const session = Math.floor(rng.next() * sessions);
    const repo = `acme/repo-${session % repos}`;
    const cycle = Math.floor(t / 30_000);
    const pick = rng.next();
    let record: ApiRecord;
    const base = {
      kind: 'api' as const,
      t,
      dur: 40 + rng.next() * 160 + (rng.next() < 0.02 ? 2000 : 0),
      service: 'github',
      project: 'acme',
      session: `ses-${session}`,
      repo,
      source: 'lifecycle' as const,
      cycle,
      phase: 'steady',
    };
    if (pick < 0.1) {
      used.graphql += 1;
      record = {
        ...base,
        protocol: 'graphql',
        method: 'POST',
        route: '/graphql',
        status: 200,
        conditional: false,
        notModified: false,
        resource: 'graphql',
        cost: 1,
        secondaryCost: 1,
        rl: {
          limit: 5000,
          remaining: Math.max(0, 5000 - used.graphql),
          used: used.graphql,
          reset,
          resource: 'graphql',
        },
        bytes: 4000 + Math.floor(rng.next() * 8000),
        op: 'graphql-batch',
      };
    } else {
      const kind = rng.next();
      const write = kind < 0.01;
      const route = write
        ? '/repos/{owner}/{repo}/pulls/{pull_number}/comments'
        : kind < 0.5
          ? '/repos/{owner}/{repo}/pulls'
          : '/repos/{owner}/{repo}/commits/{ref}/check-runs';
      const limited = rng.next() < 0.0005;
      const notModified = !write && !limited && rng.next() < 0.7;
      const status = limited ? (rng.next() < 0.5 ? 403 : 429) : write ? 201 : notModified ? 304 : 200;
      const cost = notModified ? 0 : 1;
      used.core += cost;
      record = {
        ...base,
        protocol: 'rest',
        method: write ? 'POST' : 'GET',
        route,
        status,
        conditional: !write,
        notModified,
        resource: 'core',
        cost,
        secondaryCost: write ? 5 : 1,
        rl: {
          limit: 5000,
          remaining: Math.max(0, 5000 - used.core),
          used: used.core,
          reset,
          resource: 'core',
        },
        bytes: notModified ? 0 : 1500 + Math.floor(rng.next() * 3000),
        ...(limited ? { retryAfter: 60, limited: 'secondary' as const } : {}),
        op: write ? 'post-review-comment' : kind < 0.5 ? 'guard-pr-list' : 'guard-check-runs',
      };
    }
    writer.write(record);
  }
  if (options.footer === false) writer.flush();
  else writer.close('completed');
}
