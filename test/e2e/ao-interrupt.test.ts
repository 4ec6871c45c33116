/**
 * Ctrl-C from a terminal during a `--target ao` run (issue 30): the terminal signals the whole
 * process group, agent-orchestrator's process included. That process used to die at once, and
 * fleetbench, stopping it in order, wrote its `stop` into a closed channel: `write EPIPE`, exit 1,
 * no summary (2 of 5 tries). Now AO's process leaves only when fleetbench asks or is gone, so
 * the race is gone: a SIGINT to AO's process alone changes nothing, and the group's SIGINT ends
 * the run as any Ctrl-C does (exit 130, trace footer, partial summary). A process test: only a
 * process can be signalled with its group.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrace } from '../../src/trace/reader.ts';
import { BIN } from '../helpers/cli.ts';
import { alive } from '../helpers/serve.ts';
import { scratchDir } from '../helpers/tmp.ts';
import { systemTool } from '../helpers/tools.ts';
import { waitUntil } from '../helpers/wait.ts';

const dir = scratchDir('fleetbench-ao-int-');
const gh = systemTool('gh', ['--version'], 'gh');

/** The pids of a process's children, from /proc (Linux). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
};

const apiLines = (trace: string) =>
  existsSync(trace) ? (readFileSync(trace, 'utf8').match(/"kind":"api"/g) ?? []).length : 0;

describe.skipIf(gh.skip)('Ctrl-C during a --target ao run', () => {
  it("a SIGINT to AO's process alone is ignored; the group's SIGINT: exit 130, partial summary, no EPIPE, nothing left", async () => {
    gh.require();
    const scenario = join(dir, 'ao-int.yaml');
    writeFileSync(
      scenario,
      'name: ao-int\nduration: 2m\ntarget: ao\npolling: { interval: 2s }\nsessions: { count: 2, pr-after: 0, ci-after: 0 }\n',
    );
    const out = join(dir, 'run');
    const trace = join(out, 'trace.jsonl');
    // Its own process group, as a shell runs a foreground job.
    const child = spawn(
      process.execPath,
      [BIN, 'run', scenario, '--out', out, '--no-progress', '--no-report'],
      {
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.stdout.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const killer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 100_000);
    try {
      let ao: number | undefined;
      await waitUntil(
        "AO's process and its first calls",
        () => {
          ao = childrenOf(child.pid!).find((pid) => cmdline(pid).includes('ao-worker'));
          return ao !== undefined && apiLines(trace) > 2;
        },
        { timeoutMs: 60_000 },
      );
      process.kill(ao!, 'SIGINT');
      // AO goes on polling through the signal: more calls, from the same process.
      const before = apiLines(trace);
      await waitUntil('AO polling after its SIGINT', () => apiLines(trace) >= before + 4, {
        timeoutMs: 60_000,
      });
      expect(alive(ao!)).toBe(true);
      expect(stderr).not.toMatch(/exited during the run/);

      // The terminal's Ctrl-C: every process of the group.
      process.kill(-child.pid!, 'SIGINT');
      const code = await exited;
      expect(stderr).not.toMatch(/EPIPE|internal error/);
      expect(code, stderr).toBe(130);
      const { stats } = await readTrace(trace);
      expect(stats.footer?.reason).toBe('interrupted');
      const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
      expect(summary.outcome).toMatchObject({ reason: 'interrupted', partial: true });
      await waitUntil("AO's process gone", () => !alive(ao!), { timeoutMs: 20_000 });
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  }, 150_000);
});
