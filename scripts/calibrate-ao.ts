/**
 * Calibration of the reference control plane against the real agent-orchestrator
 * (docs/calibration.md): each cell runs once against AO 0.2.0 through the real `gh` (real clock,
 * `--target ao`) and against the reference model in virtual time with the strategies `naive`,
 * `guarded` and `ao-0.2` (the model of AO 0.2.0, with the gh behaviour measured here), with the
 * same interval, duration, seed and steady-state marker. Prints one Markdown table per cell and
 * the ratios model / AO; writes everything under --out.
 *
 *   npm run calibrate                                  # S2-T1-5, S2-T1-10, S3-T1-10 (~15 min)
 *   npm run calibrate -- --cells S2-T1-50 --duration 5m
 *   npm run calibrate -- --reuse fleetbench-out/calibration   # AO runs already there: model only
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { analyzeFile } from '../src/analyze/file.ts';
import type { Analysis } from '../src/analyze/schema.ts';
import { executeRun } from '../src/run/pipeline.ts';
import { planScenario } from '../src/run/plan.ts';
import { detectGh } from '../src/targets/ao/gh.ts';
import { resolveAoPackages } from '../src/targets/ao/packages.ts';
import { resolveScenarioRef } from '../src/workload/builtins.ts';
import { parseOverride } from '../src/workload/load.ts';

const { values } = parseArgs({
  options: {
    cells: { type: 'string', default: 'S2-T1-5,S2-T1-10,S3-T1-10' },
    interval: { type: 'string', default: '30s' },
    duration: { type: 'string', default: '5m' },
    steady: { type: 'string', default: '2m' },
    out: { type: 'string', default: join('fleetbench-out', 'calibration') },
    reuse: { type: 'boolean', default: false },
    'gh-process': { type: 'string', default: 'auto' },
    cpus: { type: 'string', default: '2' },
  },
});

interface Figures {
  sessions: number;
  perSessionCycle: number | null;
  corePerHour: number | null;
  graphqlPerHour: number | null;
  cycleP50: number | null;
  cycleP95: number | null;
  topOps: string;
}

function figuresOf(a: Analysis): Figures {
  const floor = a.api.pollingFloor.steady?.perSessionCycle.all ?? a.api.pollingFloor.perSessionCycle.all;
  const ops = Object.entries(a.api.counts.byOperation)
    .map(([op, c]) => [op, (c as { calls: number }).calls] as const)
    .sort((x, y) => y[1] - x[1])
    .slice(0, 5)
    .map(([op, n]) => `${op} ${n}`)
    .join(', ');
  return {
    sessions: a.run.sessions,
    perSessionCycle: floor?.mean ?? null,
    corePerHour: a.api.projection.byResource.core?.pointsPerHour ?? 0,
    graphqlPerHour: a.api.projection.byResource.graphql?.pointsPerHour ?? 0,
    cycleP50: a.controlPlane.pollCycles?.durationMs?.p50 ?? null,
    cycleP95: a.controlPlane.pollCycles?.durationMs?.p95 ?? null,
    topOps: ops,
  };
}

async function runOnce(cell: string, sets: string[], outDir: string): Promise<Analysis> {
  const trace = join(outDir, 'trace.jsonl');
  if (!(values.reuse && existsSync(trace))) {
    const { scenario, cell: id } = resolveScenarioRef(cell, sets.map(parseOverride));
    mkdirSync(outDir, { recursive: true });
    await executeRun(planScenario(scenario, outDir, id));
  }
  return (await analyzeFile(trace, { threads: 1 })).analysis;
}

const num = (v: number | null, digits = 1) => (v === null ? '–' : v.toFixed(digits));
const ms = (v: number | null) => (v === null ? '–' : `${(v / 1000).toFixed(2)} s`);
/** model / AO as a signed percentage; a figure both sides have as 0 is equal. */
const diff = (model: number | null, ao: number | null) =>
  model === null || ao === null
    ? '–'
    : ao === 0
      ? model === 0
        ? '0 %'
        : '∞'
      : `${(((model - ao) / ao) * 100).toFixed(0)} %`;

const gh = detectGh();
const packages = resolveAoPackages(undefined);
const common = [
  `polling.interval=${values.interval}`,
  `duration=${values.duration}`,
  `markers.steady-start=${values.steady}`,
];
const lines: string[] = [
  `AO ${packages.versions.core} (scm-github ${packages.versions.scm}, tracker-github ${packages.versions.tracker}), ${gh.version.startsWith('unknown') ? 'gh ?' : `gh ${gh.version}`}${gh.prChecksJson ? '' : ' (no `pr checks --json`)'}; interval ${values.interval}, duration ${values.duration}, steady from ${values.steady}${values.reuse ? ' (AO runs reused from disk)' : ''}; load average at the start ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
  '',
];
const ghMode = gh.prChecksJson ? 'current' : 'legacy';
/**
 * The CPU time of one gh process on this machine, fitted by simulation from the first cell's
 * real cycles: the ao-0.2 model of that cell runs in virtual time (seconds each) with candidate
 * times, bisected until its median cycle matches AO's. A closed formula (calls × t ÷ cores)
 * would ignore that each session's calls run one after another with the network between them.
 */
async function fitGhProcess(cell: string, aoCycleP50: number, cpus: number): Promise<number> {
  const modelP50 = async (processMs: number) => {
    const { scenario } = resolveScenarioRef(
      cell,
      [
        ...common,
        'polling.strategy=ao-0.2',
        `polling.ao-gh=${ghMode}`,
        `polling.ao-gh-process=${processMs}ms`,
        `polling.ao-cpus=${cpus}`,
      ].map(parseOverride),
    );
    const dir = join(values.out, cell, 'fit');
    mkdirSync(dir, { recursive: true });
    await executeRun(planScenario(scenario, dir));
    const analysis = (await analyzeFile(join(dir, 'trace.jsonl'), { threads: 1 })).analysis;
    return analysis.controlPlane.pollCycles?.durationMs?.p50 ?? 0;
  };
  let low = 0;
  let high = 2_000;
  for (let i = 0; i < 9; i++) {
    const mid = Math.round((low + high) / 2);
    if ((await modelP50(mid)) < aoCycleP50) low = mid;
    else high = mid;
  }
  return Math.round((low + high) / 2);
}

let ghProcessMs: number | undefined =
  values['gh-process'] === 'auto' ? undefined : Number.parseInt(values['gh-process'], 10);
const cpus = Number.parseInt(values.cpus, 10);
for (const cell of values.cells.split(',')) {
  const ao = figuresOf(await runOnce(cell, [...common, 'target=ao'], join(values.out, cell, 'ao')));
  if (ghProcessMs === undefined && ao.cycleP50 !== null) {
    ghProcessMs = await fitGhProcess(cell, ao.cycleP50, cpus);
    lines.push(
      `gh process CPU time fitted from ${cell}: ${ghProcessMs} ms per call on ${cpus} cores (the ao-0.2 model's median cycle matches AO's ${ms(ao.cycleP50)}); used as polling.ao-gh-process for every ao-0.2 row`,
      '',
    );
  }
  const rows: Array<[string, Figures]> = [[`AO ${packages.versions.core} (real, gh ${gh.version})`, ao]];
  for (const strategy of ['naive', 'guarded', 'ao-0.2'] as const) {
    const sets = [
      ...common,
      `polling.strategy=${strategy}`,
      ...(strategy === 'ao-0.2'
        ? [
            `polling.ao-gh=${ghMode}`,
            `polling.ao-gh-process=${ghProcessMs ?? 0}ms`,
            `polling.ao-cpus=${cpus}`,
          ]
        : []),
    ];
    const dir = join(values.out, cell, strategy);
    const figures = figuresOf(await runOnce(cell, sets, dir));
    rows.push([
      `reference ${strategy}${strategy === 'ao-0.2' ? ` (ao-gh ${ghMode}, gh process ${ghProcessMs ?? 0} ms)` : ''}`,
      figures,
    ]);
  }
  lines.push(
    `### ${cell}`,
    '',
    '| run | calls/session/cycle | core points/h | GraphQL points/h | cycle p50 / p95 | top operations |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      ([name, f]) =>
        `| ${name} | ${num(f.perSessionCycle, 2)}${name.startsWith('AO') ? '' : ` (${diff(f.perSessionCycle, ao.perSessionCycle)})`} | ${num(f.corePerHour, 0)}${name.startsWith('AO') ? '' : ` (${diff(f.corePerHour, ao.corePerHour)})`} | ${num(f.graphqlPerHour, 0)}${name.startsWith('AO') ? '' : ` (${diff(f.graphqlPerHour, ao.graphqlPerHour)})`} | ${ms(f.cycleP50)} / ${ms(f.cycleP95)} | ${f.topOps} |`,
    ),
    '',
  );
  console.log(lines.slice(-rows.length - 4).join('\n'));
}
mkdirSync(values.out, { recursive: true });
writeFileSync(join(values.out, 'calibration.md'), `${lines.join('\n')}\n`);
console.log(`\nwritten: ${join(values.out, 'calibration.md')}`);
