/** `--markdown`: the same sections as the terminal, as GitHub-flavoured Markdown. */
import type { Reporter, ReportInput } from './reporter.ts';
import { type Block, markdownTable } from './table.ts';

/** Blocks as Markdown; `whereMore` says where rows cut from a long table are (`--json`). */
export function markdownBlocks(blocks: readonly Block[], whereMore: string): string[] {
  const lines: string[] = [];
  for (const block of blocks) {
    if (block.kind === 'pairs') {
      lines.push(
        ...markdownTable(
          [{ header: 'metric' }, { header: 'value' }],
          block.pairs.map(([k, v]) => [k, v]),
        ),
        '',
      );
    } else if (block.kind === 'table') {
      if (block.rows.length === 0) lines.push('(none)', '');
      else lines.push(...markdownTable(block.columns, block.rows), '');
      if (block.more) lines.push(`… ${block.more} more rows (see ${whereMore}).`, '');
    } else if (block.lines.length > 0) {
      const mark = block.tone === 'warning' ? '> ⚠ ' : '> ';
      lines.push(...block.lines.map((l) => `${mark}${l}`), '');
    }
  }
  return lines;
}

export function createMarkdownReporter(): Reporter {
  return {
    render({ title, sections }: ReportInput): string {
      const lines = [`## fleetbench ${title}`, ''];
      for (const section of sections()) {
        lines.push(`### ${section.title}`, '');
        lines.push(...markdownBlocks(section.blocks, '--json'));
      }
      return `${lines.join('\n')}\n`;
    },
  };
}
