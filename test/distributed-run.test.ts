/**
 * A live run in segments, run here exactly as the Indexed Job of `fleetbench k8s manifest run`
 * runs it: the manifest's own arguments and environment for the shared GitHub emulator, the
 * shared reference control plane, three segment pods (JOB_COMPLETION_INDEX, FLEETBENCH_SEGMENTS,
 * the admin token) and the merge Job, with the cluster's addresses replaced by 127.0.0.1 free
 * ports and /results by a scratch directory. The merged run is compared with the same scenario
 * run in one process against the same reference serve. Every server is stopped at the end.
 */
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { analyzeFile } from '../src/analyze/file.ts';
import type { Analysis } from '../src/analyze/schema.ts';
import { readTrace } from '../src/trace/reader.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { runCli } from './helpers/cli.ts';
import { events, spans } from './helpers/run.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';

const SCENARIO = new URL('./fixtures/live-segments.yaml', import.meta.url).pathname;
const NAME = 'lr';

interface Env {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: { name: string; key: string } };
}
interface Container {
  args: string[];
  env: Env[];
}
// biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON read back from YAML
type Doc = any;
interface Summary {
  analysis: Analysis;
  outcome: { partial: boolean; sessionsStarted: number };
  segments?: Array<{ index: number; status: string }>;
}

const sessionStarts = (records: BodyRecord[]) => spans(records, 'session.start');

describe('a live run in segments, as the Indexed Job runs it', { timeout: 240_000 }, () => {
  const dir = scratchDir('fleetbench-live-segments-');
  afterAll(stopAll);

  it('3 segments against one reference serve and one github serve merge into the single-process run', async () => {
    // Time-scale 120: the 10-minute scenario lasts 5 s of real time.
    const yamlPath = join(dir, 'run.yaml');
    const manifest = await runCli([
      'k8s',
      'manifest',
      'run',
      SCENARIO,
      '--segments',
      '3',
      '--time-scale',
      '120',
      '--name',
      NAME,
      '-o',
      yamlPath,
    ]);
    expect(manifest.code, manifest.stderr).toBe(0);
    const { parseAllDocuments } = await import('yaml');
    const docs: Doc[] = parseAllDocuments(readFileSync(yamlPath, 'utf8')).map((d) => d.toJS());
    const find = (kind: string, name: string) =>
      docs.find((d) => d.kind === kind && d.metadata.name === name) as Doc;
    const token: string = find('Secret', `${NAME}-github-admin`).stringData.token;
    const containerOf = (kind: string, name: string): Container =>
      find(kind, name).spec.template.spec.containers[0];
    const github = containerOf('Deployment', `${NAME}-github`);
    const target = containerOf('Deployment', `${NAME}-target`);
    const segment = containerOf('Job', NAME);
    const merge = containerOf('Job', `${NAME}-merge`);

    // The cluster's names and paths, on this machine.
    const volume = join(dir, 'volume');
    let githubUrl = '';
    let targetUrl = '';
    const local = (args: string[]) =>
      args.map((a, i) => {
        if (args[i - 1] === '--host') return '127.0.0.1';
        if (args[i - 1] === '--port') return '0';
        if (args[i - 1] === '--state') return join(dir, 'state');
        return a
          .replace('$(FLEETBENCH_GITHUB_ADMIN_TOKEN)', token)
          .replace(/^\/results/, volume)
          .replace(/^\/scenario\/.*$/, SCENARIO)
          .replace(`http://${NAME}-github:8080`, githubUrl)
          .replace(`http://${NAME}-target:7070`, targetUrl);
      });
    const env = (c: Container) =>
      Object.fromEntries(c.env.map((e) => [e.name, e.valueFrom ? token : (e.value ?? '')]));

    const [emulator, reference] = await Promise.all([
      startCliServer<{ url: string }>(local(github.args)),
      startCliServer<{ url: string }>(local(target.args)),
    ]);
    githubUrl = emulator.info.url;
    targetUrl = reference.info.url;

    // One process: the same scenario, flags and target, its own emulator (as a run has by default).
    const single = join(dir, 'single');
    const one = await runCli(
      [
        'run',
        SCENARIO,
        '--clock',
        'real',
        '--time-scale',
        '120',
        '--target',
        targetUrl,
        '--out',
        single,
        '--no-progress',
        '--metrics-linger',
        '0',
        '--json',
      ],
      { timeoutMs: 60_000 },
    );
    expect(one.code, one.stderr).toBe(0);

    // The three pods, side by side, with the Indexed Job's environment.
    const pods = await Promise.all(
      [0, 1, 2].map((index) =>
        runCli(local(segment.args), {
          env: { ...env(segment), JOB_COMPLETION_INDEX: String(index) },
          timeoutMs: 90_000,
        }),
      ),
    );
    for (const pod of pods) expect(pod.code, pod.stderr).toBe(0);
    const out = join(volume, NAME);
    for (const index of [0, 1, 2])
      expect(pods[index]!.stderr).toContain(`fleetbench: segment ${index}/3 of live-segments-`);

    const merged = await runCli(local(merge.args), { env: env(merge), timeoutMs: 60_000 });
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stdout).toContain('fleetbench merge: run live-segments, 3 of 3 segments, 12 sessions');
    expect(existsSync(join(out, 'report.html'))).toBe(true);

    const a: Summary = JSON.parse(readFileSync(join(single, 'summary.json'), 'utf8'));
    const b: Summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(b.outcome.partial).toBe(false);

    // Sessions: the same 12 ids, each started once, by one segment (none twice, none lost).
    const { records: singleRecords } = await readTrace(join(single, 'trace.jsonl'));
    const { records: mergedRecords, stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('completed');
    const ids = (records: BodyRecord[]) =>
      sessionStarts(records)
        .map((s) => s.session)
        .sort();
    expect(ids(mergedRecords)).toEqual(ids(singleRecords));
    expect(new Set(ids(mergedRecords)).size).toBe(12);
    expect(b.outcome.sessionsStarted).toBe(12);
    // Each segment started its own share: sessions k ≡ i (mod 3), s-(k+1).
    for (const index of [0, 1, 2]) {
      const { records } = await readTrace(join(out, 'segments', `run-${index}-of-3`, 'trace.jsonl'));
      const own = sessionStarts(records).map((s) => Number(s.session!.slice(2)) - 1);
      expect(own.length).toBe(4);
      expect(own.every((k) => k % 3 === index)).toBe(true);
    }

    // Schedule kept: per executor, the intended starts relative to its first are the one
    // process's (both are the schedule's own numbers: real-clock lag does not move them). By rank,
    // not id: one process numbers sessions by spawn order, and when its setup is slow (a loaded
    // machine, ×120) its two executors overlap and interleave their ids; the segments number by
    // global index (docs/distributed.md).
    const schedule = (records: BodyRecord[]) => {
      const byExecutor = new Map<string, Array<{ id: string; t: number }>>();
      for (const s of sessionStarts(records)) {
        const executor = String(s.labels?.executor);
        byExecutor.set(executor, [...(byExecutor.get(executor) ?? []), { id: s.session!, t: s.t }]);
      }
      for (const starts of byExecutor.values()) starts.sort((x, y) => x.t - y.t);
      return byExecutor;
    };
    const offsetsOf = (records: BodyRecord[]) =>
      Object.fromEntries(
        [...schedule(records)].map(([executor, starts]) => [
          executor,
          starts.map((s) => Math.round(s.t - starts[0]!.t)),
        ]),
      );
    expect(offsetsOf(mergedRecords)).toEqual(offsetsOf(singleRecords));
    // The same session in both runs: the same executor's start of the same rank.
    const twin = new Map<string, string>();
    const mergedSchedule = schedule(mergedRecords);
    for (const [executor, starts] of schedule(singleRecords))
      for (const [rank, s] of starts.entries()) twin.set(s.id, mergedSchedule.get(executor)![rank]!.id);
    // And on the run's timeline: every segment started its executor at its due time.
    const fixedStarts = sessionStarts(mergedRecords).filter((s) => s.labels?.executor === 'fixed#1');
    expect(Math.min(...fixedStarts.map((s) => s.t))).toBe(0);

    // The target's stream: every event written once, by the segment of its session (or 0).
    const targetEvents = events(mergedRecords, 'target.events');
    expect(targetEvents).toHaveLength(3);
    const streams = targetEvents.map(
      (e) =>
        (
          e as unknown as {
            data: { written: number; foreign: number; received: number; gaps: number; declared: number };
          }
        ).data,
    );
    for (const s of streams) {
      expect(s.gaps).toBe(0);
      expect(s.written + s.foreign).toBe(s.received);
    }
    const written = streams.reduce((n, s) => n + s.written, 0);
    // Every event up to the first segment's stop is written once; each segment stops reading at
    // its own stop (the end of the run), so the few after it are written at most once.
    const declared = streams.map((s) => s.declared);
    expect(written).toBeGreaterThanOrEqual(Math.min(...declared));
    expect(written).toBeLessThanOrEqual(Math.max(...declared));
    // Every session goes through the same states in both runs (its twin: the same executor's
    // start of the same rank). Not the same number of them: a state a poll cycle finds (PR open,
    // CI done) moves with real-clock jitter and with cycles a starved CPU skips, and one found
    // near the end of one run may fall after the end of the other (31 merged against 36 at load
    // 14). So: one path is a prefix of the other, and both got past spawning.
    const paths = (records: BodyRecord[]) => {
      const byId = new Map<string, string[]>();
      for (const e of events(records, 'session.state'))
        byId.set(e.session!, [...(byId.get(e.session!) ?? []), `${e.labels?.from}>${e.labels?.to}`]);
      return byId;
    };
    const pathsA = paths(singleRecords);
    const pathsB = paths(mergedRecords);
    for (const [id, a] of pathsA) {
      const b = pathsB.get(twin.get(id)!) ?? [];
      const common = Math.min(a.length, b.length);
      expect(b.slice(0, common), `${id}: ${a.join(' ')} in one process, ${b.join(' ')} merged`).toEqual(
        a.slice(0, common),
      );
      expect(common, `${id}: ${a.join(' ')} / ${b.join(' ')}`).toBeGreaterThanOrEqual(2);
    }

    // API calls, from the shared emulator's trace: by operation and by session, within the
    // real clock's variation, stated and bounded. The control plane polls every 30 s of run
    // time; a session's phase changes (spawned, PR opened at +1 m, CI done at +2 m) come at
    // fixed run times from its actual start, and where they fall against the poll cycles moves
    // with real-clock jitter, so each of the three can land one cycle early or late: ±1 call of
    // an operation per change. A session that started later in one run than in the other (its
    // lag: a generator that fell behind, a pod that came up after the agreed start) has its
    // whole life shifted, and its last phase cut short at the run's end, by that difference:
    // ±⌈Δlag / 30 s⌉ more. Per session and operation: 3 + ⌈|Δlag| / 30 s⌉; per operation the
    // sum over the sessions, plus the per-repo calls' cycles (the same bound once more).
    const lags = (records: BodyRecord[]) =>
      new Map(sessionStarts(records).map((s) => [s.session!, s.dur] as const));
    const lagA = lags(singleRecords);
    const lagB = lags(mergedRecords);
    const perSession = new Map(
      [...lagA].map(([id, dur]) => [
        id,
        3 + Math.ceil(Math.abs(dur - (lagB.get(twin.get(id)!) ?? 0)) / 30_000),
      ]),
    );
    // A cycle that overran its interval makes the control plane skip the ones it missed (a
    // `poll.cycle.skipped` event; at ×120 a starved CPU does it: seen at load average 6, 170
    // guard-check-runs calls in one process against 78 merged). Each skipped cycle is one call
    // fewer of a per-session operation for every session, and one of a per-repo one.
    const skipped = (records: BodyRecord[]) =>
      events(records, 'poll.cycle.skipped').reduce((n, e) => n + Number(e.labels?.count ?? 0), 0);
    const skippedCycles = skipped(singleRecords) + skipped(mergedRecords);
    const sessionBound =
      [...perSession.values()].reduce((n, b) => n + b, 0) + skippedCycles * perSession.size;
    const repoBound = Math.max(...perSession.values()) + skippedCycles;
    const ops = (s: Summary) => s.analysis.api.counts.byOperation;
    const opsA = ops(a);
    const opsB = ops(b);
    // An operation of a phase at the run's edge (a review's comments) may fall in one run and
    // not the other: the union of the operations, a missing one counted as 0 calls, same bound.
    const allOps = new Set([...Object.keys(opsA), ...Object.keys(opsB)]);
    expect(allOps.size).toBeGreaterThan(3);
    for (const op of allOps) {
      const callsA = opsA[op]?.calls ?? 0;
      const callsB = opsB[op]?.calls ?? 0;
      expect(
        Math.abs(callsA - callsB),
        `${op}: ${callsA} in one process, ${callsB} merged (bound ${sessionBound + repoBound})`,
      ).toBeLessThanOrEqual(sessionBound + repoBound);
    }
    expect(b.analysis.api.totals.calls).toBeGreaterThan(0);
    const sessionsA = a.analysis.api.counts.bySession;
    const sessionsB = b.analysis.api.counts.bySession;
    const opCount = allOps.size;
    for (const id of ids(singleRecords)) {
      const ca = sessionsA[id!]?.calls ?? 0;
      const cb = sessionsB[twin.get(id!)!]?.calls ?? 0;
      const bound = opCount * (perSession.get(id!)! + skippedCycles);
      expect(cb, `${id}: ${ca} calls in one process, ${cb} merged`).toBeGreaterThan(0);
      expect(
        Math.abs(ca - cb),
        `${id}: ${ca} calls in one process, ${cb} merged (bound ${bound})`,
      ).toBeLessThanOrEqual(bound);
    }
    // Percentiles: the merged analysis (analyzers merged, histograms merged) is the one pass over
    // the merged trace, to the histogram's precision.
    const { analysis: onePass } = await analyzeFile(join(out, 'trace.jsonl'), {
      threads: 1,
      analyzer: { sessions: 12 },
    });
    expect(b.analysis.api.totals).toEqual(onePass.api.totals);
    expect(b.analysis.api.counts).toEqual(onePass.api.counts);
    const pa = b.analysis.api.latency.all!;
    const pb = onePass.api.latency.all!;
    for (const p of ['p50', 'p95', 'p99'] as const)
      expect(Math.abs(pa[p] - pb[p])).toBeLessThanOrEqual(Math.max(0.01 * pb[p], 0.01));

    // A segment whose record is not there: named, the merged result partial, exit 2; back, whole.
    const record = join(out, 'segments', 'run-2-of-3.json');
    renameSync(record, `${record}.away`);
    const partial = await runCli(['merge', out], { timeoutMs: 60_000 });
    expect(partial.code).toBe(2);
    expect(partial.stdout).toContain('segment 2: MISSING');
    expect(partial.stdout).toContain('(PARTIAL)');
    const partialSummary: Summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(partialSummary.outcome.partial).toBe(true);
    expect(partialSummary.outcome.sessionsStarted).toBe(8);
    renameSync(`${record}.away`, record);
    const whole = await runCli(['merge', out], { timeoutMs: 60_000 });
    expect(whole.code, whole.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).analysis.api.totals).toEqual(
      b.analysis.api.totals,
    );

    // The protocol by hand: the first POST /v1/run of a run id starts it, the next joins it (the
    // same first seq, no reset: the session created in between is still there); only the last
    // segment's stop ends the run.
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${targetUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const start = {
      runId: 'by-hand',
      epochMs: Date.now(),
      timeScale: 1,
      seed: 1,
      scenario: 'by-hand',
      github: { url: githubUrl, token: 'unused' },
    };
    const first = await post('/v1/run', { ...start, segment: { index: 0, count: 2 } });
    expect(first.status).toBe(200);
    expect(first.body.joined).toBeUndefined();
    const created = await post('/v1/sessions', {
      id: 's-0001',
      repo: 'fleetbench/repo-1',
      issue: 1,
      branch: 'fleet/s-0001',
    });
    expect(created.status).toBe(201);
    const second = await post('/v1/run', { ...start, segment: { index: 1, count: 2 } });
    expect(second.body).toMatchObject({ since: first.body.since, joined: true });
    const counts = (await (await fetch(`${targetUrl}/v1/sessions`)).json()) as {
      counts: Record<string, number>;
    };
    expect(Object.values(counts.counts).reduce((n, c) => n + c, 0)).toBe(1);
    const stopOne = await post('/v1/run/stop', { runId: 'by-hand', segment: { index: 0, count: 2 } });
    expect(stopOne.body.running).toBe(1);
    const stopTwo = await post('/v1/run/stop', { runId: 'by-hand', segment: { index: 1, count: 2 } });
    expect(stopTwo.status).toBe(200);
    expect(stopTwo.body.running).toBeUndefined();

    // The run is over: a pod re-run now cannot rejoin it, and says so.
    const late = await runCli(local(segment.args), {
      env: { ...env(segment), JOB_COMPLETION_INDEX: '1' },
      timeoutMs: 60_000,
    });
    expect(late.code).toBe(2);
    expect(late.stderr).toContain("is over; a live run's segment cannot be re-run after it");
  });
});
