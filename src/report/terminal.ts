/**
 * The default terminal output: compact, k6-like. Key/value pairs with dotted leaders, aligned
 * tables, warnings marked with `!`.
 */
import type { Reporter, ReportInput } from './reporter.ts';
import { type Section, textTable, width } from './table.ts';

const INDENT = '  ';

function renderSection(section: Section): string[] {
  const out = [`${INDENT}▸ ${section.title}`];
  for (const block of section.blocks) {
    if (block.kind === 'pairs') {
      const size = Math.max(...block.pairs.map(([k]) => width(k))) + 2;
      for (const [key, value] of block.pairs)
        out.push(`${INDENT}  ${key}${'.'.repeat(size - width(key))}: ${value}`);
    } else if (block.kind === 'table') {
      if (block.rows.length === 0) out.push(`${INDENT}  (none)`);
      else out.push(...textTable(block.columns, block.rows, `${INDENT}  `));
      if (block.more) out.push(`${INDENT}  … ${block.more} more (--top N, or --json for all)`);
    } else {
      const mark = block.tone === 'warning' ? '! ' : '';
      for (const line of block.lines) out.push(`${INDENT}  ${mark}${line}`);
    }
  }
  return out;
}

export function createTerminalReporter(): Reporter {
  return {
    render({ title, sections }: ReportInput): string {
      const lines = ['', `${INDENT}fleetbench ${title}`, ''];
      for (const section of sections()) lines.push(...renderSection(section), '');
      // Plain: the CLI colours the verdict words when its stdout is a terminal (cli/output.ts).
      return `${lines.join('\n')}\n`;
    },
  };
}
