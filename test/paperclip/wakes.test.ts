/**
 * Wakes of the real Paperclip, driven through the target itself (docs/paperclip.md): the stand-in
 * agents run with the delays the scenario sets (`standin:`), and a wake Paperclip declines (202
 * `{status: "skipped"}`: here, an agent whose heartbeat policy does not wake on demand) is
 * recorded as `run.skipped` and counted, never a run without time.
 */
import { chmodSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createAnalyzer } from '../../src/analyze/analyzer.ts';
import { createRng } from '../../src/base/rng.ts';
import { RealClock } from '../../src/clock/real.ts';
import { parseTarget } from '../../src/contract/target-ref.ts';
import type { RunNotice } from '../../src/contract/types.ts';
import { PaperclipTarget } from '../../src/targets/paperclip/target.ts';
import { MemorySink } from '../../src/trace/writer.ts';
import { parseScenarioText } from '../../src/workload/load.ts';
import { scratchDir } from '../helpers/tmp.ts';
import { waitUntil } from '../helpers/wait.ts';
import { paperclipInstalled } from './helpers.ts';

const installed = paperclipInstalled();

const SCENARIO = `
name: paperclip-skipped
target: paperclip
duration: 5m
sessions: { count: 1 }
executors:
  - { type: native-runs, adapter: codex, count: 1, runs-per-session: 3, turns: 1, think: 1s, stagger: 0s }
standin:
  boot: { min: 50ms, max: 50ms }
  first-event: { min: 20ms, max: 20ms }
  item-gap: { min: 100ms, max: 100ms }
  items: 1
`;

describe.skipIf(installed.skip)('wakes of the real Paperclip through the target', () => {
  it('stand-in delays from the scenario; a wake Paperclip skips is recorded and counted, not a run', async () => {
    installed.require();
    const out = scratchDir('fleetbench-pc-wakes-');
    chmodSync(out, 0o755);
    const scenario = parseScenarioText(SCENARIO, 'skipped.yaml');
    const clock = new RealClock();
    const trace = new MemorySink();
    const target = new PaperclipTarget({
      scenario,
      clock,
      rng: createRng(1),
      trace,
      outDir: out,
      ref: parseTarget('paperclip') as Extract<ReturnType<typeof parseTarget>, { kind: 'paperclip' }>,
    });
    const notices: RunNotice[] = [];
    target.onRunNotice((n) => notices.push(n));
    try {
      await target.boot();
      await target.start();
      await target.createSession({ id: 's1', repo: 'o/r', issue: 1, branch: 'b' });
      const first = await target.startRun({ session: 's1', adapter: 'codex', input: 'run 1' });
      expect(first.run).not.toBe('');
      await waitUntil('the first run done', () => notices.some((n) => n.type === 'turn.completed'), {
        timeoutMs: 120_000,
        everyMs: 200,
      });
      // The stand-in ran with the scenario's delays, and the trace says which.
      const started = trace.records.find((r) => r.kind === 'event' && r.name === 'paperclip.started');
      expect(started).toMatchObject({
        data: { standin: { bootMs: [50, 50], firstEventMs: [20, 20], itemGapMs: [100, 100], items: [1, 1] } },
      });
      // It ran with them: one tool call, where the default draws 3-6 (Paperclip redacts the
      // agent's env in its API, so the stream says it).
      const toolCalls = trace.records.filter(
        (r) =>
          r.kind === 'event' &&
          r.name === 'provider.event' &&
          r.labels?.type === 'item.started' &&
          r.labels?.item === 'tool_call',
      );
      expect(toolCalls).toHaveLength(1);
      const base = (target as unknown as { server: { apiUrl: string } }).server.apiUrl;
      const row = (await (await fetch(`${base}/heartbeat-runs/${first.run}`)).json()) as { agentId: string };
      // The agent no longer wakes on demand: Paperclip answers 202 {status: "skipped"}.
      const patched = await fetch(`${base}/agents/${row.agentId}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ runtimeConfig: { heartbeat: { wakeOnDemand: false } } }),
      });
      expect(patched.status, await patched.text()).toBe(200);
      const second = await target.startRun({ session: 's1', adapter: 'codex', input: 'run 2' });
      expect(second.run).toBe('');
      expect(notices.at(-1)).toMatchObject({ type: 'run.skipped', session: 's1' });
    } finally {
      await target.stop();
    }
    const named = (name: string) => trace.records.filter((r) => r.kind !== 'api' && r.name === name);
    expect(named('run.skipped')).toEqual([
      expect.objectContaining({
        session: 's1',
        labels: { adapter: 'codex_local' },
        data: { status: 'skipped', httpStatus: 202 },
      }),
    ]);
    expect(named('run.created')).toHaveLength(1);
    const analyzer = createAnalyzer();
    for (const r of trace.records) analyzer.add(r);
    const speed = analyzer.finish().speed!;
    expect(speed.runs).toMatchObject({ created: 1, skipped: 1 });
    expect(speed.timeline!.skipped).toHaveLength(1);
    expect(speed.notes).toContain('1 input was answered without a run (run.skipped): no run, no sample');
  });
});
