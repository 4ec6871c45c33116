/**
 * One virtual-time run in its own process, so its wall time and peak RSS are its own:
 * `tsx bench/engine-child.ts REF OUTDIR [key=value ...]` prints one JSON line.
 */

import { runScenario } from '../src/run/engine.ts';
import { resolveScenarioRef } from '../src/workload/builtins.ts';
import { parseOverride } from '../src/workload/load.ts';

const [ref, outDir, ...sets] = process.argv.slice(2);
const { scenario, cell } = resolveScenarioRef(ref!, sets.map(parseOverride));
const started = performance.now();
const outcome = await runScenario(scenario, { outDir: outDir!, cell });
const wallMs = performance.now() - started;
process.stdout.write(
  `${JSON.stringify({
    wallMs,
    virtualMs: outcome.endedAt,
    events: outcome.events,
    sessions: outcome.sessionsStarted,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  })}\n`,
);
