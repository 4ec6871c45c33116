/**
 * A scenario's numbers checked against each other and against what one machine can run
 * (SCENARIO_LIMITS, docs/limits.md): a run of no length, a poll loop with no interval, a billion
 * sessions or a fault ten hours into a two-minute run is refused up front, naming the field,
 * instead of looping, filling the disk or passing silently.
 */
import type { z } from 'zod';
import { formatDuration } from '../base/duration.ts';
import { SCENARIO_LIMITS } from '../base/limits.ts';
import { parseTarget, targetInfo } from '../contract/target-ref.ts';

type Issue = { path: PropertyKey[]; message: string };

/** The parsed scenario fields the bounds read (durations in ms, as the schema produces them). */
export interface BoundedScenario {
  target?: string | { kind?: string };
  duration: number;
  sessions: { count?: number };
  topology: { repos?: number };
  polling: { interval: number; concurrency: number };
  dashboard: { refresh: number };
  markers: { 'steady-start'?: number };
  provider?: { faults: Array<{ kind: string; fromMs?: number; untilMs?: number }> };
  executors: Array<Record<string, unknown> & { type: string; at?: number }>;
  faults: Array<Record<string, unknown> & { type: string; at?: number }>;
  turnover?: { registered: number; awake: number; 'target-rps': number; steady?: number };
}

const L = SCENARIO_LIMITS;

/** The target kind's own bound on sessions (a real system on one machine), if it has one. */
function targetSessionBound(target: string | { kind?: string } | undefined) {
  if (target === undefined) return undefined;
  // The inline form of a command target: `target: {kind: command, …}`.
  const text = typeof target === 'string' ? target : 'command';
  try {
    return targetInfo(parseTarget(text)).maxSessions;
  } catch {
    return undefined; // a target that names no kind is refused by name when the scenario resolves
  }
}
const ONE_MACHINE = 'what one fleetbench process runs; split the load over several runs (docs/limits.md)';

export function scenarioBoundIssues(s: BoundedScenario): Issue[] {
  const issues: Issue[] = [];
  const add = (path: PropertyKey[], message: string) => issues.push({ path, message });
  const duration = s.duration;

  if (duration <= 0) add(['duration'], 'expected a run longer than 0 (e.g. 2m)');
  else if (duration > L.maxDurationMs)
    add(['duration'], `expected at most ${formatDuration(L.maxDurationMs)} (30 days: docs/limits.md)`);

  const count = s.sessions.count;
  if (count !== undefined && count > L.maxSessions)
    add(['sessions', 'count'], `expected at most ${L.maxSessions} sessions, ${ONE_MACHINE}`);
  const bound = targetSessionBound(s.target);
  if (bound) {
    const message = `expected at most ${bound.limit} sessions ${bound.why}`;
    if (count !== undefined && count > bound.limit) add(['sessions', 'count'], message);
    s.executors.forEach((e, i) => {
      for (const key of ['count', 'max-sessions', 'concurrency'])
        if (typeof e[key] === 'number' && (e[key] as number) > bound.limit)
          add(['executors', i, key], message);
    });
  }
  if (s.executors.length > L.maxExecutors)
    add(
      ['executors'],
      `expected at most ${L.maxExecutors} executors, got ${s.executors.length}: each is a loop of its own (docs/limits.md)`,
    );
  if (s.faults.length > L.maxFaults)
    add(['faults'], `expected at most ${L.maxFaults} faults, got ${s.faults.length} (docs/limits.md)`);
  // Every executor starts its own sessions: together they are what one process simulates.
  let starts = 0;
  for (const e of s.executors) {
    const own =
      e.type === 'chaos-wave' ? e.concurrency : e.type === 'arrival-rate' ? e['max-sessions'] : e.count;
    if (e.type !== 'turnover') starts += typeof own === 'number' ? own : (count ?? 0);
  }
  if (starts > L.maxSessions && s.executors.length > 1)
    add(
      ['executors'],
      `the executors start ${starts} sessions together: expected at most ${L.maxSessions}, ${ONE_MACHINE}`,
    );
  if (s.topology.repos !== undefined && s.topology.repos > L.maxRepos)
    add(['topology', 'repos'], `expected at most ${L.maxRepos} repos (docs/limits.md)`);

  const interval = (path: PropertyKey[], ms: number) => {
    if (ms < L.minIntervalMs)
      add(
        path,
        `expected at least ${L.minIntervalMs}ms: a shorter loop never lets time pass (docs/limits.md)`,
      );
  };
  interval(['polling', 'interval'], s.polling.interval);
  interval(['dashboard', 'refresh'], s.dashboard.refresh);
  if (s.polling.concurrency > L.maxSessions)
    add(['polling', 'concurrency'], `expected at most ${L.maxSessions} (docs/limits.md)`);

  // Something scheduled at a run time must happen within the run.
  const within = (path: PropertyKey[], at: number | undefined, what: string) => {
    if (at !== undefined && duration > 0 && at > duration)
      add(
        path,
        `${what} at ${formatDuration(at)} is after the run's end (duration ${formatDuration(duration)})`,
      );
  };
  // A steady marker at or after the end would leave the run's burn without the window it was
  // meant to be judged from, as a fault that never fires would leave it untested. (A marker that
  // leaves less than a poll interval is judged from another window: docs/analysis.md#the-track-b-scorecard.)
  const steady = s.markers['steady-start'];
  if (steady !== undefined && duration > 0 && steady >= duration)
    add(
      ['markers', 'steady-start'],
      `the steady.start marker at ${formatDuration(steady)} is at or after the run's end (duration ${formatDuration(duration)}): the run would have no steady window; run at least ${formatDuration(steady + s.polling.interval)}, set the marker earlier, or drop it (--set markers={})`,
    );
  // A provider fault window that can never open within the run would let it pass as if it had
  // faced the fault: refused like a scenario fault after the end.
  const when = (ms: number) => (ms > L.maxDurationMs ? `${ms} ms` : formatDuration(ms));
  s.provider?.faults.forEach((fault, i) => {
    const from = fault.fromMs ?? 0;
    if (duration > 0 && from >= duration)
      add(
        ['provider', 'faults', i, 'fromMs'],
        `the ${fault.kind} fault's window opens at ${when(from)}, at or after the run's end (duration ${formatDuration(duration)}): it can never fire`,
      );
    else if (fault.untilMs !== undefined && fault.untilMs <= from)
      add(
        ['provider', 'faults', i, 'untilMs'],
        `the ${fault.kind} fault's window closes at ${when(fault.untilMs)}, ${fault.untilMs === from ? 'as' : 'before'} it opens (${when(from)}): it can never fire`,
      );
  });
  s.faults.forEach((fault, i) => {
    within(['faults', i, 'at'], fault.at, `the ${fault.type} fault`);
    const long = fault.duration;
    if (typeof long === 'number' && long > L.maxDurationMs)
      add(['faults', i, 'duration'], `expected at most ${formatDuration(L.maxDurationMs)}`);
  });
  s.executors.forEach((executor, i) => {
    within(['executors', i, 'at'], executor.at, `the ${executor.type} executor`);
    for (const field of ['count', 'concurrency', 'max-sessions'] as const) {
      const n = executor[field];
      if (typeof n === 'number' && n > L.maxSessions)
        add(['executors', i, field], `expected at most ${L.maxSessions}, ${ONE_MACHINE}`);
    }
    const spawnRate = executor['spawn-rate'];
    if (typeof spawnRate === 'number' && spawnRate > L.maxRate)
      add(['executors', i, 'spawn-rate'], `expected at most ${L.maxRate} a second (docs/limits.md)`);
    const stages = executor.stages;
    if (Array.isArray(stages) && stages.length > L.maxStages)
      add(['executors', i, 'stages'], `expected at most ${L.maxStages} stages (docs/limits.md)`);
    if (Array.isArray(stages))
      stages.forEach((stage: { rate?: number; duration?: number }, j) => {
        if ((stage.rate ?? 0) > L.maxRate)
          add(
            ['executors', i, 'stages', j, 'rate'],
            `expected at most ${L.maxRate} a minute (docs/limits.md)`,
          );
      });
  });

  const t = s.turnover;
  if (t) {
    if (t.registered > L.maxActors)
      add(['turnover', 'registered'], `expected at most ${L.maxActors} sessions, ${ONE_MACHINE}`);
    if (t['target-rps'] > L.maxRate)
      add(['turnover', 'target-rps'], `expected at most ${L.maxRate} swaps a second (docs/limits.md)`);
    if (t.steady !== undefined && t.steady > L.maxDurationMs)
      add(['turnover', 'steady'], `expected at most ${formatDuration(L.maxDurationMs)}`);
  }
  return issues;
}

/** Adds the bound issues to a zod refinement context. */
export function refineScenarioBounds(s: BoundedScenario, ctx: z.core.$RefinementCtx): void {
  for (const issue of scenarioBoundIssues(s))
    ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
}

/**
 * The entries of a top-level sequence (`executors:`, `faults:`) counted in the YAML text itself,
 * before it is parsed: parsing a 2.7 MB scenario of 30,000 executors took 15 s and 380 MB, all
 * to refuse it for having more than 100. Block style counts the `- ` lines at the first entry's
 * indentation (deeper lists, block scalars are more indented), flow style the commas at the
 * sequence's own level; an alias, a tag or anything else unusual gives undefined, and the full
 * check after parsing decides. It never counts more entries than there are, so it refuses only
 * what the full check would. Returns the count and the line where the list starts.
 */
export function countTopLevelEntries(text: string, key: string): { count: number; line: number } | undefined {
  const lines = text.split('\n', 200_000);
  const keyLine = lines.findIndex((l) => l.startsWith(`${key}:`));
  if (keyLine < 0) return undefined;
  const rest = lines[keyLine]!.slice(key.length + 1)
    .replace(/\s+#.*$/, '')
    .trim();
  if (rest.startsWith('[')) {
    const count = countFlowEntries(lines.slice(keyLine).join('\n'), key.length + 1);
    return count === undefined ? undefined : { count, line: keyLine + 1 };
  }
  if (rest !== '') return undefined;
  let indent: number | undefined;
  let count = 0;
  let first = keyLine;
  for (let i = keyLine + 1; i < lines.length; i++) {
    const l = lines[i]!;
    const trimmed = l.trimStart();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const at = l.length - trimmed.length;
    // The sequence ends at the next top-level key (an entry may sit at column 0 too).
    if (at === 0 && !trimmed.startsWith('- ') && trimmed !== '-') break;
    if (!trimmed.startsWith('- ') && trimmed !== '-') continue;
    if (indent === undefined) {
      indent = at;
      first = i;
    }
    if (at === indent) count++;
    else if (at < indent) break;
  }
  // The line the parsed check names: where the list's value starts.
  return { count, line: first + 1 };
}

/**
 * Entries of the flow sequence starting at `from` (its `[`): the stretches between commas at its
 * own level that hold something (a trailing comma adds none).
 */
function countFlowEntries(text: string, from: number): number | undefined {
  let depth = 0;
  let count = 0;
  let quote: string | undefined;
  let filled = false;
  for (let i = text.indexOf('[', from); i < text.length; i++) {
    const c = text[i]!;
    if (quote !== undefined) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '#' && /\s/.test(text[i - 1] ?? ' ')) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end;
      continue;
    }
    if (depth === 1 && (c === ',' || c === ']')) {
      if (filled) count++;
      filled = false;
      if (c === ']') return count;
      continue;
    }
    if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
    if (c === '"' || c === "'") quote = c;
    if (depth > 1 || (depth === 1 && c !== '[' && !/\s/.test(c))) filled = true;
  }
  return undefined;
}
