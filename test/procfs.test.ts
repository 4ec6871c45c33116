import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { processFacts } from '../src/world/procfs.ts';

// A process's start time read from /proc (src/world/procfs.ts): what an agent's spawn is timed
// with in a world (docs/world.md, "Agents"), so its boot and the control plane's share of a
// recovery are only as right as this.
describe.skipIf(!existsSync('/proc/self/stat'))('processFacts', () => {
  it('times a process start to within the kernel’s 10 ms ticks of when it was spawned', async () => {
    // Several children: each one's start must fall between the moments before and after its
    // spawn, give or take two ticks (the start is counted in 10 ms ticks, /proc/uptime in 10 ms
    // steps). Reading the boot time from /proc/stat's whole-second `btime` put every start up to
    // a second early (362 ms on the machine where it was found).
    for (let i = 0; i < 5; i++) {
      const before = Date.now();
      const child = spawn('sleep', ['5'], { stdio: 'ignore' });
      const after = Date.now();
      try {
        const facts = processFacts(child.pid as number);
        expect(facts?.startedAtMs).toBeDefined();
        expect(facts!.startedAtMs!).toBeGreaterThanOrEqual(before - 25);
        expect(facts!.startedAtMs!).toBeLessThanOrEqual(after + 25);
        expect(facts?.argv).toEqual(['sleep', '5']);
      } finally {
        child.kill('SIGKILL');
      }
      await new Promise((resolve) => child.once('exit', resolve));
    }
  });
});
