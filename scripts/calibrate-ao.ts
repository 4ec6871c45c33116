/**
 * Calibration against the real agent-orchestrator (docs/calibration.md), held out: one real run of
 * the `learn` scenario teaches a model (`fleetbench model learn`); real runs of other cells, which
 * the model never saw, are then predicted by it (`polling.strategy: learned`) and by the
 * hand-written `ao-0.2` strategy, in virtual time, with the same interval, duration, seed and
 * steady-state marker. Prints each cell's figures and every figure's error against the real run;
 * writes everything under --out (the model, the runs, calibration.md).
 *
 *   npm run calibrate                                   # the learn run + 6 held-out cells: ~40 min
 *   npm run calibrate -- --cells S2-T1-10,S4-T1-5       # fewer cells
 *   npm run calibrate -- --reuse --out DIR              # real runs already in DIR: models only (seconds)
 *
 * The real runs run one after another (a batch: they see similar load), and the load average is
 * written beside each: it moves AO's cycle durations, not its calls (docs/calibration.md).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { analyzeFile } from '../src/analyze/file.ts';
import { FIGURES, type FigureName, figureErrors, type RunFigures, runFigures } from '../src/learn/figures.ts';
import { learnModel } from '../src/learn/learn.ts';
import { modelToYaml } from '../src/model/format.ts';
import { executeRun } from '../src/run/pipeline.ts';
import { planRun } from '../src/run/plan.ts';
import { detectGh } from '../src/targets/ao/gh.ts';
import { resolveAoPackages } from '../src/targets/ao/packages.ts';

/** The held-out cells, with what makes each fit a few minutes: the event moved into the run. */
export const HELD_OUT: Record<string, string[]> = {
  'S2-T1-10': [],
  'S2-T2-10': [],
  'S3-T1-10': [],
  'S4-T1-5': ['duration=6m', 'faults.0.at=2m30s'],
  'S5-T1-5': ['duration=6m', 'faults.0.at=3m'],
  'S2-T1-50': [],
};

const { values } = parseArgs({
  options: {
    cells: { type: 'string', default: Object.keys(HELD_OUT).join(',') },
    learn: { type: 'string', default: 'learn' },
    interval: { type: 'string', default: '30s' },
    duration: { type: 'string', default: '5m' },
    steady: { type: 'string', default: '2m' },
    out: { type: 'string', default: join('fleetbench-out', 'calibration') },
    reuse: { type: 'boolean', default: false },
    within: { type: 'string', default: '15' },
  },
});

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** A run of a cell (or named scenario) with overrides; a real one is reused from disk with --reuse. */
async function runOnce(
  ref: string,
  sets: string[],
  outDir: string,
  real = false,
): Promise<{ trace: string; load: string }> {
  const trace = join(outDir, 'trace.jsonl');
  const loadFile = join(outDir, 'load.txt');
  if (real && values.reuse) {
    if (!existsSync(trace))
      throw new Error(`--reuse: no real run at ${trace}; run without --reuse to make it`);
    console.error(`reusing ${trace}`);
  } else {
    const plan = planRun(ref, sets, outDir);
    mkdirSync(outDir, { recursive: true });
    const before = load();
    await executeRun(plan);
    writeFileSync(loadFile, `${before} → ${load()}\n`);
  }
  return { trace, load: existsSync(loadFile) ? readFileSync(loadFile, 'utf8').trim() : '?' };
}

async function figuresOf(trace: string): Promise<RunFigures> {
  return runFigures((await analyzeFile(trace, { threads: 1 })).analysis);
}

const fmt = (v: number | null, digits = 0) => (v === null ? '–' : v.toFixed(digits));
const ms = (v: number | null) => (v === null ? '–' : `${(v / 1000).toFixed(2)} s`);
const pct = (v: number | null, signed = true) =>
  v === null ? '–' : `${signed && v > 0 ? '+' : ''}${v.toFixed(0)} %`;
const topOps = (f: RunFigures) =>
  Object.entries(f.byOperation)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([op, n]) => `${op} ${n}`)
    .join(', ');
const states = (f: RunFigures) =>
  Object.entries(f.finalStates)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');

const within = Number(values.within);
const gh = detectGh();
const packages = resolveAoPackages(undefined);
const common = [
  `polling.interval=${values.interval}`,
  `duration=${values.duration}`,
  `markers.steady-start=${values.steady}`,
];
const lines: string[] = [];
const say = (...more: string[]) => {
  lines.push(...more);
  console.log(more.join('\n'));
};

// 1. The real runs, in one batch: the learn run first, then every held-out cell.
const learnRun = await runOnce(values.learn, ['target=ao'], join(values.out, 'learn', 'ao'), true);
const cells = values.cells.split(',').filter((c) => c.length > 0);
const real = new Map<string, { figures: RunFigures; load: string }>();
for (const cell of cells) {
  const run = await runOnce(
    cell,
    [...common, ...(HELD_OUT[cell] ?? []), 'target=ao'],
    join(values.out, cell, 'ao'),
    true,
  );
  real.set(cell, { figures: await figuresOf(run.trace), load: run.load });
}

// 2. The model, learned from the learn run alone.
const model = await learnModel([learnRun.trace]);
const modelFile = join(values.out, 'model.yaml');
writeFileSync(modelFile, modelToYaml(model));
const ghMode = gh.prChecksJson ? 'current' : 'legacy';
say(
  `AO ${packages.versions.core} (scm-github ${packages.versions.scm}, tracker-github ${packages.versions.tracker}), gh ${gh.version}${gh.prChecksJson ? '' : ' (no `pr checks --json`)'}; held-out cells at interval ${values.interval}, duration ${values.duration}, steady from ${values.steady}${values.reuse ? ' (real runs reused from disk)' : ''}.`,
  '',
  `Model learned from the \`${values.learn}\` run alone (load ${learnRun.load}): ${model.cycleTime.cpuMsPerCall} ms of CPU + ${model.cycleTime.waitMsPerCall} ms per call on ${model.cycleTime.cores} cores at load ${model.cycleTime.load ?? 0}; fit on its own run: calls ${pct(model.fit.calls.errorPct)}, cycle p50 ${pct(model.fit.cycleP50Ms.errorPct)}, p95 ${pct(model.fit.cycleP95Ms.errorPct)}; ${model.fit.notes.find((n) => n.startsWith('loop.overrun')) ?? `loop.overrun ${model.loop.overrun}`}. The ao-0.2 rows use gh ${ghMode} and the same CPU time per gh process and load (\`polling.ao-gh-process\`, \`host.load\`).`,
  '',
);

// 3. Each held-out cell predicted by both models in virtual time.
const summary: Array<[string, Record<FigureName, number | null>, Record<FigureName, number | null>]> = [];
for (const cell of cells) {
  const { figures: ao, load: aoLoad } = real.get(cell)!;
  const sets = [...common, ...(HELD_OUT[cell] ?? [])];
  const learned = await figuresOf(
    (
      await runOnce(
        cell,
        [...sets, 'polling.strategy=learned', `polling.model=${modelFile}`],
        join(values.out, cell, 'learned'),
      )
    ).trace,
  );
  const handWritten = await figuresOf(
    (
      await runOnce(
        cell,
        [
          ...sets,
          'polling.strategy=ao-0.2',
          `polling.ao-gh=${ghMode}`,
          `polling.ao-gh-process=${Math.round(model.cycleTime.cpuMsPerCall)}ms`,
          `polling.ao-cpus=${model.cycleTime.cores}`,
          // The learned CPU time is the client's own, beside the learning machine's load: the same machine.
          `host.load=${model.cycleTime.load ?? 0}`,
        ],
        join(values.out, cell, 'ao-0.2'),
      )
    ).trace,
  );
  const eLearned = figureErrors(learned, ao);
  const eHand = figureErrors(handWritten, ao);
  summary.push([cell, eLearned, eHand]);
  const row = (name: string, f: RunFigures, e?: Record<FigureName, number | null>) =>
    `| ${name} | ${fmt(f.callsPerSessionCycle, 2)}${e ? ` (${pct(e['calls/session/cycle'])})` : ''} | ${fmt(f.corePointsPerHour)}${e ? ` (${pct(e['core points/h'])})` : ''} | ${fmt(f.graphqlPointsPerHour)}${e ? ` (${pct(e['GraphQL points/h'])})` : ''} | ${f.busiestSecond}${e ? ` (${pct(e['busiest second'])})` : ''} | ${ms(f.cycleP50Ms)} / ${ms(f.cycleP95Ms)}${e ? ` (${pct(e['cycle p50'])} / ${pct(e['cycle p95'])})` : ''} | ${topOps(f)}${e ? ` (${pct(e['calls by operation'], false)} elsewhere)` : ''} | ${states(f)}${e ? ` (${pct(e['final states'], false)} elsewhere)` : ''} |`;
  say(
    `### ${cell}${HELD_OUT[cell]?.length ? ` (${HELD_OUT[cell]!.join(' ')})` : ''}`,
    '',
    '| run | calls/session/cycle | core points/h | GraphQL points/h | busiest second | cycle p50 / p95 | top operations | final states |',
    '|---|---|---|---|---|---|---|---|',
    row(`AO ${packages.versions.core} (real, gh ${gh.version}, load ${aoLoad})`, ao),
    row('learned (from the learn run)', learned, eLearned),
    row(`ao-0.2 (gh ${ghMode})`, handWritten, eHand),
    '',
  );
}

// 4. The summary: every figure's error per cell, learned and ao-0.2, and what is within the bound.
const cellCell = (e: number | null, signed: boolean) =>
  e === null ? '–' : `${pct(e, signed)}${Math.abs(e) <= within ? '' : ' ✗'}`;
say(
  `### Errors against the real runs (✗: more than ${within} %)`,
  '',
  `| cell | model | ${FIGURES.join(' | ')} |`,
  `|---|---|${FIGURES.map(() => '---').join('|')}|`,
  ...summary.flatMap(([cell, eLearned, eHand]) => [
    `| ${cell} | learned | ${FIGURES.map((f) => cellCell(eLearned[f], !f.includes('operation') && !f.includes('states'))).join(' | ')} |`,
    `| ${cell} | ao-0.2 | ${FIGURES.map((f) => cellCell(eHand[f], !f.includes('operation') && !f.includes('states'))).join(' | ')} |`,
  ]),
  '',
);
mkdirSync(values.out, { recursive: true });
writeFileSync(join(values.out, 'calibration.md'), `${lines.join('\n')}\n`);
console.log(`\nwritten: ${join(values.out, 'calibration.md')}, ${modelFile}`);
