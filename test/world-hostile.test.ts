/**
 * `fleetbench world -- COMMAND` against commands that misbehave: one that handles Ctrl-C and takes
 * its time, one that cannot be started, one started from a directory that is gone. Each runs the
 * CLI as a process, as a user does; the sandbox suites need bwrap (Debian package bubblewrap) and
 * are skipped with one line without it off CI.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');
const root = process.getuid?.() === 0;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  records: Array<Record<string, unknown> & { kind: string; name?: string }>;
}

/**
 * `fleetbench world ARGS -- COMMAND` as a process in a process group of its own, as a terminal's
 * foreground job is: `interrupt` sends SIGINT to the whole group once the marker file exists, as
 * Ctrl-C does.
 */
function world(
  args: string[],
  command: string[],
  options: { cwd?: string; interruptWhen?: string; timeoutMs?: number } = {},
): Promise<Run> {
  const out = scratchDir('fleetbench-world-hostile-');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'world', '--out', out, ...args, '--', ...command], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
      cwd: options.cwd ?? process.cwd(),
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    let poll: NodeJS.Timeout | undefined;
    const marker = options.interruptWhen;
    if (marker !== undefined)
      poll = setInterval(() => {
        if (!existsSync(marker) || child.pid === undefined) return;
        clearInterval(poll);
        process.kill(-child.pid, 'SIGINT');
      }, 50);
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, options.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      let records: Run['records'] = [];
      try {
        records = readFileSync(join(out, 'trace.jsonl'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line));
      } catch {
        records = [];
      }
      resolve({ code, stdout, stderr, records });
    });
  });
}

/** A command that, on SIGINT, takes a second to clean up, writes that it did, and exits 5. */
function graceful(dir: string): { script: string; started: string; cleaned: string } {
  const script = join(dir, 'graceful.sh');
  const started = join(dir, 'started');
  const cleaned = join(dir, 'cleaned');
  writeFileSync(
    script,
    `trap 'sleep 1; echo cleaned > ${cleaned}; exit 5' INT\necho > ${started}\nwhile true; do sleep 0.1; done\n`,
  );
  return { script, started, cleaned };
}

describe.skipIf(bwrap.skip)('fleetbench world: a hostile command in the sandbox', () => {
  it('Ctrl-C reaches the command and the world waits for it (it was killed at once, exit 137)', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-int-');
    const { script, started, cleaned } = graceful(dir);
    const run = await world(['--mode', 'sandbox', '--no-agents'], ['sh', script], {
      interruptWhen: started,
    });
    expect(run.code, run.stderr).toBe(5);
    expect(existsSync(cleaned)).toBe(true);
    expect(run.records.at(-1)).toMatchObject({ kind: 'end', reason: 'interrupted' });
  });
});
