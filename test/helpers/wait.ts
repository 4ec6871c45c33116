/**
 * Waits until `condition` holds, checking every `everyMs`, for at most `timeoutMs`: tests wait
 * for the event they need (a process gone, a line written), never for a fixed time.
 */
export async function waitUntil(
  what: string,
  condition: () => boolean | Promise<boolean>,
  { timeoutMs = 30_000, everyMs = 50 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
