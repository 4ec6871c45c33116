/**
 * Live telemetry of a real-clock run, in-process: the Prometheus endpoint (parsed strictly by
 * the text exposition format 0.0.4), the OTLP/JSON receiver (posted spans land in the trace on
 * the run's clock), and the progress line.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { liveTelemetry } from '../src/live/index.ts';
import { executeRun } from '../src/run/pipeline.ts';
import { planScenario } from '../src/run/plan.ts';
import { readTrace } from '../src/trace/reader.ts';
import { resolveScenarioRef } from '../src/workload/builtins.ts';
import { parseOverride } from '../src/workload/load.ts';
import { spans } from './helpers/run.ts';
import { scratchDir } from './helpers/tmp.ts';
import { PROMTOOL, promtoolCheck, systemTool } from './helpers/tools.ts';

interface ParsedFamily {
  help: string;
  type: string;
  samples: Array<{ name: string; labels: Record<string, string>; value: number }>;
}

/**
 * A strict reader of the text format: every line is a HELP, a TYPE (before its samples) or a
 * sample `name{label="value",...} number`; names and label names match the grammar, label
 * values are properly escaped, and each sample belongs to the family declared above it.
 */
function parseExposition(text: string): Map<string, ParsedFamily> {
  const families = new Map<string, ParsedFamily>();
  const name = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"/y;
  const value = /^(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|NaN|[+-]Inf)$/;
  let current: string | undefined;
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    const help = new RegExp(`^# HELP (${name}) (.*)$`).exec(line);
    if (help) {
      expect(families.has(help[1]!)).toBe(false);
      families.set(help[1]!, { help: help[2]!, type: 'untyped', samples: [] });
      current = help[1];
      continue;
    }
    const type = new RegExp(`^# TYPE (${name}) (counter|gauge|summary|histogram|untyped)$`).exec(line);
    if (type) {
      expect(type[1]).toBe(current);
      families.get(type[1]!)!.type = type[2]!;
      continue;
    }
    const sample = new RegExp(`^(${name})(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    if (!sample) throw new Error(`not a valid exposition line: ${JSON.stringify(line)}`);
    const [, sampleName, labelText, raw] = sample;
    expect(raw).toMatch(value);
    const base = families.get(current!)!;
    const suffixOk =
      sampleName === current ||
      (base.type === 'summary' && [`${current}_sum`, `${current}_count`].includes(sampleName!)) ||
      (base.type === 'histogram' &&
        [`${current}_bucket`, `${current}_sum`, `${current}_count`].includes(sampleName!));
    expect(suffixOk, `${sampleName} under ${current}`).toBe(true);
    const labels: Record<string, string> = {};
    if (labelText) {
      labelRe.lastIndex = 0;
      let rest = labelText;
      while (rest.length > 0) {
        labelRe.lastIndex = 0;
        const m = labelRe.exec(rest);
        if (!m) throw new Error(`bad labels in ${line}`);
        labels[m[1]!] = m[2]!;
        rest = rest.slice(m[0].length);
        if (rest.startsWith(',')) rest = rest.slice(1);
      }
    }
    base.samples.push({ name: sampleName!, labels, value: Number(raw === '+Inf' ? Infinity : raw) });
  }
  return families;
}

const promtool = systemTool(PROMTOOL, ['--version'], 'prometheus');

describe('live telemetry', () => {
  const dir = scratchDir('fleetbench-telemetry-');

  it('serves Prometheus text format 0.0.4 and takes OTLP/JSON spans into the trace', async () => {
    const { scenario } = resolveScenarioRef(
      'S2-T1-5',
      [
        'clock=real',
        'duration=3s',
        'polling.interval=1s',
        'github.latency={median: 2ms, p95: 5ms}',
        'sessions.spawn-time=100ms',
      ].map(parseOverride),
    );
    let endpoints: { metrics?: string; otlp?: string } = {};
    let scraped: { text: string; type: string | null } | undefined;
    let posted: Response | undefined;
    let spanStartMs = 0;
    const progress: string[] = [];
    const { outcome } = await executeRun(planScenario(scenario, dir), {
      attach: async (run) => {
        const attachment = await liveTelemetry({
          metricsPort: 0,
          otlpPort: 0,
          progress: true,
          progressEveryMs: 500,
          progressOut: { write: (t: string) => progress.push(t) > 0, isTTY: false },
          onListening: (e) => {
            endpoints = e;
          },
        })(run);
        // A second in: scrape, and export one span from "the system under test". The run's
        // end waits for this (close below), however slow the machine.
        const work = new Promise<void>((resolve) => setTimeout(resolve, 1_000)).then(async () => {
          const res = await fetch(endpoints.metrics!);
          scraped = { text: await res.text(), type: res.headers.get('content-type') };
          spanStartMs = Date.now() - 200;
          const ns = (ms: number) => `${BigInt(ms) * 1_000_000n}`;
          posted = await fetch(endpoints.otlp!, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              resourceSpans: [
                {
                  resource: {
                    attributes: [{ key: 'service.name', value: { stringValue: 'my-orchestrator' } }],
                  },
                  scopeSpans: [
                    {
                      spans: [
                        {
                          name: 'provider.session.load',
                          startTimeUnixNano: ns(spanStartMs),
                          endTimeUnixNano: ns(spanStartMs + 150),
                          attributes: [
                            { key: 'session.id', value: { stringValue: 's-0001' } },
                            { key: 'adapter', value: { stringValue: 'codex' } },
                          ],
                        },
                      ],
                    },
                  ],
                },
              ],
            }),
          });
        });
        return {
          close: async () => {
            await work;
            await attachment.close();
          },
        };
      },
    });
    expect(outcome.reason).toBe('completed');

    expect(scraped?.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    const families = parseExposition(scraped!.text);
    const sessions = families.get('fleetbench_sessions')!;
    expect(sessions.type).toBe('gauge');
    expect(sessions.samples.map((s) => s.labels.state).sort()).toEqual([
      'closed',
      'merged',
      'pr_open',
      'review',
      'spawning',
      'working',
    ]);
    expect(sessions.samples.reduce((a, s) => a + s.value, 0)).toBe(5);
    expect(families.get('fleetbench_inflight_calls')!.samples).toHaveLength(1);
    const quota = families.get('fleetbench_quota_remaining')!;
    expect(quota.samples.find((s) => s.labels.resource === 'core')!.value).toBeLessThan(5000);
    const calls = families.get('fleetbench_api_calls_total')!;
    expect(calls.type).toBe('counter');
    expect(calls.samples.find((s) => s.labels.status === '200')!.value).toBeGreaterThan(0);
    expect(calls.samples.every((s) => ['core', 'graphql', 'search'].includes(s.labels.resource!))).toBe(true);
    const lag = families.get('fleetbench_schedule_lag_seconds')!;
    expect(lag.type).toBe('histogram');
    expect(lag.samples.find((s) => s.name.endsWith('_count'))!.value).toBe(5);
    expect(lag.samples.find((s) => s.labels.le === '+Inf')!.value).toBe(5);
    const latency = families.get('fleetbench_api_call_duration_seconds')!;
    expect(latency.type).toBe('histogram');
    const core = latency.samples.filter((s) => s.labels.resource === 'core' && s.name.endsWith('_bucket'));
    // Cumulative buckets, ending in +Inf = the count.
    expect(core.map((s) => s.value)).toEqual([...core.map((s) => s.value)].sort((a, b) => a - b));
    expect(core.at(-1)!.value).toBe(
      latency.samples.find((s) => s.labels.resource === 'core' && s.name.endsWith('_count'))!.value,
    );
    expect(families.get('fleetbench_trace_value')!.samples.some((s) => s.labels.name === 'sessions')).toBe(
      true,
    );
    expect(families.get('fleetbench_run_finished')!.samples[0]!.value).toBe(0);
    if (!promtool.skip) {
      promtool.require();
      expect(promtoolCheck(scraped!.text)).toEqual({ code: 0, problems: '' });
    }

    expect(posted?.status).toBe(200);
    const { records, stats } = await readTrace(outcome.tracePath);
    expect(stats.footer?.reason).toBe('completed');
    const [load] = spans(records, 'provider.session.load');
    expect(load).toBeDefined();
    expect(load!.session).toBe('s-0001');
    expect(load!.labels).toMatchObject({ adapter: 'codex', service: 'my-orchestrator' });
    expect(load!.dur).toBeCloseTo(150, 3);
    // Placed on the run's clock: its wall start minus the run's epoch.
    expect(load!.t).toBeCloseTo(spanStartMs - stats.header!.epochMs, 0);

    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.at(-1)).toMatch(
      /^0:0\d\/0:03 · sessions .*pr_open 5.* · calls [\d.]+\/s \(\d+\) · quota core [\d,]+\/5,000/,
    );
    // Closed with the run.
    await expect(fetch(endpoints.metrics!)).rejects.toThrow();
  });

  it('refuses bodies it cannot read with the OTLP error shape', async () => {
    const { scenario } = resolveScenarioRef('S2-T1-1', ['clock=real', 'duration=1500ms'].map(parseOverride));
    const answers: Array<{ status: number; body: string }> = [];
    await executeRun(planScenario(scenario, join(dir, 'bad')), {
      attach: async (run) => {
        let url = '';
        const attachment = await liveTelemetry({
          otlpPort: 0,
          onListening: (e) => {
            url = e.otlp!;
          },
        })(run);
        for (const [type, body] of [
          ['text/plain', 'x'],
          ['application/json', '{"resourceSpans": "nope"}'],
          ['application/json', '{not json'],
        ]) {
          const res = await fetch(url, { method: 'POST', headers: { 'content-type': type! }, body });
          answers.push({ status: res.status, body: await res.text() });
        }
        return attachment;
      },
    });
    expect(answers.map((a) => a.status)).toEqual([415, 400, 400]);
    expect(JSON.parse(answers[1]!.body).message).toMatch(/resourceSpans/);
  });
});
