/**
 * The CLI as a process (bin/fleetbench.js), what an in-process `main(argv, io)` cannot show:
 * Ctrl-C and SIGTERM (exit 130, a readable trace, a partial summary or baseline), exit codes as
 * the shell sees them, a closed pipe (`| head`), worker threads started under the tsx loader.
 * Everything else about the commands is tested in-process (test/helpers/cli.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeSyntheticTrace } from '../../bench/synthetic.ts';
import type { Baseline } from '../../src/results/baseline.ts';
import { readTrace } from '../../src/trace/reader.ts';
import { BIN, runCli } from '../helpers/cli.ts';
import { scratchDir } from '../helpers/tmp.ts';
import { waitUntil } from '../helpers/wait.ts';

const dir = scratchDir('fleetbench-e2e-');
const SAMPLE = new URL('../../examples/sample-trace.jsonl', import.meta.url).pathname;
const STUCK = new URL('../fixtures/stuck-target.ts', import.meta.url).pathname;

/** Starts the bin; `stdout`/`stderr` grow as it writes; `exited` resolves with its exit code. */
function start(args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => {
    out.stdout += d;
  });
  child.stderr.on('data', (d) => {
    out.stderr += d;
  });
  const guard = setTimeout(() => child.kill('SIGKILL'), 100_000);
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      clearTimeout(guard);
      resolve(code);
    }),
  );
  return { child, out, exited };
}

describe('exit codes as a process', () => {
  it('0 for --version, 2 for bad input, 104 for misconfigured budgets', async () => {
    const budgets = join(dir, 'negative.yaml');
    writeFileSync(budgets, 'name: negative\nbudgets:\n  - { metric: time_to_first_activity, p95: -4 }\n');
    const [version, missing, misconfigured] = await Promise.all([
      runCli(['--version']),
      runCli(['analyze', join(dir, 'no-such.jsonl')]),
      runCli(['check', SAMPLE, '--budgets', budgets]),
    ]);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no-such.jsonl');
    expect(misconfigured.code).toBe(104);
    expect(misconfigured.stderr).toMatch(/negative\.yaml:3: budgets\[0\]: p95/);
  });

  it('`| head`: a pipe closed by the reader ends the output quietly, exit 0', async () => {
    const { child, out, exited } = start(['scenarios']);
    // Read the first chunk, then close the pipe as `head -1` does.
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.stdout.destroy();
    expect(await exited).toBe(0);
    expect(out.stderr).toBe('');
  });

  it('a live run whose stderr is a closed pipe (`2>&1 | head -1`) still completes and writes summary.json', async () => {
    const out = join(dir, 'closed-stderr');
    // The shell's own pipe, as a user types it; the run's exit code read from PIPESTATUS.
    const command = `'${process.execPath}' '${BIN}' run S2-T1-5 --clock real --time-scale 100 --metrics-linger 0 --out '${out}' 2>&1 | head -1; exit \${PIPESTATUS[0]}`;
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn('bash', ['-c', command], { env: { ...process.env, NO_COLOR: '1' } });
      let stdout = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      const guard = setTimeout(() => child.kill('SIGKILL'), 100_000);
      child.once('close', (code) => {
        clearTimeout(guard);
        resolve({ code, stdout });
      });
    });
    // head printed the first line (the progress line, every 10 s of a 12 s run) and left; the
    // run went on without it and wrote its next lines into the closed pipe.
    expect(result.stdout.split('\n').filter(Boolean)).toHaveLength(1);
    expect(result.code).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.outcome.reason).toBe('completed');
    const { stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('completed');
  });

  it('worker threads start from the CLI process (tsx loader in workers)', async () => {
    const path = join(dir, 'synthetic.jsonl');
    writeSyntheticTrace(path, { records: 30_000, sessions: 40, repos: 8 });
    // Two threads through tsx against one thread from the bundle: the same analysis.
    const [one, two] = await Promise.all([
      runCli(['analyze', '--json', '--threads', '1', path]),
      runCli(['analyze', '--json', '--threads', '2', path], { env: { FLEETBENCH_BUNDLE: '0' } }),
    ]);
    expect(two.stderr).toBe('');
    expect(two.code).toBe(0);
    expect(JSON.parse(two.stdout)).toEqual(JSON.parse(one.stdout));
  });
});

describe('Ctrl-C and SIGTERM', () => {
  it('Ctrl-C stops the run, keeps a readable trace with its footer, and writes a partial summary', async () => {
    const out = join(dir, 'interrupted');
    // Big enough to take several seconds in virtual time.
    const run = start([
      'run',
      'S2-T1-50',
      '--set',
      'sessions.count=3000',
      '--set',
      'duration=3h',
      '--set',
      'github.limits.secondary=false',
      '--set',
      'github.limits.core=1000000',
      '--out',
      out,
    ]);
    const trace = join(out, 'trace.jsonl');
    // Interrupt once the run is under way: its trace holds the header and at least one record.
    await waitUntil(
      'the trace to hold a record',
      () => existsSync(trace) && readFileSync(trace, 'utf8').split('\n').length > 2,
    );
    run.child.kill('SIGINT');
    const code = await run.exited;
    expect(run.out.stderr).toContain('SIGINT: stopping the run');
    expect(code).toBe(130);
    const { stats, records } = await readTrace(trace);
    expect(stats.footer?.reason).toBe('interrupted');
    expect(records.length).toBeGreaterThan(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.outcome).toMatchObject({ reason: 'interrupted', partial: true });
    expect(summary.outcome.endedAtMs).toBeLessThan(3 * 3_600_000);
    expect(summary.analysis.input.footer).toBe('interrupted');
    expect(run.out.stdout).toContain('interrupted: partial');
    // A partial report too: the run's charts up to the interrupt.
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain('"ended":"interrupted"');
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} stops a run stuck at one instant of virtual time: exit 130, partial summary`, async () => {
      const scenario = join(dir, `stuck-timers-${signal}.yaml`);
      writeFileSync(
        scenario,
        `name: stuck-timers\ntarget: module:${STUCK}\nduration: 2m\nsessions:\n  count: 1\n`,
      );
      const out = join(dir, `signal-${signal}`);
      const run = start(['run', scenario, '--out', out, '--no-report']);
      // Once the run is under way (its trace has its header), signal it.
      await waitUntil('the run to start its trace', () => existsSync(join(out, 'trace.jsonl')));
      const sentAt = performance.now();
      run.child.kill(signal);
      const code = await run.exited;
      expect(code).toBe(130);
      // Bounded, not timed: a stuck run must not need its 100 s guard (loaded machines vary: at
      // load 14 on 2 cores the partial summary alone takes seconds).
      expect(performance.now() - sentAt).toBeLessThan(60_000);
      expect(run.out.stderr).toMatch(new RegExp(`${signal}: stopping the run`));
      const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
      expect(summary.outcome).toMatchObject({ reason: 'interrupted', partial: true });
    });
  }

  it('matrix: running cells stop, the baseline is written with what finished, exit 130', async () => {
    const out = join(dir, 'matrix-interrupted');
    const run = start(['matrix', '--cells', 'S2-*', '--jobs', '1', '--out', out]);
    // After the first cell: interrupt (the second is running or about to).
    await waitUntil('the first cell to finish', () => /S2-T1-1 done/.test(run.out.stderr), {
      timeoutMs: 90_000,
    });
    run.child.kill('SIGINT');
    const code = await run.exited;
    const { stdout, stderr } = run.out;
    expect(code, stderr).toBe(130);
    expect(stderr).toContain('SIGINT: stopping');
    const b: Baseline = JSON.parse(readFileSync(join(out, 'baseline.json'), 'utf8'));
    expect(b.partial).toBe(true);
    expect(b.units).toHaveLength(9);
    const ran = b.units.filter((u) => u.runs.length > 0);
    expect(ran.length).toBeGreaterThanOrEqual(1);
    expect(ran.length).toBeLessThan(9);
    expect(ran[0]!.runs[0]!.reason).toBe('completed');
    expect(readFileSync(join(out, 'baseline.md'), 'utf8')).toContain(
      'Did not run (the matrix was interrupted).',
    );
    // The footer counts what did not run, by name, and never calls a cut-short cell a pass.
    const notRun = b.units.filter((u) => u.runs.length === 0).map((u) => u.id);
    expect(stdout).toContain(`${notRun.length} did not run: ${notRun.join(', ')}`);
    const partial = ran.filter((u) => u.runs.some((r) => r.reason !== 'completed')).map((u) => u.id);
    if (partial.length > 0) {
      expect(stdout).toContain(`${partial.length} partial (interrupted, not judged): ${partial.join(', ')}`);
      for (const id of partial) expect(stdout).toMatch(new RegExp(`${id}\\s+partial: not judged`));
    }
    expect(stdout).not.toContain('every cell passes');
  });
});
