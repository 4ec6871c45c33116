/**
 * Reading results back for `compare` and `report`: a run directory or its summary.json, a
 * matrix directory or its baseline.json, an `analyze --json` document, or a directory of run
 * directories (e.g. repeats). Whatever the input, the result is a set of units (cells or
 * scenarios), each with one Analysis per run.
 */
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Analysis } from '../analyze/schema.ts';
import { FleetbenchError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_RESULTS_DEPTH, MAX_RESULTS_FILE_BYTES } from '../base/limits.ts';
import { type Baseline, type CheckRow, parseBaseline } from './baseline.ts';
import { SCORECARD_SET, scorecardCounts, verdictCheckRows } from './checks.ts';
import type { RunSummary } from './run-summary.ts';

export interface ResultUnit {
  id: string;
  heading: string;
  whatItTells: string | null;
  /** Whether the Track B scorecard verdict counts (`scorecardCounts` of the unit's budgets). */
  scorecardJudged: boolean;
  runs: Array<{
    seed: number | null;
    dir: string | null;
    analysis: Analysis;
    checks?: CheckRow[] | null;
    /** Why the run did not complete (interrupted, failed, cut short), if it did not. */
    incomplete?: string;
    /** The file the run's results came from, and the directory its trace.jsonl is in (if any). */
    resultsFile?: string;
    traceDir?: string;
  }>;
}

export interface ResultSet {
  /** What the user gave. */
  source: string;
  kind: 'baseline' | 'run' | 'runs' | 'analysis';
  units: ResultUnit[];
  /** The baseline itself when the input was one (pruning, overrides, ...). */
  baseline?: Baseline;
  /** Why the set is not whole (an interrupted matrix: some runs never ran), if it is not. */
  incomplete?: string;
}

/**
 * Events written only when the run fails (docs/limits.md#runs): the engine's `run.failed`, a
 * fault that could not be applied, an http target lost. A footer saying `completed` after one
 * was edited, or belongs to another run.
 */
const RUN_FAILED_EVENTS = ['run.failed', 'fault.failed', 'target.lost'] as const;

/**
 * Why an analysis is not of a whole run that completed, if it is not: its trace's footer, an
 * event that fails the run, or lines a `--lenient` read skipped (a run judged without them could
 * pass budgets its skipped lines breach: a second run's header, a footer saying `failed` before
 * the end, a span edited into bad JSON).
 */
export function incompleteTrace(analysis: Analysis): string | undefined {
  const { footer, truncated, skipped, skippedReasons } = analysis.input;
  if (footer === null || truncated) return 'its trace has no end footer (cut short)';
  if (footer !== 'completed') return `its trace ends with reason: ${footer}`;
  const byName = analysis.events.byName;
  const failed = RUN_FAILED_EVENTS.find((name) => (byName[name] ?? 0) > 0);
  if (failed !== undefined)
    return `its trace has a ${failed} event (the run failed) under a footer that says completed`;
  if (skipped > 0)
    return `${skipped} line${skipped === 1 ? '' : 's'} of its trace ${skipped === 1 ? 'was' : 'were'} skipped as unreadable (--lenient${skippedReasons[0] ? `; ${skippedReasons[0]}` : ''})`;
  return undefined;
}

/**
 * What tells one run's records from another's: its id with the records it holds. A copy of a run
 * directory, the same trace given twice, or a virtual run repeated with the same seed and code
 * has the same identity (the same samples); two real runs never do (their ids carry the start
 * time), nor two traces imported from different files of one name (their records differ).
 */
export function runIdentity(analysis: Analysis): string {
  const { runId, epochMs, endMs } = analysis.run;
  return JSON.stringify([runId, epochMs, endMs, analysis.input.records, analysis.input.lines]);
}

/**
 * The first run that appears twice among `runs` (by runIdentity), with both names: one run
 * pooled twice counts its samples twice, and a side of a comparison holding it twice narrows the
 * noise it measures. Undefined when every run is distinct.
 */
export function repeatedRun(
  runs: ReadonlyArray<{ name: string; analysis: Analysis }>,
): { runId: string | null; first: string; again: string } | undefined {
  const seen = new Map<string, string>();
  for (const run of runs) {
    const identity = runIdentity(run.analysis);
    const first = seen.get(identity);
    if (first !== undefined) return { runId: run.analysis.run.runId, first, again: run.name };
    seen.set(identity, run.name);
  }
  return undefined;
}

/**
 * Why a run summary is of a run that did not complete, if it is: its outcome (a partial summary
 * of an interrupted or failed run), then its analysis's trace footer.
 */
export function incompleteSummary(summary: {
  outcome?: { reason?: unknown; partial?: unknown; failure?: unknown };
  analysis: Analysis;
}): string | undefined {
  const outcome = summary.outcome;
  const failure = outcome?.failure as { source?: string; message?: string } | undefined;
  if (outcome?.reason !== 'completed')
    return outcome?.reason === 'failed'
      ? `the run failed${failure ? ` (${failure.source}: ${failure.message})` : ''}`
      : `the run ${typeof outcome?.reason === 'string' ? `was ${outcome.reason}` : 'says no outcome'} (a partial summary)`;
  if (outcome.partial !== false) return 'the summary is partial';
  return incompleteTrace(summary.analysis);
}

const ACCEPTED =
  'a run directory (with summary.json), a summary.json, a matrix directory (with baseline.json), a baseline.json, an `analyze --json` file, or a directory of run directories';

function readJson(file: string): unknown {
  const text = readInputText(file, {
    maxBytes: MAX_RESULTS_FILE_BYTES,
    code: 'E_RESULTS',
    what: 'a results file',
  });
  try {
    return JSON.parse(text);
  } catch (error) {
    // A run's trace.jsonl given where its results go: say what it is and what to give instead.
    if (isTraceText(text))
      throw new FleetbenchError(
        'E_RESULTS',
        `${file}: a trace (JSON Lines), not a result: give its run directory (${dirname(file)}) or its summary.json, or \`fleetbench analyze ${file} --json > analysis.json\` and give that; expected ${ACCEPTED}`,
      );
    throw new FleetbenchError('E_RESULTS', `${file}: not readable as JSON (${(error as Error).message})`);
  }
}

/** Whether `text` opens as a fleetbench trace does: a header line of format fleetbench-trace/N. */
function isTraceText(text: string): boolean {
  const newline = text.indexOf('\n');
  try {
    const header = JSON.parse(newline < 0 ? text : text.slice(0, newline)) as { format?: unknown } | null;
    return typeof header?.format === 'string' && header.format.startsWith('fleetbench-trace/');
  } catch {
    return false;
  }
}

/** `{ [key]: value }`, or nothing when value is undefined (exactOptionalPropertyTypes). */
function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

function unitIdOf(a: Analysis, fallback: string): string {
  return a.run.cell ?? a.run.scenario ?? fallback;
}

function fromSummary(summary: RunSummary, dir: string | null, file?: string): ResultUnit {
  const a = summary.analysis;
  const id = summary.scenario.cell ?? summary.scenario.name ?? unitIdOf(a, 'run');
  return {
    id,
    heading: `${id}: ${summary.scenario.description ?? summary.scenario.name}`,
    whatItTells: summary.scenario.whatItTells ?? null,
    // A run judged on budgets counts its scorecard only when one of them is the Track B set; a
    // run judged on nothing (--no-budgets, an older summary) shows the scorecard's own verdict.
    scorecardJudged: scorecardCounts(summary.budgets?.map((v) => v.budget)),
    runs: [
      {
        seed: summary.scenario.seed ?? a.run.seed,
        dir,
        analysis: a,
        ...(file ? { resultsFile: file, traceDir: dirname(file) } : {}),
        ...optional('incomplete', incompleteSummary(summary)),
        checks: summary.budgets
          ? summary.budgets.filter((v) => v.budget !== SCORECARD_SET).flatMap(verdictCheckRows)
          : null,
      },
    ],
  };
}

function isAnalysis(raw: unknown): raw is Analysis {
  const r = raw as Partial<Analysis> | null;
  return !!r && typeof r === 'object' && typeof r.schemaVersion === 'number' && !!r.api && !!r.scorecard;
}

function fromJsonFile(file: string): ResultSet {
  const raw = readJson(file);
  const kind = (raw as { kind?: unknown } | null)?.kind;
  if (kind === 'fleetbench-baseline') {
    const baseline = parseBaseline(raw, file);
    return {
      source: file,
      kind: 'baseline',
      baseline,
      ...optional(
        'incomplete',
        baseline.partial ? 'the matrix was interrupted: some of its runs never ran' : undefined,
      ),
      units: baseline.units.map((u) => ({
        id: u.id,
        heading: u.heading,
        whatItTells: u.whatItTells,
        scorecardJudged: scorecardCounts(u.budgets),
        runs: u.runs.map((r) => ({
          seed: r.seed,
          dir: r.dir,
          analysis: r.analysis,
          resultsFile: file,
          traceDir: join(dirname(file), r.dir),
          checks: r.checks,
          ...optional(
            'incomplete',
            r.reason !== 'completed' ? `the run ${r.reason}` : incompleteTrace(r.analysis),
          ),
        })),
      })),
    };
  }
  if (kind === 'fleetbench-run') {
    const summary = raw as RunSummary;
    if (!isAnalysis(summary.analysis))
      throw new FleetbenchError('E_RESULTS', `${file}: summary without an analysis`);
    return { source: file, kind: 'run', units: [fromSummary(summary, null, file)] };
  }
  if (isAnalysis(raw)) {
    const id = unitIdOf(raw, basename(file, '.json'));
    return {
      source: file,
      kind: 'analysis',
      units: [
        {
          id,
          heading: id,
          whatItTells: null,
          scorecardJudged: true,
          runs: [
            { seed: raw.run.seed, dir: null, analysis: raw, ...optional('incomplete', incompleteTrace(raw)) },
          ],
        },
      ],
    };
  }
  throw new FleetbenchError('E_RESULTS', `${file}: not a fleetbench result; expected ${ACCEPTED}`);
}

/**
 * summary.json files in `dir` and the directories below it, to MAX_RESULTS_DEPTH levels, in path
 * order. A run left out would change the side's verdict without a word, so nothing is skipped
 * silently: a symbolic link is followed (to a directory or a summary.json; one back to a
 * directory being walked is a cycle and holds nothing new), a summary.json that is not a regular
 * file is refused, and so is a directory deeper than the bound that has directories of its own.
 */
function findSummaries(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number, ancestors: Set<string>): void => {
    const entries = readdirSync(dir, { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : 1));
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const stat = entry.isSymbolicLink() ? statSync(path, { throwIfNoEntry: false }) : entry;
      if (stat === undefined) continue; // a dangling link points at nothing to read
      if (entry.name === 'summary.json' && !stat.isDirectory()) {
        if (!stat.isFile())
          throw new FleetbenchError('E_RESULTS', `${path}: not a regular file: a run's results are a file`);
        out.push(path);
      } else if (stat.isDirectory()) {
        const real = realpathSync(path);
        if (ancestors.has(real)) continue;
        if (depth === MAX_RESULTS_DEPTH)
          throw new FleetbenchError(
            'E_RESULTS',
            `${path}: nested more than ${MAX_RESULTS_DEPTH} directories below ${root}, deeper than runs are looked for: refused rather than leave its runs out (docs/limits.md)`,
            { hint: 'give the directory that holds the runs' },
          );
        walk(path, depth + 1, new Set([...ancestors, real]));
      }
    }
  };
  walk(root, 0, new Set([realpathSync(root)]));
  return out;
}

/**
 * `dir/name` when it exists, refused when it is not a regular file: a FIFO found in a run's
 * directory (not given by the user, who may give one: docs/limits.md) would block the read.
 */
export function resultFileIn(dir: string, name: string): string | undefined {
  const file = join(dir, name);
  if (!existsSync(file)) return undefined;
  if (!statSync(file).isFile())
    throw new FleetbenchError('E_RESULTS', `${file}: not a regular file: a run's results are a file`);
  return file;
}

export function loadResults(path: string): ResultSet {
  if (!existsSync(path))
    throw new FleetbenchError('E_RESULTS', `${path}: no such file or directory; expected ${ACCEPTED}`);
  // Anything not a directory is read as a file: a FIFO (`<(zcat baseline.json.gz)`), a device.
  if (!statSync(path).isDirectory()) return fromJsonFile(path);
  for (const name of ['baseline.json', 'summary.json']) {
    const file = resultFileIn(path, name);
    if (file) return { ...fromJsonFile(file), source: path };
  }
  const summaries = findSummaries(path);
  if (summaries.length === 0)
    throw new FleetbenchError(
      'E_RESULTS',
      `${path}: no summary.json or baseline.json in it; expected ${ACCEPTED}`,
    );
  const units = new Map<string, ResultUnit>();
  for (const file of summaries) {
    const raw = readJson(file) as RunSummary;
    // A run left out without a word would leave its figures out of the side (a breaching run
    // hidden by editing its kind): every summary.json found must be a run's.
    if (raw?.kind !== 'fleetbench-run')
      throw new FleetbenchError(
        'E_RESULTS',
        `${file}: not a fleetbench run summary (kind is ${JSON.stringify((raw as { kind?: unknown } | null)?.kind)}), in ${path}: every summary.json in a directory of runs is one`,
      );
    if (!isAnalysis(raw.analysis))
      throw new FleetbenchError('E_RESULTS', `${file}: summary without an analysis`);
    const unit = fromSummary(raw, file.slice(0, -'/summary.json'.length), file);
    const mine = units.get(unit.id);
    if (mine) mine.runs.push(...unit.runs);
    else units.set(unit.id, unit);
  }
  return { source: path, kind: 'runs', units: [...units.values()] };
}
