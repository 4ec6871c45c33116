/** The model provider as the agents saw it, from analysis.provider (docs/analysis.md#provider). */
import type { Analysis } from '../../analyze/schema.ts';
import { fmtInt, type Section } from '../table.ts';
import { pairs, percentileColumns, percentileRow, table } from './build.ts';

const counts = (record: Record<string, number>) =>
  Object.entries(record)
    .map(([key, n]) => `${key} ${fmtInt(n)}`)
    .join(', ') || '–';

export function providerSections(a: Analysis): Section[] {
  const provider = a.provider;
  if (!provider) return [];
  const clis = Object.entries(provider.byCli);
  return [
    {
      title: 'Provider (model requests)',
      blocks: [
        pairs([
          ['requests', `${fmtInt(provider.requests)} (${fmtInt(provider.retries)} retries)`],
          ...clis.map(([cli, c]): [string, string] => [
            cli,
            `${fmtInt(c.requests)} requests: ${counts(c.byStatus)}; retries ${fmtInt(c.retries)}; faults ${counts(c.faults)}; tokens in ${fmtInt(c.tokensIn)}, out ${fmtInt(c.tokensOut)}; version ${counts(c.versions)}`,
          ]),
        ]),
        table(
          percentileColumns('time to first token'),
          clis.map(([cli, c]) => percentileRow(cli, c.timeToFirstToken)),
        ),
        table(
          percentileColumns('request duration'),
          clis.map(([cli, c]) => percentileRow(cli, c.duration)),
        ),
      ],
    },
  ];
}
