/**
 * CPU time this process spends on `work`, in ms: what a bound on "refused in seconds" asserts.
 * Wall time is not: on a loaded 2-core machine (load 14) a 4 s refusal takes 30 s of wall time,
 * and the same CPU time. In-process CLI calls only (a child process's CPU is not counted).
 */
export async function cpuTimeOf<T>(work: () => Promise<T>): Promise<{ result: T; cpuMs: number }> {
  const before = process.cpuUsage();
  const result = await work();
  const used = process.cpuUsage(before);
  return { result, cpuMs: (used.user + used.system) / 1000 };
}
