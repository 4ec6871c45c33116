/**
 * The byte scan that reads a trace beside its results (src/results/judge-inputs.ts, docs/budgets.md
 * #only-a-completed-run-is-judged): wherever the file's chunks split its lines, it counts the
 * lines the parser would read and finds a second header or an early footer exactly as a reading
 * of the whole text line by line does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { outlineOfChunks, type TraceOutline } from '../src/results/judge-inputs.ts';

const HEADER = '{"kind":"run","format":"fleetbench-trace/1","runId":"r"}';
const FOOTER = '{"kind":"end","t":1,"reason":"completed","counts":{"api":1,"span":0,"event":0,"gauge":0}}';
const RECORD = '{"kind":"api","t":0,"method":"GET"}';

/** The same outline, from the text split into lines. */
function reference(text: string): TraceOutline {
  const lines = text.split('\n');
  let nonBlank = 0;
  let secondHeaderLine: number | undefined;
  let footerLines: number[] = [];
  let lastNonBlank = 0;
  lines.forEach((line, index) => {
    if ([...line].every((c) => c.charCodeAt(0) <= 32)) return;
    nonBlank++;
    lastNonBlank = index + 1;
    if (index > 0 && secondHeaderLine === undefined && line.startsWith('{"kind":"run"'))
      secondHeaderLine = index + 1;
    if (line.startsWith('{"kind":"end"')) footerLines.push(index + 1);
  });
  footerLines = footerLines.filter((line) => line !== lastNonBlank);
  return {
    first: lines[0] ?? '',
    last: text.trimEnd().split('\n').pop() ?? '',
    lines: nonBlank,
    bom: text.startsWith('\ufeff'),
    ...(secondHeaderLine !== undefined ? { secondHeaderLine } : {}),
    ...(footerLines.length > 0 ? { earlyFooterLine: footerLines[0] } : {}),
  };
}

describe('the outline of a trace beside its results', () => {
  it('property: any lines, split into chunks anywhere, give the outline a line-by-line reading gives', () => {
    const line = fc.constantFrom(
      HEADER,
      FOOTER,
      RECORD,
      '',
      '  ',
      '\r',
      `${RECORD}\r`,
      '{}',
      '{"kind":"ru',
      ' {"kind":"run"}',
    );
    fc.assert(
      fc.property(
        fc.array(line, { maxLength: 30 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 8 }),
        (body, trailingNewline, cuts) => {
          const text = `${[HEADER, ...body, FOOTER].join('\n')}${trailingNewline ? '\n' : ''}`;
          const bytes = Buffer.from(text);
          const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...at].map((start, i) => bytes.subarray(start, [...at, bytes.length][i]));
          expect(outlineOfChunks(chunks)).toEqual(reference(text));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a file that starts with a UTF-8 byte-order mark is told apart, even split inside the mark', () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${HEADER}\n${FOOTER}\n`)]);
    expect(outlineOfChunks([bytes.subarray(0, 2), bytes.subarray(2)]).bom).toBe(true);
    expect(outlineOfChunks([bytes.subarray(3)]).bom).toBe(false);
  });
});
