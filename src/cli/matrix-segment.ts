/**
 * `fleetbench matrix --segment i/n` (or in a pod of a Kubernetes Indexed Job): runs this
 * segment's share of the matrix into the shared output directory and records it for
 * `fleetbench merge` (docs/distributed.md). No baseline is written here: a segment alone is not
 * the matrix.
 */

import { ExitCode } from '../base/errors.ts';
import { type Segment, segmentLabel } from '../base/segment.ts';
import { runMatrixSegment } from '../distributed/matrix-segment.ts';
import type { MatrixSpec } from '../matrix/run.ts';
import { fmtMs } from '../report/table.ts';
import { onInterrupt } from './interrupt.ts';
import type { CommandIo } from './output.ts';
import { createMatrixProgress } from './progress.ts';

export async function runMatrixSegmentCommand(
  spec: MatrixSpec,
  segment: Segment,
  jobs: number,
  io: CommandIo,
): Promise<void> {
  const label = `matrix segment ${segmentLabel(segment)}`;
  const interrupt = onInterrupt(
    'stopping; running cells end early, the segment is recorded with what finished',
    io,
  );
  const progress = createMatrixProgress(label, io);
  try {
    const outcome = await runMatrixSegment(spec, segment, {
      jobs,
      signal: interrupt.signal,
      onPlan: (runs) => progress.plan(runs),
      onStart: (_job, running) => progress.started(running),
      onDone: (result, running) => progress.done(result.job.key, result.wallMs, running),
    });
    progress.stop();
    const r = outcome.record;
    const done = r.units.reduce((n, u) => n + u.runs.length, 0);
    io.stdout.write(
      [
        '',
        `fleetbench ${label}: ${done} of ${r.assigned.length} runs (of ${r.plan.keys.length} in the matrix) ${r.status}, ${fmtMs(r.timing.wallMs)} wall`,
        `  runs......: ${spec.outDir}/cells/`,
        `  record....: ${outcome.path}`,
        `  merge.....: fleetbench merge ${spec.outDir}   (once every segment is done)`,
        '',
      ].join('\n'),
    );
    if (interrupt.signal.aborted) io.exitCode = ExitCode.interrupted;
  } finally {
    progress.stop();
    interrupt.dispose();
  }
}
