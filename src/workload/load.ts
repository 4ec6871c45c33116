/**
 * Loading a scenario: YAML text → `--set` overrides → schema validation → resolved Scenario.
 * Errors name the file, the line when the YAML has one for that field, and the field path:
 * `my.yaml:7: sessions.count: expected a positive integer`.
 */
import { createHash } from 'node:crypto';
import { parse as parseYamlValue } from 'yaml';
import { didYouMean } from '../base/closest-names.ts';
import { parseDuration } from '../base/duration.ts';
import { FleetbenchError, InputFileError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_CONFIG_FILE_BYTES, SCENARIO_LIMITS } from '../base/limits.ts';
import { describeZodIssues, specificIssue } from '../base/validation.ts';
import { parseYamlInput, yamlLineOf } from '../base/yaml-input.ts';
import { resolveScenario, type Scenario, userScenarioSchema } from './scenario.ts';
import { countTopLevelEntries } from './scenario-bounds.ts';

export interface Override {
  path: string[];
  value: unknown;
  /** The flag the user typed when it was a shorthand (`--time-scale abc`): named in a refusal. */
  flag?: string;
}

/** `sessions.count=50` → { path: ['sessions','count'], value: 50 }. The value is read as YAML. */
export function parseOverride(text: string): Override {
  const eq = text.indexOf('=');
  if (eq <= 0)
    throw new FleetbenchError('E_USAGE', `--set expects key=value (e.g. sessions.count=50), got '${text}'`);
  const key = text.slice(0, eq).trim();
  const raw = text.slice(eq + 1);
  const path = key.split('.');
  // Keys are checked before they touch any object: only field names and list indexes, never
  // __proto__ and its kin (which would reach Object.prototype), and a first part the scenario has.
  for (const part of path) {
    if (!/^[A-Za-z0-9_-]+$/.test(part) || FORBIDDEN_KEYS.has(part))
      throw new FleetbenchError(
        'E_USAGE',
        `--set ${key}: '${part}' is not a scenario field name (letters, digits, - and _; list items by index)`,
        { hint: 'the scenario fields are documented in docs/scenarios.md' },
      );
  }
  if (!Object.hasOwn(userScenarioSchema.shape, path[0]!))
    throw new FleetbenchError(
      'E_USAGE',
      `--set ${key}: no scenario field '${path[0]}'${didYouMean(path[0]!, Object.keys(userScenarioSchema.shape))}`,
      {
        hint: `fields: ${Object.keys(userScenarioSchema.shape).join(', ')} (docs/scenarios.md)`,
      },
    );
  let value: unknown;
  try {
    value = parseYamlValue(raw);
  } catch {
    value = raw;
  }
  return { path, value: value ?? raw };
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'prototype', 'constructor']);

function applyOverride(target: Record<string, unknown>, override: Override, source: string): void {
  let node: unknown = target;
  const { path } = override;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!;
    const container = node as Record<string, unknown>;
    if (!Object.hasOwn(container, key) || container[key] === undefined)
      container[key] = /^\d+$/.test(path[i + 1]!) ? [] : {};
    node = container[key];
    if (typeof node !== 'object' || node === null) {
      throw new FleetbenchError(
        'E_USAGE',
        `--set ${path.join('.')}: ${path.slice(0, i + 1).join('.')} in ${source} is not an object`,
      );
    }
  }
  (node as Record<string, unknown>)[path[path.length - 1]!] = override.value;
}

/** The --set override a validation issue is about: its path, or an unknown key it added. */
function overrideAt(
  issue: { path: readonly PropertyKey[]; code: string; keys?: readonly string[] },
  overrides: readonly Override[],
): Override | undefined {
  const paths =
    issue.code === 'unrecognized_keys' && issue.keys
      ? issue.keys.map((k) => [...issue.path.map(String), k])
      : [issue.path.map(String)];
  const prefix = (a: readonly string[], b: readonly string[]) => a.every((x, i) => b[i] === x);
  // The last one wins, as when they were applied (a cell's own overrides come first).
  return overrides.findLast((o) => paths.some((p) => prefix(p, o.path) || prefix(o.path, p)));
}

/** Validates a raw scenario object. `file` names it in errors; `lineOf` maps a field path to a line. */
export function validateScenario(
  raw: unknown,
  file: string,
  lineOf: (path: readonly PropertyKey[]) => number | undefined = () => undefined,
  overrides: readonly Override[] = [],
): Scenario {
  const parsed = userScenarioSchema.safeParse(raw);
  if (!parsed.success) {
    // Inside a union (`target`), the issue of the branch the value was meant for, and its line.
    const issue = specificIssue(parsed.error.issues[0]!);
    const more = parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    // A value that came from --set is the flag's fault, not the scenario file's.
    const culprit = overrideAt(issue, overrides);
    if (culprit) {
      throw new FleetbenchError(
        'E_USAGE',
        `${culprit.flag ?? `--set ${culprit.path.join('.')}=${typeof culprit.value === 'string' ? culprit.value : JSON.stringify(culprit.value)}`}: ${describeZodIssues([issue], 1, userScenarioSchema)[0]!.replace(`${issue.path.join('.')}: `, '')}${more} (scenario ${file})`,
        { hint: 'the scenario fields are documented in docs/scenarios.md' },
      );
    }
    throw new InputFileError(
      'E_SCENARIO',
      file,
      lineOf(issue.path),
      `${describeZodIssues([issue], 1, userScenarioSchema)[0]}${more}`,
      {
        hint: 'the scenario format is documented in docs/scenarios.md',
      },
    );
  }
  return resolveScenario(parsed.data, { file, lineOf });
}

/** Parses scenario YAML text (already read) with overrides. */
export function parseScenarioText(text: string, file: string, overrides: Override[] = []): Scenario {
  refuseLongLists(text, file, overrides);
  const { doc, lineCounter, error, value } = parseYamlInput(text);
  if (error) throw new InputFileError('E_SCENARIO', file, error.line, `YAML: ${error.message}`);
  const raw = value;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InputFileError(
      'E_SCENARIO',
      file,
      undefined,
      'expected a YAML mapping (name:, sessions:, ...)',
    );
  }
  for (const override of overrides) applyOverride(raw as Record<string, unknown>, override, file);
  dropMarkerCutOff(raw as Record<string, unknown>, overrides);
  const lineOf = yamlLineOf(doc, lineCounter);
  return validateScenario(raw, file, lineOf, overrides);
}

/**
 * A scenario's own steady marker that a `--set duration=…` cut the run short of (S2's 3m in
 * `S2-T1-5 --set duration=2m`) is dropped: the shortened run has no marker, and is judged from the
 * window every session polled in (docs/analysis.md#the-track-b-scorecard). A marker given or
 * kept at or after the end otherwise is refused (scenario-bounds.ts).
 */
function dropMarkerCutOff(raw: Record<string, unknown>, overrides: readonly Override[]): void {
  if (!overrides.some((o) => o.path.length === 1 && o.path[0] === 'duration')) return;
  if (overrides.some((o) => o.path[0] === 'markers')) return;
  const ms = (value: unknown) =>
    typeof value === 'string' || typeof value === 'number' ? parseDuration(value) : undefined;
  const markers = raw.markers as Record<string, unknown> | undefined;
  const duration = ms(raw.duration);
  const steady = ms(markers?.['steady-start']);
  if (markers && duration !== undefined && steady !== undefined && steady >= duration)
    delete markers['steady-start'];
}

/**
 * Executors and faults past their bound, counted in the text before the YAML is parsed (a
 * parse of megabytes takes seconds): refused with the message the full check gives. A list a
 * --set replaces is left to that check.
 */
function refuseLongLists(text: string, file: string, overrides: readonly Override[]): void {
  const lists = [
    { key: 'executors', limit: SCENARIO_LIMITS.maxExecutors, why: ': each is a loop of its own' },
    { key: 'faults', limit: SCENARIO_LIMITS.maxFaults, why: '' },
  ];
  for (const { key, limit, why } of lists) {
    // A --set may replace the list: the parsed scenario is checked then.
    if (overrides.some((o) => o.path[0] === key)) continue;
    const found = countTopLevelEntries(text, key);
    if (found !== undefined && found.count > limit)
      throw new InputFileError(
        'E_SCENARIO',
        file,
        found.line,
        `${key}: expected at most ${limit} ${key}, got ${found.count}${why} (docs/limits.md)`,
        { hint: 'the scenario format is documented in docs/scenarios.md' },
      );
  }
}

export function loadScenarioFile(file: string, overrides: Override[] = []): Scenario {
  const text = readInputText(file, {
    maxBytes: MAX_CONFIG_FILE_BYTES,
    code: 'E_SCENARIO',
    what: 'a scenario',
  });
  return parseScenarioText(text, file, overrides);
}

/** sha256 of the resolved scenario (stable key order), for the trace header. */
export function scenarioHash(scenario: Scenario): string {
  return createHash('sha256').update(stableStringify(scenario)).digest('hex');
}

export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
