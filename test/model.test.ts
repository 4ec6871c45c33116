/**
 * Learned models (docs/model.md): learned from a recorded real agent-orchestrator run (the
 * `learn` scenario through `--target ao`, test/fixtures/ao/learn.trace.jsonl.gz), checked against
 * what AO 0.2.0 does through Debian's gh 2.23, and its prediction checked against another recorded
 * real run of a cell it never saw (test/fixtures/ao/S4-T1-5.trace.jsonl.gz: a review burst).
 * test/fixtures/ao/README.md says how both were recorded.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyzeFile } from '../src/analyze/file.ts';
import { createLearnProgress, LEARN_PROGRESS_MIN_BYTES } from '../src/cli/progress.ts';
import { type FigureName, figureErrors, runFigures } from '../src/learn/figures.ts';
import { learnModel } from '../src/learn/learn.ts';
import {
  loadModelFile,
  type Model,
  modelJsonSchema,
  modelToYaml,
  parseModelText,
} from '../src/model/format.ts';
import { readTrace } from '../src/trace/reader.ts';
import { cli } from './helpers/cli.ts';
import { events, runRef } from './helpers/run.ts';
import { scratchDir } from './helpers/tmp.ts';

const LEARN = new URL('./fixtures/ao/learn.trace.jsonl.gz', import.meta.url).pathname;
/** A real Paperclip run (test/fixtures/paperclip/, recorded by `--target paperclip`). */
const PAPERCLIP = new URL('./fixtures/paperclip/chaos-c4.trace.jsonl.gz', import.meta.url).pathname;
const HELD_OUT = new URL('./fixtures/ao/S4-T1-5.trace.jsonl.gz', import.meta.url).pathname;
/** How the held-out fixture was recorded (test/fixtures/ao/README.md), less `target=ao`. */
const HELD_OUT_SETS = ['polling.interval=30s', 'duration=6m', 'markers.steady-start=2m', 'faults.0.at=2m30s'];
/** The same batch on a quiet machine: the learn run, and S2-T1-50 (50 sessions, 4x the learn run's largest). */
const LEARN_QUIET = new URL('./fixtures/ao/learn-quiet.trace.jsonl.gz', import.meta.url).pathname;
const S2_50_QUIET = new URL('./fixtures/ao/S2-T1-50-quiet.trace.jsonl.gz', import.meta.url).pathname;
/** 25 sessions at a 15 s interval on a busy machine (16 busy loops and other work: load 28.9 at its start). */
const S2_25_BUSY = new URL('./fixtures/ao/S2-T1-25-busy.trace.jsonl.gz', import.meta.url).pathname;
/** 5 sessions at a 10 s interval with S4's review burst, on a busy machine (16 busy loops: load 20.2 at its start). */
const S4_5_BUSY = new URL('./fixtures/ao/S4-T1-5-busy.trace.jsonl.gz', import.meta.url).pathname;
const S4_5_BUSY_SETS = [
  'polling.interval=10s',
  'duration=6m',
  'markers.steady-start=2m',
  'faults.0.at=2m30s',
  'github.limits.secondary=false',
];
const S2_25_BUSY_SETS = [
  'polling.interval=15s',
  'duration=5m',
  'markers.steady-start=2m',
  'github.limits.secondary=false',
];
const dir = scratchDir('fleetbench-model-');

let learnedQuiet: Promise<Model> | undefined;
/** The model of the quiet learn run (test/fixtures/ao/README.md). */
const quietModel = () => (learnedQuiet ??= learnModel([LEARN_QUIET]));

let learned: Model | undefined;
async function model(): Promise<{ model: Model; file: string }> {
  learned ??= await learnModel([LEARN]);
  const file = join(dir, 'model.yaml');
  writeFileSync(file, modelToYaml(learned));
  return { model: learned, file };
}

/** The figures a model is for: what the control plane costs (docs/calibration.md). */
const COST_FIGURES: FigureName[] = [
  'calls/session/cycle',
  'core points/h',
  'GraphQL points/h',
  'calls by operation',
  'final states',
];

/** A cell replayed on a model file, against a recorded real run of it: each figure's error in %. */
async function predictionErrors(modelFile: string, realTrace: string, cell: string, sets: string[]) {
  const real = runFigures((await analyzeFile(realTrace, { threads: 1 })).analysis);
  const { analysis } = await runRef(cell, [
    ...sets,
    'polling.strategy=learned',
    `polling.model=${modelFile}`,
  ]);
  return figureErrors(runFigures(analysis), real);
}

function expectWithin(errors: Record<string, number | null>, figures: FigureName[], pct: number): void {
  for (const figure of figures)
    expect(Math.abs(errors[figure]!), `${figure}: ${JSON.stringify(errors)}`).toBeLessThanOrEqual(pct);
}

type BusyFigures = {
  nonAgent: number;
  graphql: number;
  overruns: number;
  skipped: number;
  cycleP50: number;
  cycleP95: number;
};

/**
 * A busy real run (test/fixtures/ao/README.md) replayed from the quiet learn run's model, told the
 * load its `ao.started` records and not told it: each replay's figures and their errors against
 * the real run's. Holds what every busy fixture must: the load was high, the real run skipped
 * ticks, and told the load the replay skips them too, its non-agent calls and GraphQL points
 * within 20 %.
 */
async function busyReplay(fixture: string, cell: string, sets: string[]) {
  const file = join(dir, 'model-quiet.yaml');
  writeFileSync(file, modelToYaml(await quietModel()));
  const real = await analyzeFile(fixture, { threads: 1 });
  const { records } = await readTrace(fixture);
  const started = events(records, 'ao.started')[0]!;
  const load = (started.data as { machine: { loadavg: number[] } }).machine.loadavg[0]!;
  expect(load).toBeGreaterThan(15);
  const figures = (a: typeof real.analysis): BusyFigures => ({
    nonAgent:
      a.api.totals.calls - ((a.api.counts.bySource.agent as { calls: number } | undefined)?.calls ?? 0),
    graphql: a.api.projection.byResource.graphql?.pointsPerHour ?? 0,
    overruns: a.controlPlane.pollCycles?.overruns ?? 0,
    skipped: a.controlPlane.pollCycles?.skipped ?? 0,
    cycleP50: a.controlPlane.pollCycles?.durationMs?.p50 ?? 0,
    cycleP95: a.controlPlane.pollCycles?.durationMs?.p95 ?? 0,
  });
  const want = figures(real.analysis);
  // The real run: its cycles outlasted the interval and AO skipped ticks.
  expect(want.skipped).toBeGreaterThan(2);
  const replay = async (host: string[]) => {
    const got = figures(
      (await runRef(cell, [...sets, ...host, 'polling.strategy=learned', `polling.model=${file}`])).analysis,
    );
    const error = (k: keyof BusyFigures) => Math.abs(got[k] / want[k] - 1);
    return {
      ...got,
      errors: { nonAgent: error('nonAgent'), cycleP50: error('cycleP50'), cycleP95: error('cycleP95') },
    };
  };
  const busy = await replay([`host.load=${load}`]);
  const graphqlError = Math.abs(busy.graphql / want.graphql - 1);
  expect(busy.errors.nonAgent, JSON.stringify({ busy, want })).toBeLessThanOrEqual(0.2);
  expect(graphqlError, JSON.stringify({ busy, want })).toBeLessThanOrEqual(0.2);
  expect(busy.skipped).toBeGreaterThan(2);
  return { busy, quiet: await replay([]), want };
}

describe('model learn, from a real agent-orchestrator run', () => {
  it("learns AO 0.2.0's poll through gh 2.23: 4 calls per open PR, PR detection, its spawn path, one loop per project", async () => {
    const { model: m } = await model();
    expect(m.provenance.traces[0]).toMatchObject({
      target: 'ao',
      controlPlane: 'agent-orchestrator 0.2.0, gh 2.23.0',
      scenario: 'learn',
      clock: 'real',
    });
    expect(m.provenance.traces[0]!.load?.cpus).toBeGreaterThan(0);
    expect(m.loop).toMatchObject({ scope: 'project', parallel: 0 });
    const cycle = (from: string, to: string) =>
      Object.fromEntries(
        m.sessions.cycles
          .find((c) => c.from === from && c.to === to)!
          .calls.map((c) => [c.operation, c.mean]),
      );
    // An open PR: pr view state twice (checks refused by gh 2.23), the review threads, the inline comments.
    expect(cycle('pr_open', 'pr_open')).toEqual({
      PullRequestByNumber: 2,
      'query repository.pullRequest.reviewThreads': 1,
      'GET /repos/{owner}/{repo}/pulls/{pull_number}/comments': 1,
    });
    // No PR yet: gh pr list --head; the cycle that finds it makes the open PR's calls too.
    expect(cycle('working', 'working')).toEqual({ PullRequestList: 1 });
    expect(cycle('working', 'pr_open')).toMatchObject({ PullRequestList: 1, PullRequestByNumber: 2 });
    // The tracker reads the issue twice when AO spawns a session.
    expect(m.sessions.spawn.calls).toEqual([{ operation: 'IssueByNumber', mean: 2 }]);
    expect(m.operations['GET /repos/{owner}/{repo}/pulls/{pull_number}/comments']).toMatchObject({
      protocol: 'rest',
      resource: 'core',
      points: 1,
    });
    expect(m.operations.PullRequestByNumber!.op).toBe('PullRequestByNumber');
    expect(m.operations['GET /repos/{owner}/{repo}/pulls/{pull_number}/comments']!.op).toBeUndefined();
  });

  it('learns what moves a session and when: a PR is found at the first cycle after it opens', async () => {
    const { model: m } = await model();
    const rule = (from: string, to: string) =>
      m.sessions.transitions.find((t) => t.from === from && t.to === to);
    expect(rule('working', 'pr_open')).toMatchObject({
      on: 'pr-opened',
      afterCycles: { '1': expect.any(Number) },
    });
    expect(rule('spawning', 'working')).toMatchObject({ on: 'created' });
    // The review burst: AO tells the agent at its next cycle; the agent reads once and replies to each comment.
    expect(m.sessions.review).toMatchObject({
      toldAfterCycles: { '1': expect.any(Number) },
      perReaction: [{ operation: 'agent-read-comments', mean: 1 }],
      perComment: [{ operation: 'reply-review-comment', mean: 1 }],
    });
    expect(m.restartOutageMs.hard?.samples).toBe(1);
  });

  it("fits the cycle's growth with its calls: each gh started in turn, its CPU shared on the cores with the machine's other load", async () => {
    const { model: m } = await model();
    const quiet = await quietModel();
    // The machine each run started on (ao.started): 2 cores, at load 12.5 and at 0.9.
    expect(m.cycleTime).toMatchObject({ cores: 2, load: 12.53 });
    expect(quiet.cycleTime).toMatchObject({ cores: 2, load: 0.87 });
    // The same gh on the same machine: with the load taken out, its CPU per call learned at load
    // 12.5 is within a quarter of the one learned at 0.9 (without the load, 506 ms against 177).
    for (const x of [m, quiet]) {
      expect(x.cycleTime.cpuMsPerCall).toBeGreaterThan(50);
      expect(x.cycleTime.cpuMsPerCall).toBeLessThan(1_000);
    }
    expect(m.cycleTime.cpuMsPerCall / quiet.cycleTime.cpuMsPerCall).toBeGreaterThan(0.75);
    expect(m.cycleTime.cpuMsPerCall / quiet.cycleTime.cpuMsPerCall).toBeLessThan(1.33);
    // Cycles vary with the machine's other load: the model says by how much.
    expect(m.cycleTime.cycleSpread).toBeGreaterThanOrEqual(1);
    // Every recorded cycle simulated with its own calls: within a sixth of its length on average
    // on the quiet machine, a third on the loaded one (whose load rose from 12.5 to 16.9 as it ran).
    expect(quiet.fit.cycleMeanErrorPct!).toBeLessThan(16);
    expect(m.fit.cycleMeanErrorPct!).toBeLessThan(33);
    expect(m.fit.calls.errorPct!).toBe(0);
    expect(m.fit.unmodelledCalls).toBe(0);
  });

  it('predicts a real run of a cell it never saw (S4-T1-5, a review burst) within 15 % per figure', async () => {
    const { file } = await model();
    const errors = await predictionErrors(file, HELD_OUT, 'S4-T1-5', HELD_OUT_SETS);
    expectWithin(errors, COST_FIGURES, 15);
  });

  it("predicts 50 sessions from a run of at most 12 on a quiet machine: cost and cycle length within 15 %, the busiest second's shape", async () => {
    const file = join(dir, 'model-quiet.yaml');
    writeFileSync(file, modelToYaml(await quietModel()));
    const errors = await predictionErrors(file, S2_50_QUIET, 'S2-T1-50', [
      'polling.interval=30s',
      'duration=5m',
      'markers.steady-start=2m',
    ]);
    expectWithin(errors, [...COST_FIGURES, 'cycle p50', 'cycle p95'], 15);
    // The busiest second is a maximum of a few dozen calls (22 in the real run): the launches,
    // CPU on the cores the gh processes share, spread them as the real run's were; requests
    // launched free of the cores' load bunch (+77 %, the model before). docs/calibration.md says
    // why this figure is not held to 15 %.
    expectWithin(errors, ['busiest second'], 35);
  });

  it('told the load of a real run on a busy machine, the quiet model predicts its calls and GraphQL points within 20 %: cycles that overrun, ticks skipped', async () => {
    const { quiet } = await busyReplay(S2_25_BUSY, 'S2-T1-25', S2_25_BUSY_SETS);
    // On the machine it was learned on (quiet), the same replay skips nothing and misses by far.
    expect(quiet.skipped).toBe(0);
    expect(quiet.errors.nonAgent).toBeGreaterThan(0.5);
  });

  it('told the load of a busy real run with a review burst (load 20, 9 of 25 cycles overran), the quiet model predicts its overruns, calls, GraphQL points and cycle length within 20 %', async () => {
    const { busy, quiet, want } = await busyReplay(S4_5_BUSY, 'S4-T1-5', S4_5_BUSY_SETS);
    expect(want.overruns).toBeGreaterThan(5);
    expect(busy.overruns).toBeGreaterThan(5);
    for (const figure of ['cycleP50', 'cycleP95'] as const)
      expect(busy.errors[figure], JSON.stringify({ busy, want })).toBeLessThanOrEqual(0.2);
    // Learned quiet and left quiet, the same replay overruns nothing and misses the calls by a third.
    expect(quiet.overruns).toBe(0);
    expect(quiet.errors.nonAgent).toBeGreaterThan(0.3);
  });

  it('replays deterministically: the same seed and model give a byte-identical trace', async () => {
    const { file } = await model();
    const sets = ['duration=3m', 'polling.strategy=learned', `polling.model=${file}`];
    const a = await runRef('S3-T2-10', sets, join(dir, 'a'));
    const b = await runRef('S3-T2-10', sets, join(dir, 'b'));
    const body = (p: string) => readFileSync(p, 'utf8').split('\n').slice(1).join('\n');
    expect(body(a.outcome.tracePath)).toBe(body(b.outcome.tracePath));
    expect(a.analysis.api.totals.calls).toBeGreaterThan(50);
  });
});

describe('what the learner reads', () => {
  it('a review burst marked only by its fault.start (no world.review.posted) is read: the reviewed sessions are those whose agents were told', async () => {
    // The quiet learn run without its world.review.posted events (the footer's counts kept true).
    const lines = gunzipSync(readFileSync(LEARN_QUIET)).toString('utf8').split('\n').filter(Boolean);
    const kept: string[] = [];
    let dropped = 0;
    for (const line of lines) {
      const r = JSON.parse(line);
      if (r.kind === 'event' && r.name === 'world.review.posted') dropped++;
      else if (r.kind === 'end')
        kept.push(JSON.stringify({ ...r, counts: { ...r.counts, event: r.counts.event - dropped } }));
      else kept.push(line);
    }
    expect(dropped).toBe(6);
    const file = join(dir, 'no-posted.trace.jsonl');
    writeFileSync(file, `${kept.join('\n')}\n`);
    const m = await learnModel([file]);
    // As from the events: the agent reads once, then replies to each comment; no agent call left out.
    expect(m.sessions.review).toMatchObject({
      samples: 6,
      toldAfterCycles: { '1': 6 },
      perReaction: [{ operation: 'agent-read-comments', mean: 1 }],
      perComment: [{ operation: 'reply-review-comment', mean: 1 }],
    });
    expect(m.fit.unmodelledCalls).toBe(0);
    expect(m.coverage?.events['review-posted']).toBe(6);
    expect(m.fit.notes.some((n) => n.includes('marked only by its fault.start'))).toBe(true);
    const withEvents = await quietModel();
    expect(m.sessions.review).toEqual(withEvents.sessions.review);
    expect(m.events).toEqual(withEvents.events);
  });

  it('a `created` rule of lag 0 (a naive run: spawned outside any cycle) is applied in the replay: no session stays spawning', async () => {
    const sets = ['duration=12m', 'polling.strategy=naive'];
    const source = await runRef('S3-T2-10', sets, join(dir, 'naive'));
    const m = await learnModel([source.outcome.tracePath]);
    const created = m.sessions.transitions.find((t) => t.from === 'spawning' && t.on === 'created');
    expect(created).toMatchObject({ to: 'working', afterCycles: { '0': 10 } });
    expect(created!.afterMs!.p50).toBeGreaterThan(0);
    const file = join(dir, 'naive.yaml');
    writeFileSync(file, modelToYaml(m));
    const replay = await runRef('S3-T2-10', [
      'duration=12m',
      'polling.strategy=learned',
      `polling.model=${file}`,
    ]);
    const finalStates = runFigures(replay.analysis).finalStates;
    expect(finalStates.spawning ?? 0, JSON.stringify(finalStates)).toBe(0);
    expect((finalStates.working ?? 0) + (finalStates.pr_open ?? 0)).toBe(10);
    expect(finalStates).toEqual(runFigures(source.analysis).finalStates);
  });
});

describe('a trace cut short or out of order', () => {
  const lines = () => gunzipSync(readFileSync(HELD_OUT)).toString('utf8').split('\n').filter(Boolean);
  const write = (name: string, body: string[]) => {
    const file = join(dir, name);
    writeFileSync(file, `${body.join('\n')}\n`);
    return file;
  };
  /** What a model says, without where its traces were (file, sha256) and the notes about reading them. */
  const said = (m: Model) => ({
    ...m,
    provenance: { ...m.provenance, traces: m.provenance.traces.map(({ file: _f, sha256: _s, ...t }) => t) },
    fit: { ...m.fit, notes: m.fit.notes.filter((n) => !n.includes('out of the order')) },
  });

  it('a shuffled trace gives the model of the same trace in order, with a note', async () => {
    const all = lines();
    const [header, footer] = [all[0]!, all.at(-1)!];
    const body = all.slice(1, -1);
    const sorted = await learnModel([write('in-order.jsonl', all)]);
    expect(sorted.fit.notes.some((n) => n.includes('out of the order'))).toBe(false);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (seed) => {
        // A seeded Fisher-Yates: fast-check shrinks the seed, not a list of 400 lines.
        const shuffled = [...body];
        let x = seed;
        for (let i = shuffled.length - 1; i > 0; i--) {
          x = (Math.imul(x, 1103515245) + 12345) >>> 0;
          const j = x % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
        }
        const m = await learnModel([write('shuffled.jsonl', [header, ...shuffled, footer])]);
        expect(m.fit.notes.some((n) => /records out of the order a trace is written in/.test(n))).toBe(true);
        expect(said(m)).toEqual(said(sorted));
      }),
      { numRuns: 12 },
    );
  });

  it('an interrupted run, or one with no footer (its last line cut in the middle), is learned from what it has, with a note', async () => {
    const all = lines();
    const footer = JSON.parse(all.at(-1)!);
    const interrupted = await learnModel([
      write('interrupted.jsonl', [...all.slice(0, -1), JSON.stringify({ ...footer, reason: 'interrupted' })]),
    ]);
    expect(interrupted.fit.notes).toContainEqual(
      expect.stringMatching(
        /the run was interrupted \(footer reason interrupted\) at \d+ s: learned from what it ran/,
      ),
    );
    const half = Math.floor(all.length / 2);
    const cut = write('cut.jsonl', all.slice(0, half));
    writeFileSync(cut, `${all.slice(0, half).join('\n')}\n${all[half]!.slice(0, 40)}`);
    const learned = await learnModel([cut]);
    expect(learned.fit.notes).toContainEqual(
      expect.stringContaining(
        `cut: no end footer after line ${half + 1} (its last line, cut in the middle, left out)`,
      ),
    );
    expect(learned.sessions.cycles.length).toBeGreaterThan(0);
    // The CLI prints the notes.
    const shown = await cli(['model', 'learn', cut, '-o', join(dir, 'cut.yaml')]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('cut: no end footer');
  });

  it('a bad line inside, or a footer before the end, is refused naming its line', async () => {
    const all = lines();
    const bad = write('bad.jsonl', [...all.slice(0, 10), '{"kind":"api","t":', ...all.slice(10)]);
    const refused = await cli(['model', 'learn', bad]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${bad}:11: malformed JSON`);
    const early = write('early-footer.jsonl', [all[0]!, all.at(-1)!, ...all.slice(1, -1)]);
    const footer = await cli(['model', 'learn', early]);
    expect(footer.code).toBe(2);
    expect(footer.stderr).toContain(`${early}:2: end footer before the end of the file`);
  });
});

describe('the model file and the CLI', () => {
  it('publishes a JSON Schema generated from the zod schema (docs/model.schema.json)', () => {
    const committed = JSON.parse(readFileSync(new URL('../docs/model.schema.json', import.meta.url), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(modelJsonSchema())));
  });

  it('model learn writes a file model show reads; the run names the model it replays', async () => {
    // Into a directory that does not exist yet, as `run --out` does.
    const out = join(dir, 'models', 'cli-model.yaml');
    const learn = await cli(['model', 'learn', LEARN, '-o', out]);
    expect(learn.code, learn.stderr).toBe(0);
    expect(learn.stdout).toContain('a session in pr_open: 4.00 calls a cycle');
    expect(loadModelFile(out).format).toBe('fleetbench-model/1');
    const show = await cli(['model', 'show', out]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('agent-orchestrator 0.2.0, gh 2.23.0: learned from learn');
    const run = await cli([
      'run',
      'S2-T1-5',
      ...['duration=2m', 'polling.strategy=learned', `polling.model=${out}`].flatMap((s) => ['--set', s]),
      '--out',
      join(dir, 'cli-run'),
    ]);
    expect(run.stderr).toContain('polling learned: agent-orchestrator 0.2.0, gh 2.23.0: learned from learn');
    expect(run.stdout).toContain('graphql');
  });

  it('the machine of a replay: host.load and host.cores are said on its header; host is refused where nothing models a client', async () => {
    const { file } = await model();
    const run = await cli([
      'run',
      'S2-T1-5',
      ...[
        'duration=1m',
        'polling.strategy=learned',
        `polling.model=${file}`,
        'host.load=18',
        'host.cores=4',
      ].flatMap((s) => ['--set', s]),
      '--no-budgets',
      '--out',
      join(dir, 'host-run'),
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      "polling learned: the client's machine: 4 cores at load 18 (learned on 2 cores at load 12.53",
    );
    const guarded = await cli(['run', 'S2-T1-5', '--set', 'host.load=3']);
    expect(guarded.code).toBe(2);
    expect(guarded.stderr).toContain("host is the machine of a modelled control plane's client");
    const both = await cli([
      'run',
      'S2-T1-5',
      ...[
        'polling.strategy=learned',
        `polling.model=${file}`,
        'host.cores=4',
        'polling.model-cores=8',
      ].flatMap((s) => ['--set', s]),
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('older spelling of host.cores');
    const absurd = await cli([
      'run',
      'S2-T1-5',
      '--set',
      'polling.strategy=ao-0.2',
      '--set',
      'host.load=1e9',
    ]);
    expect(absurd.code).toBe(2);
    expect(absurd.stderr).toContain('host.load');
  });

  it('model learn reports its progress as it reads a trace: a bar on a terminal for a long one, nothing in a pipe', async () => {
    const seen: Array<[number, number]> = [];
    await learnModel([LEARN_QUIET], { onProgress: (_file, read, total) => seen.push([read, total]) });
    const size = statSync(LEARN_QUIET).size;
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.at(-1)).toEqual([size, size]);
    const terminal = {
      text: '',
      isTTY: true,
      columns: 120,
      write(t: string) {
        this.text += t;
        return true;
      },
    };
    const pipe = {
      text: '',
      isTTY: false,
      write(t: string) {
        this.text += t;
        return true;
      },
    };
    const io = (stderr: typeof terminal | typeof pipe) =>
      ({ stderr, quiet: false }) as unknown as Parameters<typeof createLearnProgress>[0];
    for (const stream of [terminal, pipe]) {
      const bar = createLearnProgress(io(stream));
      // A long trace (past the bar's threshold), read in three steps.
      const total = LEARN_PROGRESS_MIN_BYTES * 4;
      for (const read of [total / 4, total / 2, total]) bar.read('long.jsonl', read, total);
      bar.stop();
    }
    expect(terminal.text).toContain('model learn long.jsonl');
    expect(terminal.text).toContain('100%');
    expect(pipe.text).toBe('');
    // A short trace shows no bar, even on a terminal.
    const short = { ...terminal, text: '' };
    const bar = createLearnProgress(io(short));
    bar.read('short.jsonl', 10, 100);
    bar.stop();
    expect(short.text).toBe('');
  });

  it('reads a model file bounded as it reads: /dev/zero is refused in seconds, naming the file', async () => {
    const started = performance.now();
    const run = await cli([
      'run',
      'S2-T1-5',
      '--set',
      'polling.strategy=learned',
      '--set',
      'polling.model=/dev/zero',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/\/dev\/zero: more than \d+ bytes: a model file is read whole/);
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  it('refuses a bad model with its file and line, and a learned strategy without a model', async () => {
    const { model: m } = await model();
    const text = modelToYaml(m).replace(/cpuMsPerCall: [\d.]+/, 'cpuMsPerCall: fast');
    const line = text.split('\n').findIndex((l) => l.includes('cpuMsPerCall: fast')) + 1;
    expect(() => parseModelText(text, 'bad.yaml')).toThrow(`bad.yaml:${line}: cycleTime.cpuMsPerCall`);
    expect(() => parseModelText('format: fleetbench-model/9\n', 'old.yaml')).toThrow(
      'old.yaml:1: format: expected fleetbench-model/1',
    );
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, text);
    const run = await cli([
      'run',
      'S2-T1-5',
      '--set',
      'polling.strategy=learned',
      '--set',
      `polling.model=${bad}`,
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`bad.yaml:${line}`);
    const none = await cli(['run', 'S2-T1-5', '--set', 'polling.strategy=learned']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('polling.model');
    const empty = join(dir, 'empty.jsonl');
    writeFileSync(
      empty,
      `${JSON.stringify({ kind: 'run', format: 'fleetbench-trace/1', runId: 'x', tool: { name: 't', version: '1' }, clock: 'virtual', seed: 1, scenario: { name: 'x', hash: null }, epochMs: 0, startedAt: '2026-01-01T00:00:00.000Z' })}\n${JSON.stringify({ kind: 'end', t: 0, reason: 'completed', counts: { api: 0, span: 0, event: 0, gauge: 0 } })}\n`,
    );
    const learn = await cli(['model', 'learn', empty]);
    expect(learn.code).toBe(2);
    expect(learn.stderr).toContain('nothing to learn');
  });
});

describe('speed profiles', () => {
  it('learns boot, load and first activity from a chaos run and replays them on another wave', async () => {
    // The reference's own codex chaos wave, learned; then a wider wave with the learned profile.
    const source = await runRef('chaos-codex-c4', [], join(dir, 'c4'));
    const m = await learnModel([source.outcome.tracePath]);
    const codex = m.speed!.adapters.codex!;
    // The codex profile it ran with (src/reference/providers.ts): load 2.1 s at 1 MB, contention 0.22.
    expect(codex.load!.p50).toBeGreaterThan(1_500);
    expect(codex.load!.p50).toBeLessThan(2_800);
    expect(codex.loadContention).toBeGreaterThan(0.1);
    expect(codex.loadContention).toBeLessThan(0.4);
    expect(codex.firstActivity.warm!.samples).toBeGreaterThan(10);
    const file = join(dir, 'speed.yaml');
    writeFileSync(file, modelToYaml(m));
    // A model without a speed profile is refused for control-plane.model.
    const { file: costOnly } = await model();
    const refused = await cli(['run', 'chaos-codex-c6', '--set', `control-plane.model=${costOnly}`]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('has none');
    // Slowed 3x, the learned profile shows in the replay's boots (it is what the replay draws from).
    const slow = {
      ...m,
      speed: {
        ...m.speed!,
        adapters: {
          codex: { ...codex, load: { ...codex.load!, p50: codex.load!.p50 * 3, p95: codex.load!.p95 * 3 } },
        },
      },
    };
    const slowFile = join(dir, 'slow.yaml');
    writeFileSync(slowFile, modelToYaml(slow as Model));
    const replay = await runRef('chaos-codex-c6', [`control-plane.model=${file}`], join(dir, 'c6'));
    const slowed = await runRef('chaos-codex-c6', [`control-plane.model=${slowFile}`], join(dir, 'c6-slow'));
    const warmBoot = (a: typeof replay.analysis) =>
      a.speed!.metrics.agent_boot.groups.find((g) => g.labels.start === 'warm')!.latency.p50!;
    expect(warmBoot(slowed.analysis)).toBeGreaterThan(1.5 * warmBoot(replay.analysis));
  });

  it("learns a real Paperclip run's speed and replays it in virtual time: first activity within 15 %", async () => {
    const m = await learnModel([PAPERCLIP]);
    // Speed only: Paperclip's trace has no poll cycles to learn a cost from, and says so.
    expect(m.fit.notes.some((n) => n.includes('its cost was not learned'))).toBe(true);
    const codex = m.speed!.adapters.codex_local!;
    // Its warm boots load the session themselves (no load span inside them).
    expect(codex.warmBootHoldsLoad).toBe(true);
    expect(codex.bootWarmProcess!.samples).toBeGreaterThan(100);
    expect(m.restartOutageMs.hard!.samples).toBeGreaterThan(0);
    const file = join(dir, 'paperclip.yaml');
    writeFileSync(file, modelToYaml(m));
    const real = (await analyzeFile(PAPERCLIP, { threads: 1 })).analysis;
    const replay = (await runRef('chaos-codex-c4', [`control-plane.model=${file}`], join(dir, 'pc')))
      .analysis;
    const p50 = (a: typeof real, metric: 'time_to_first_activity' | 'agent_boot', start: string) =>
      a.speed!.metrics[metric].groups.find((g) => g.labels.start === start)!.latency.p50!;
    for (const start of ['cold', 'warm']) {
      const error =
        p50(replay, 'time_to_first_activity', start) / p50(real, 'time_to_first_activity', start) - 1;
      expect(Math.abs(error), `time_to_first_activity ${start}: ${error}`).toBeLessThanOrEqual(0.15);
    }
    const coldBoot = p50(replay, 'agent_boot', 'cold') / p50(real, 'agent_boot', 'cold') - 1;
    expect(Math.abs(coldBoot)).toBeLessThanOrEqual(0.15);
  });
});
