/**
 * Verdicts for CI systems (docs/ci.md): a JUnit XML file (`fleetbench check --junit FILE`), which
 * Jenkins, GitLab, CircleCI, Buildkite and GitHub test-report actions all read, and the Markdown
 * appended to GitHub Actions' step summary (`$GITHUB_STEP_SUMMARY`).
 *
 * JUnit mapping: one <testsuite> per budget set, one <testcase> per budget row. A judged row over
 * its limit is a <failure> whose message names the statistic, the measured value and the limit;
 * a report-only row never fails (its measured value and limit are in <system-out>); a row with
 * nothing to judge (a scope the input has no samples for, an adapter the run did not use) is
 * <skipped> with the reason; a misconfigured budget set is one <error> test case per problem,
 * so a CI that only counts failures still goes red.
 */

import { openOutputFile, writeOutput, writeOutputFile } from '../base/safe-write.ts';
import { reporters } from '../report/index.ts';
import { statLabel, type Verdict, type VerdictRow } from './judge.ts';
import { limitText, scopeText, statUnit, valueText, verdictSection } from './report.ts';

/** XML 1.0 text: the five entities, and characters XML cannot carry dropped. */
function xml(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function caseName(row: VerdictRow): string {
  return `${row.metric} ${scopeText(row.scope)}${row.mode === 'report' ? ' (report only)' : ''}`;
}

/** `p95 35.2s > limit 30s` for each judged statistic over its limit. */
function breaches(row: VerdictRow): string[] {
  const over = row.stats
    .filter((s) => s.judged && !s.ok)
    .map(
      (s) =>
        `${statLabel(s.threshold)} ${valueText({ ...row, unit: statUnit(s.threshold, row.unit), value: s.measured })} (limit ${limitText({ ...row, stats: [s] })})`,
    );
  const u = row.unrecovered;
  if (u && u.failing > 0)
    over.push(
      `${u.failing} cut run${u.failing === 1 ? '' : 's'} NOT recovered (${u.runs
        .filter((r) => r.failing)
        .map(
          (r) =>
            `${r.session} ${r.kind}: ${r.open ? 'still recovering at the end' : `${r.status ?? 'ended'}${r.errorCode ? `, ${r.errorCode}` : ''}`}`,
        )
        .join('; ')})`,
    );
  return over;
}

function measuredText(row: VerdictRow): string {
  const parts = row.stats.map(
    (s) =>
      `${statLabel(s.threshold)} ${valueText({ ...row, unit: statUnit(s.threshold, row.unit), value: s.measured })} · limit ${limitText({ ...row, stats: [s] })}`,
  );
  return [`n=${row.n}`, ...parts].join('\n');
}

export function junitXml(verdicts: readonly Verdict[], name = 'fleetbench check'): string {
  const suites: string[] = [];
  const totals = { tests: 0, failures: 0, errors: 0, skipped: 0 };
  for (const verdict of verdicts) {
    const cases: string[] = [];
    const counts = { tests: 0, failures: 0, errors: 0, skipped: 0 };
    const classname = xml(`fleetbench.budgets.${verdict.budget}`);
    for (const error of verdict.errors) {
      counts.tests++;
      counts.errors++;
      cases.push(
        `    <testcase classname="${classname}" name="budget configuration" time="0">\n` +
          `      <error message="${xml(error)}" type="budgets-misconfigured"/>\n    </testcase>`,
      );
    }
    if (verdict.nothingJudged) {
      counts.tests++;
      counts.failures++;
      cases.push(
        `    <testcase classname="${classname}" name="judged rows" time="0">\n` +
          `      <failure message="${xml(`nothing judged, and judging is required: ${verdict.nothingJudged}`)}" type="nothing-judged"/>\n    </testcase>`,
      );
    }
    for (const row of verdict.rows) {
      counts.tests++;
      const open = `    <testcase classname="${classname}" name="${xml(caseName(row))}" time="0">`;
      const out = `      <system-out>${xml(measuredText(row))}</system-out>`;
      if (row.status === 'fail' && row.mode === 'judged') {
        counts.failures++;
        const what = breaches(row);
        const message = what.length > 0 ? what.join('; ') : (row.note ?? 'over the limit');
        cases.push(
          `${open}\n      <failure message="${xml(message)}" type="budget-breach">${xml(
            `${caseName(row)}: ${message}`,
          )}</failure>\n${out}\n    </testcase>`,
        );
      } else if (row.status !== 'pass' && row.status !== 'fail') {
        counts.skipped++;
        cases.push(
          `${open}\n      <skipped message="${xml(row.note ?? String(row.status))}"/>\n${out}\n    </testcase>`,
        );
      } else {
        cases.push(`${open}\n${out}\n    </testcase>`);
      }
    }
    for (const key of Object.keys(totals) as Array<keyof typeof totals>) totals[key] += counts[key];
    suites.push(
      `  <testsuite name="${xml(`budgets: ${verdict.budget}`)}" tests="${counts.tests}" failures="${counts.failures}" errors="${counts.errors}" skipped="${counts.skipped}" time="0">\n` +
        `    <properties>\n      <property name="baseline" value="${xml(verdict.baseline)}"/>\n` +
        `      <property name="source" value="${xml(verdict.source)}"/>\n` +
        `      <property name="inputs" value="${xml(verdict.inputs.join(' '))}"/>\n    </properties>\n` +
        `${cases.join('\n')}\n  </testsuite>`,
    );
  }
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<testsuites name="${xml(name)}" tests="${totals.tests}" failures="${totals.failures}" errors="${totals.errors}" skipped="${totals.skipped}" time="0">\n` +
    `${suites.join('\n')}\n</testsuites>\n`
  );
}

/** A budget set that did not load, as a verdict with one error (for the JUnit file). */
export function misconfiguredVerdict(budget: string, inputs: string[], error: string): Verdict {
  return {
    budget,
    baseline: '',
    source: budget,
    inputs,
    rows: [],
    errors: [error],
    judgedBreaches: 0,
    reportBreaches: 0,
    noSamples: 0,
    verdict: 'error',
  };
}

export function writeJunit(path: string, verdicts: readonly Verdict[], name?: string): void {
  writeOutputFile(path, junitXml(verdicts, name));
}

/**
 * The verdicts as the Markdown GitHub shows on a workflow run's summary page: a headline
 * (pass, or how many judged budgets failed), then each budget set's table.
 */
export function stepSummaryMarkdown(verdicts: readonly Verdict[], title: string): string {
  const failed = verdicts.reduce((n, v) => n + v.judgedBreaches, 0);
  const misconfigured = verdicts.filter((v) => v.verdict === 'error').length;
  const judged = verdicts.reduce((n, v) => n + (v.judgedRows ?? 0), 0);
  const unjudged = verdicts.reduce((n, v) => n + (v.unjudgedRows ?? 0), 0);
  const required = verdicts.some((v) => v.nothingJudged);
  // Never "every judged budget holds" while a judged row was not judged, nor when none was.
  const headline =
    misconfigured > 0
      ? `❌ ${misconfigured} budget set${misconfigured === 1 ? ' is' : 's are'} misconfigured`
      : failed > 0
        ? `❌ ${failed} judged budget${failed === 1 ? '' : 's'} breached`
        : required
          ? '❌ nothing judged, and judging is required (--require-judged)'
          : judged === 0
            ? `⚠️ nothing judged${unjudged > 0 ? `: ${unjudged} judged row${unjudged === 1 ? '' : 's'} not judged` : ': no judged row applies to this input'} (see below)`
            : unjudged > 0
              ? `✅ ${judged} of ${judged + unjudged} judged rows hold; ⚠️ ${unjudged} not judged (see below)`
              : '✅ every judged budget holds';
  const body = reporters.markdown().render({
    title,
    document: { kind: 'fleetbench-check', verdicts },
    sections: () => verdicts.map(verdictSection),
  });
  return `${body.replace(/^## fleetbench .*\n/, `## fleetbench ${title}: ${headline}\n`)}\n`;
}

/** Appends to $GITHUB_STEP_SUMMARY when it is set (GitHub Actions); says whether it did. */
export function appendStepSummary(
  verdicts: readonly Verdict[],
  title: string,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  const path = env.GITHUB_STEP_SUMMARY;
  if (!path) return false;
  const out = openOutputFile(path, { append: true });
  try {
    writeOutput(out, stepSummaryMarkdown(verdicts, title));
  } finally {
    out.close();
  }
  return true;
}
