/**
 * Real restarts of the real Paperclip (docs/paperclip.md#restarts-as-found): a SIGTERM and then a
 * kill -9 of the server under two codex_local agents. The runs cut by the SIGTERM are marked
 * interrupted and retried; a run in flight at the kill -9 is found lost by Paperclip's orphan
 * reaper and retried once; both recoveries are measured from Paperclip's own timestamps and split
 * into its share and the stand-in's. Takes 11-12 minutes: Paperclip's reaper waits 5 minutes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { leftDirs, paperclipInstalled, processesIn, runCli, traceLines } from './helpers.ts';

const SCENARIO = new URL('../fixtures/paperclip-restarts.yaml', import.meta.url).pathname;
const installed = paperclipInstalled();

describe.skipIf(installed.skip)('restarts of the real Paperclip', () => {
  it('SIGTERM then kill -9: the lost run retried by Paperclip, both recoveries measured and split', async () => {
    installed.require();
    const run = runCli([SCENARIO], 'restarts');
    const code = await Promise.race([
      run.exited,
      new Promise<string>((r) => setTimeout(() => r('hung'), 1_080_000)),
    ]);
    if (code === 'hung') run.child.kill('SIGKILL');
    // Judged by Paperclip's own published budgets (native-speed, codex_local as codex): its
    // 5-minute recovery of a kill -9 breaks the 4 s p95 of its share (exit 99).
    expect(code, run.stderr()).toBe(99);
    const records = traceLines(run.out);
    // The whole 11 minutes are the workload's: the server's first boot came before run time 0.
    expect(records.at(-1)).toMatchObject({ kind: 'end', reason: 'completed' });
    expect(records.at(-1)!.t as number).toBeGreaterThanOrEqual(11 * 60_000);
    const named = (name: string) => records.filter((r) => r.name === name);
    expect(named('controlplane.restart').map((r) => (r.labels as { kind: string }).kind)).toEqual([
      'graceful',
      'hard',
    ]);
    expect(named('controlplane.ready')).toHaveLength(2);
    expect(named('controlplane.boot').map((r) => (r.labels as { reason: string }).reason)).toEqual([
      'start',
      'graceful',
      'hard',
    ]);
    // Paperclip found the run orphaned by the kill -9 and ran it again, as a retry of its own.
    expect(named('run.lost')).toContainEqual(
      expect.objectContaining({ labels: { adapter: 'codex_local', kind: 'hard' } }),
    );
    const retries = named('paperclip.retry').map((r) => (r.labels as { reason: string }).reason);
    expect(retries).toContain('process_lost');
    const speed = JSON.parse(readFileSync(join(run.out, 'summary.json'), 'utf8')).analysis.speed;
    // Every run the restarts cut is accounted for: recovered, or not with Paperclip's own words.
    // A SIGTERM's cut run is retried when the drain marks it interrupted first, and not when its
    // agent exits on the signal first (failed, adapter_failed): which one happens is a race.
    type Count = { kind: string; cut: number; recovered: number; finished: number; unrecovered: number };
    const counts = new Map((speed.recoveryCounts as Count[]).map((c) => [c.kind, c]));
    for (const c of counts.values())
      expect(c.cut, JSON.stringify(c)).toBe(c.recovered + c.finished + c.unrecovered);
    expect(counts.get('hard')!.recovered).toBeGreaterThan(0);
    expect(counts.get('graceful')!.cut).toBeGreaterThan(0);
    if (counts.get('graceful')!.recovered > 0) expect(retries).toContain('server_shutdown_interrupted');
    for (const u of speed.unrecovered as Array<{ open: boolean; status: string; errorCode: string | null }>)
      if (!u.open) expect(u.errorCode, JSON.stringify(u)).not.toBeNull();
    const samples = (metric: string, kind: string) =>
      speed.metrics[metric].groups.find((g: { labels: { kind?: string } }) => g.labels.kind === kind)
        ?.values ?? [];
    for (const kind of ['hard', 'graceful'].filter((k) => counts.get(k)!.recovered > 0)) {
      const full = samples('restart_recovery', kind);
      const share = samples('restart_recovery_control_plane', kind);
      const load = samples('restart_provider_load', kind);
      expect(full.length, `${kind} recoveries`).toBeGreaterThan(0);
      // The split adds up: Paperclip's share + the stand-in's start and session load = the recovery.
      expect(share.length).toBe(full.length);
      expect(load.length).toBe(full.length);
      full.forEach((ms: number, i: number) => {
        expect(share[i]! + load[i]!).toBeLessThanOrEqual(ms + 1);
        expect(load[i]!).toBeGreaterThan(0);
      });
    }
    // A retry waits 30 s (Paperclip's retry delay) before it is even due: its share is Paperclip's.
    expect(Math.max(...samples('restart_recovery_control_plane', 'hard'))).toBeGreaterThan(1_000);
    expect(speed.metrics.lost_run_detection.samples).toBeGreaterThan(0);
    const verdict = JSON.parse(readFileSync(join(run.out, 'summary.json'), 'utf8')).budgets[0];
    const cp = verdict.rows.find(
      (r: { metric: string; status: string }) =>
        r.metric === 'restart_recovery_control_plane' && r.status !== 'skipped',
    );
    expect(cp).toMatchObject({
      scope: { adapter: 'codex_local' },
      judgedAs: { adapter: 'codex' },
      status: 'fail',
    });
    expect(cp.context.byKind.hard.cause.lostRunDetectionMs).toBeGreaterThan(60_000);
    expect(processesIn(run.tmp)).toEqual([]);
    expect(leftDirs(run.tmp)).toEqual([]);
  });
});
