/**
 * Budget files (docs/budgets.md): YAML listing metrics with limits, label scopes and a mode.
 *
 *   name: native-speed
 *   baseline: reference control plane (docs/budgets.md#native-speed)
 *   per: [adapter]              # entries for an adapter the run did not use are skipped
 *   budgets:
 *     - metric: restart_recovery_control_plane
 *       scope: { adapter: codex }
 *       p50: 2.5s
 *       p95: 4s                 # judged (default) or `mode: report`
 *     - metric: time_to_first_activity{adapter:codex,start:cold}
 *       thresholds: ['p(95)<17s', 'med<6s']      # k6-style expressions
 *
 * Everything a file can get wrong is an error naming the file and line, exit code 104 (like
 * k6's invalid thresholds): bad YAML, an unknown field, an unknown metric, a label the metric
 * does not have, a statistic it does not have, an unreadable limit, a repeated entry, a file
 * with no budgets. A scope that matches no samples is not a misconfiguration: judging shows it as
 * "no samples" (judge.ts), exit 0 unless samples are required.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isMap, isSeq } from 'yaml';
import { z } from 'zod';
import { didYouMean } from '../base/closest-names.ts';
import { parseDuration } from '../base/duration.ts';
import { ExitCode, FleetbenchError, InputFileError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_CONFIG_FILE_BYTES } from '../base/limits.ts';
import { LruMap } from '../base/lru-map.ts';
import { describeZodIssues } from '../base/validation.ts';
import { parseYamlInput, yamlFileNames } from '../base/yaml-input.ts';
import { BUDGET_METRICS, type BudgetMetric, knownMetricNames, type Stat } from './metrics.ts';

export type Op = '<' | '<=' | '>' | '>=' | '==' | '!=';

export interface Threshold {
  stat: Stat;
  /** For stat `p`: the percentile (50, 95, 99.9, ...). */
  percentile?: number;
  op: Op;
  /** In the metric's unit (ms for durations). */
  limit: number;
  /** As the user wrote it: `p95: 4s`, `p(95)<4s`. */
  source: string;
}

export interface BudgetEntry {
  index: number;
  metric: BudgetMetric;
  scope: Record<string, string>;
  /**
   * Set when the entry judges samples through an alias (`aliases:`): the scope as the file wrote
   * it (`adapter: codex`), while `scope` holds the run's own values (`adapter: codex_local`).
   */
  judgedAs?: Record<string, string>;
  thresholds: Threshold[];
  mode: 'judged' | 'report';
  /** Fail when the scope matches no sample (default: shown as "no samples", exit 0). */
  require: boolean;
  description?: string;
  line?: number;
}

export interface BudgetSet {
  name: string;
  description?: string;
  /** The baseline the limits were derived from (breach events carry it). */
  baseline: string;
  /** Label keys with one baseline per value: entries for values absent from a run are skipped. */
  per: string[];
  /**
   * Label values judged by another value's entries, by label: `{ adapter: { codex_local: codex } }`
   * (a control plane's own adapter for a provider, judged by that provider's rows).
   */
  aliases: Record<string, Record<string, string>>;
  entries: BudgetEntry[];
  /** Where it came from: a file path, or `built-in <name>`. */
  source: string;
  file: string;
}

const BUDGET_DIR = fileURLToPath(new URL('../../budgets/', import.meta.url));

export function builtinBudgetNames(): string[] {
  return yamlFileNames(BUDGET_DIR);
}

const limitValue = z.union([z.number(), z.string()]);
const KEY_STATS = ['p50', 'p90', 'p95', 'p99', 'med', 'avg', 'min', 'max', 'count', 'rate', 'value'] as const;

const entrySchema = z
  .object({
    metric: z.string().min(1),
    scope: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    ...(Object.fromEntries(KEY_STATS.map((k) => [k, limitValue.optional()])) as Record<
      (typeof KEY_STATS)[number],
      z.ZodOptional<typeof limitValue>
    >),
    thresholds: z.array(z.string()).optional().describe("k6-style expressions: 'p(95)<4s', 'rate<=30'"),
    mode: z
      .enum(['judged', 'report'])
      .optional()
      .describe("default: the metric's role (docs/analysis.md#speed)"),
    require: z
      .boolean()
      .optional()
      .describe('fail when the scope matches no sample (default false: shown as "no samples")'),
    description: z.string().optional(),
  })
  .strict();

export const budgetFileSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().optional(),
    baseline: z.string().optional().describe('what the limits were derived from (default: the name)'),
    per: z.array(z.string()).default([]).describe('label keys with one baseline per value (e.g. [adapter])'),
    aliases: z
      .record(z.string(), z.record(z.string(), z.string()))
      .default({})
      .describe(
        "label values judged by another value's entries: { adapter: { codex_local: codex } } judges codex_local samples by the codex rows",
      ),
    budgets: z.array(entrySchema).min(1, { message: 'expected at least one budget' }),
  })
  .strict();

export type UserBudgetFile = z.input<typeof budgetFileSchema>;

const EXPRESSION =
  /^\s*(p\(\s*(\d+(?:\.\d+)?)\s*\)|med|avg|min|max|count|rate|value)\s*(<=|>=|===|==|!=|<|>)\s*(.+?)\s*$/;

function configError(file: string, line: number | undefined, reason: string): InputFileError {
  return new InputFileError('E_BUDGET_CONFIG', file, line, reason, {
    exitCode: ExitCode.budgetMisconfigured,
    hint: 'the budget file format is documented in docs/budgets.md',
  });
}

/**
 * A limit in the statistic's unit: a duration metric's figures in ms (`4s`, `500ms`, `1m`; a bare
 * number is `bareUnit`), its `count` a number of samples, never a duration.
 */
function readLimit(
  raw: string | number,
  metric: BudgetMetric,
  stat: Stat,
  bareUnit: 's' | 'ms',
  where: string,
): number | string {
  const limit = readLimitValue(raw, metric, stat, bareUnit, where);
  if (typeof limit === 'string') return limit;
  // No metric fleetbench judges goes below zero: a negative limit is a typo, never a budget.
  if (limit < 0) return `${where}: expected a limit of 0 or more, got '${raw}'`;
  // An overflowed limit (400 digits) is Infinity: a bound no figure can break.
  if (!Number.isFinite(limit)) return `${where}: expected a finite limit, got '${raw}'`;
  return limit;
}

function readLimitValue(
  raw: string | number,
  metric: BudgetMetric,
  stat: Stat,
  bareUnit: 's' | 'ms',
  where: string,
): number | string {
  if (metric.unit === 'ms' && stat !== 'count') {
    if (typeof raw === 'number') return bareUnit === 's' ? raw * 1000 : raw;
    const text = raw.trim();
    if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text) * (bareUnit === 's' ? 1000 : 1);
    const ms = parseDuration(text);
    return ms === undefined ? `${where}: expected a duration like 4s or 500ms, got '${raw}'` : ms;
  }
  const n = typeof raw === 'number' ? raw : Number(raw.trim().replace(/%$/, ''));
  return Number.isFinite(n) ? n : `${where}: expected a number, got '${raw}'`;
}

/** `time_to_first_activity{adapter:codex,start:cold}` → name and scope. */
function splitMetric(text: string): { name: string; scope: Record<string, string> } | string {
  const match = /^([^{}\s]+)\s*(?:\{([^{}]*)\})?$/.exec(text.trim());
  if (!match) return `metric: cannot read '${text}' (expected name or name{label:value,...})`;
  const scope: Record<string, string> = {};
  for (const part of (match[2] ?? '').split(',').filter((p) => p.trim() !== '')) {
    const colon = part.indexOf(':');
    if (colon <= 0)
      return `metric: cannot read the scope '${part.trim()}' in '${text}' (expected label:value)`;
    scope[part.slice(0, colon).trim()] = part.slice(colon + 1).trim();
  }
  return { name: match[1]!, scope };
}

function statAllowed(metric: BudgetMetric, stat: Stat): boolean {
  if (metric.kind === 'distribution') return stat !== 'rate' && stat !== 'value';
  return metric.budgetStats?.includes(stat) ?? false;
}

function allowedText(metric: BudgetMetric): string {
  return metric.kind === 'distribution'
    ? 'p50, p90, p95, p99, med, avg, min, max, count, or p(N) in thresholds'
    : (metric.budgetStats ?? []).join(', ');
}

/** Parses and checks a budget file's text. `file` names it in errors. */
export function parseBudgetText(text: string, file: string, source = file): BudgetSet {
  const { doc, lineCounter, error, value } = parseYamlInput(text);
  if (error) throw configError(file, error.line, `YAML: ${error.message}`);
  const lineOf = (path: readonly PropertyKey[]): number | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n) as unknown[], true) as { range?: [number, number] } | undefined;
      if (node && typeof node === 'object' && node.range) return lineCounter.linePos(node.range[0]).line;
      if (n === 0) break;
      const parent = doc.getIn(path.slice(0, n - 1) as unknown[], true);
      if (isMap(parent)) {
        const item = parent.items.find((p) => (p.key as { value?: unknown })?.value === path[n - 1]);
        const key = item?.key as { range?: [number, number] } | undefined;
        if (key?.range) return lineCounter.linePos(key.range[0]).line;
      } else if (isSeq(parent)) {
        const item = parent.items[Number(path[n - 1])] as { range?: [number, number] } | undefined;
        if (item?.range) return lineCounter.linePos(item.range[0]).line;
      }
    }
    return undefined;
  };
  const raw = value;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw configError(file, undefined, 'expected a YAML mapping (name:, budgets:, ...)');
  }
  const parsed = budgetFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const more = parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    throw configError(
      file,
      lineOf(issue.path),
      `${describeZodIssues([issue], 1, budgetFileSchema)[0]}${more}`,
    );
  }
  const data = parsed.data;
  const entries: BudgetEntry[] = [];
  const seen = new Map<string, number>();
  for (const [index, entry] of data.budgets.entries()) {
    const at = (...path: PropertyKey[]) => lineOf(['budgets', index, ...path]);
    const fail = (reason: string, ...path: PropertyKey[]): never => {
      throw configError(file, at(...path), `budgets[${index}]: ${reason}`);
    };
    const split = splitMetric(entry.metric);
    if (typeof split === 'string') fail(split, 'metric');
    const { name, scope: inlineScope } = split as { name: string; scope: Record<string, string> };
    const metric = BUDGET_METRICS.get(name);
    if (!metric) {
      fail(
        `unknown metric '${name}'${didYouMean(name, knownMetricNames())} (known: ${knownMetricNames().join(', ')})`,
        'metric',
      );
      continue;
    }
    const scope: Record<string, string> = { ...inlineScope };
    for (const [key, value] of Object.entries(entry.scope ?? {})) {
      if (scope[key] !== undefined && scope[key] !== String(value)) {
        fail(`scope ${key} is both '${scope[key]}' (in metric) and '${value}' (in scope)`, 'scope', key);
      }
      scope[key] = String(value);
    }
    const labels = metric.kind === 'distribution' ? metric.labels : [];
    for (const key of Object.keys(scope)) {
      if (!labels.includes(key)) {
        fail(
          `metric ${metric.name} has no label '${key}' (${labels.length > 0 ? `its labels: ${labels.join(', ')}` : 'it has no labels'})`,
          'scope',
        );
      }
    }
    const thresholds: Threshold[] = [];
    for (const key of KEY_STATS) {
      const value = entry[key];
      if (value === undefined) continue;
      const stat: Stat = /^p\d+$/.test(key) || key === 'med' ? 'p' : (key as Stat);
      if (!statAllowed(metric, stat)) {
        fail(`metric ${metric.name} has no ${key} (use ${allowedText(metric)})`, key);
      }
      const limit = readLimit(value, metric, stat, 's', key);
      if (typeof limit === 'string') fail(limit, key);
      thresholds.push({
        stat,
        ...(stat === 'p' ? { percentile: key === 'med' ? 50 : Number(key.slice(1)) } : {}),
        op: '<=',
        limit: limit as number,
        source: `${key}: ${value}`,
      });
    }
    for (const [t, expression] of (entry.thresholds ?? []).entries()) {
      const match = EXPRESSION.exec(expression);
      if (!match) {
        fail(
          `cannot read the threshold '${expression}' (expected e.g. p(95)<4s, med<=2s, max<50, rate<=30, count==0, value>=40)`,
          'thresholds',
          t,
        );
        continue;
      }
      const [, statText, percentile, opText, valueText] = match;
      const stat: Stat = percentile !== undefined || statText === 'med' ? 'p' : (statText as Stat);
      if (!statAllowed(metric, stat))
        fail(`metric ${metric.name} has no ${statText} (use ${allowedText(metric)})`, 'thresholds', t);
      const pct = percentile !== undefined ? Number(percentile) : statText === 'med' ? 50 : undefined;
      if (pct !== undefined && !(pct > 0 && pct <= 100))
        fail(`percentile ${pct} is not in (0, 100]`, 'thresholds', t);
      // k6 semantics: a bare number in an expression on a duration metric is milliseconds.
      const limit = readLimit(valueText!, metric, stat, 'ms', `threshold '${expression}'`);
      if (typeof limit === 'string') fail(limit, 'thresholds', t);
      thresholds.push({
        stat,
        ...(pct !== undefined ? { percentile: pct } : {}),
        op: (opText === '===' ? '==' : opText) as Op,
        limit: limit as number,
        source: expression.trim(),
      });
    }
    const mode = entry.mode ?? (metric.kind === 'distribution' ? metric.role : 'judged');
    if (thresholds.length === 0 && mode === 'judged') {
      fail(
        'no limit: give p50/p95 (or max, rate, count, value) or thresholds (only a report row may have none)',
      );
    }
    const key = `${metric.name} ${JSON.stringify(Object.entries(scope).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    const previous = seen.get(key);
    if (previous !== undefined) {
      const line = lineOf(['budgets', previous]);
      fail(
        `repeats budgets[${previous}]${line === undefined ? '' : ` (line ${line})`}: same metric and scope; merge them into one entry`,
      );
    }
    seen.set(key, index);
    entries.push({
      index,
      metric,
      scope,
      thresholds,
      mode,
      require: entry.require ?? false,
      description: entry.description,
      line: at(),
    });
  }
  for (const key of data.per) {
    const known = entries.some((e) => e.metric.kind === 'distribution' && e.metric.labels.includes(key));
    if (!known) throw configError(file, lineOf(['per']), `per: no metric in this file has a label '${key}'`);
  }
  for (const [key, map] of Object.entries(data.aliases)) {
    const values = new Set(entries.flatMap((e) => (e.scope[key] === undefined ? [] : [e.scope[key]])));
    if (values.size === 0)
      throw configError(
        file,
        lineOf(['aliases', key]),
        `aliases: no entry in this file is scoped by '${key}'`,
      );
    for (const [from, to] of Object.entries(map)) {
      if (!values.has(to)) {
        throw configError(
          file,
          lineOf(['aliases', key, from]),
          `aliases.${key}.${from}: no entry has ${key} '${to}'${didYouMean(to, [...values])} (entries have: ${[...values].join(', ')})`,
        );
      }
      if (values.has(from))
        throw configError(
          file,
          lineOf(['aliases', key, from]),
          `aliases.${key}.${from}: '${from}' has entries of its own; an alias is for a value without any`,
        );
    }
  }
  return {
    name: data.name,
    description: data.description,
    baseline: data.baseline ?? data.name,
    per: data.per,
    aliases: data.aliases,
    entries,
    source,
    file,
  };
}

export function loadBudgetFile(file: string): BudgetSet {
  if (!existsSync(file)) throw configError(file, undefined, 'no such file');
  let text: string;
  try {
    text = readInputText(file, {
      maxBytes: MAX_CONFIG_FILE_BYTES,
      code: 'E_BUDGET_CONFIG',
      what: 'a budget file',
    });
  } catch (error) {
    if (error instanceof InputFileError) throw configError(file, undefined, error.reason);
    throw error;
  }
  return parsedOnce(text, file, file);
}

/**
 * Sets already parsed, by their text and name: a matrix child judges every cell against the same
 * files, and parsing their YAML again was ~12 ms of CPU a cell (0.36 s of `matrix --cells all`;
 * docs/performance.md, "The matrix's fixed costs per cell"). A set is shared, so it is frozen:
 * nothing judges by changing one (its metrics hold functions, so a copy each time cannot be made).
 */
const parsedSets = new LruMap<string, BudgetSet>(32);

function parsedOnce(text: string, file: string, source: string): BudgetSet {
  const key = `${file}\0${source}\0${text}`;
  let set = parsedSets.get(key);
  if (!set) {
    set = frozen(parseBudgetText(text, file, source));
    parsedSets.set(key, set);
  }
  return set;
}

/** `value` with every object and array in it frozen (functions left as they are). */
function frozen<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) frozen(inner);
  }
  return value;
}

/** A built-in set name (`native-speed`, `track-b`) or a budget file path. */
export function resolveBudgets(ref: string): BudgetSet {
  if (builtinBudgetNames().includes(ref)) {
    const file = `${BUDGET_DIR}${ref}.yaml`;
    return parsedOnce(readFileSync(file, 'utf8'), file, `built-in ${ref}`);
  }
  if (existsSync(ref)) return loadBudgetFile(ref);
  throw new FleetbenchError(
    'E_BUDGET_CONFIG',
    `unknown budget set '${ref}': not a built-in (${builtinBudgetNames().join(', ')}) and no such file${didYouMean(ref, builtinBudgetNames())}`,
    { exitCode: ExitCode.budgetMisconfigured },
  );
}
