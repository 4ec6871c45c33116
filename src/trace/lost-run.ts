/**
 * Which restart lost a run (the `run.lost` span, docs/trace-format.md): the kill that orphaned
 * its agent, not the latest restart before the control plane noticed. A kill -9 (`hard`) leaves
 * the agent's process orphaned; a SIGTERM drains it (a run it catches ends interrupted, not
 * lost). So it is the first hard restart between the attempt's start and the moment the run was
 * found lost, else the first restart of any kind in that time, else the last one before it.
 */
export function restartThatLostRun<R extends { kind: string; killAt: number }>(
  restarts: readonly R[],
  attemptStartAt: number | undefined,
  lostAt: number,
): R | undefined {
  const before = restarts.filter((r) => r.killAt <= lostAt);
  if (attemptStartAt !== undefined) {
    const during = before.filter((r) => r.killAt >= attemptStartAt);
    const found = during.find((r) => r.kind === 'hard') ?? during[0];
    if (found) return found;
  }
  return before[before.length - 1];
}
