/**
 * The model provider as the agents saw it: the provider emulator's `provider.request` records
 * (docs/provider-emulator.md#records) per CLI: requests by status, retries (a record's `attempt`
 * past 1: the client said it was a retry, or the request before it at the same place of its
 * conversation failed), tokens in and out, time to first token, the faults answered and the CLI
 * versions the requests named. A finisher (finisher.ts): the spans
 * are retained and merged across threads like the speed records. Its schema is in schema.ts:
 * this file runs in analysis worker threads, which load no zod (worker-source.ts).
 */
import { tokenCount } from './figures.ts';
import type { Finisher, RetainedRecord } from './finisher.ts';
import { LatencyHistogram } from './histogram.ts';
import type { ProviderAnalysis } from './schema.ts';

interface CliAcc {
  requests: number;
  byStatus: Map<string, number>;
  retries: number;
  faults: Map<string, number>;
  versions: Map<string, number>;
  tokensIn: number;
  tokensOut: number;
  ttft: LatencyHistogram;
  duration: LatencyHistogram;
}

const sortedRecord = (map: Map<string, number>): Record<string, number> =>
  Object.fromEntries([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

export const providerFinisher: Finisher = {
  key: 'provider',
  retains: (name: string) => name === 'provider.request',
  finish(records: readonly RetainedRecord[]): ProviderAnalysis | undefined {
    if (records.length === 0) return undefined;
    const byCli = new Map<string, CliAcc>();
    for (const record of records) {
      if (record.kind !== 'span') continue;
      const cli = String(record.labels?.cli ?? 'other');
      let acc = byCli.get(cli);
      if (!acc) {
        acc = {
          requests: 0,
          byStatus: new Map(),
          retries: 0,
          faults: new Map(),
          versions: new Map(),
          tokensIn: 0,
          tokensOut: 0,
          ttft: new LatencyHistogram(),
          duration: new LatencyHistogram(),
        };
        byCli.set(cli, acc);
      }
      const data = (record.data ?? {}) as Record<string, unknown>;
      acc.requests += 1;
      bump(acc.byStatus, String(record.labels?.status ?? 'unknown'));
      if (typeof data.attempt === 'number' && data.attempt > 1) acc.retries += 1;
      if (typeof data.fault === 'string') bump(acc.faults, data.fault);
      if (typeof data.cliVersion === 'string') bump(acc.versions, data.cliVersion);
      acc.tokensIn += tokenCount(data.tokensIn);
      acc.tokensOut += tokenCount(data.tokensOut);
      if (typeof data.ttftMs === 'number' && record.outcome === 'ok') acc.ttft.record(data.ttftMs);
      acc.duration.record(record.dur);
    }
    let requests = 0;
    let retries = 0;
    const clis: ProviderAnalysis['byCli'] = {};
    for (const [cli, acc] of [...byCli].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      requests += acc.requests;
      retries += acc.retries;
      clis[cli] = {
        requests: acc.requests,
        byStatus: sortedRecord(acc.byStatus),
        retries: acc.retries,
        faults: sortedRecord(acc.faults),
        versions: sortedRecord(acc.versions),
        tokensIn: acc.tokensIn,
        tokensOut: acc.tokensOut,
        timeToFirstToken: acc.ttft.percentiles(),
        duration: acc.duration.percentiles(),
      };
    }
    return { requests, retries, byCli: clis };
  },
};
