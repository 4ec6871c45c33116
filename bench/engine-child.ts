/**
 * One virtual-time run in its own process, so its wall time and peak RSS are its own:
 * `tsx bench/engine-child.ts REF OUTDIR [key=value ...]` prints one JSON line.
 */

import { executeRun } from '../src/run/pipeline.ts';
import { planRun } from '../src/run/plan.ts';

const [ref, outDir, ...sets] = process.argv.slice(2);
// What this benchmark times is the run itself (the simulation), not its summary.
const { outcome, runMs: wallMs } = await executeRun(planRun(ref!, sets, outDir!));
process.stdout.write(
  `${JSON.stringify({
    wallMs,
    virtualMs: outcome.endedAt,
    events: outcome.events,
    sessions: outcome.sessionsStarted,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  })}\n`,
);
