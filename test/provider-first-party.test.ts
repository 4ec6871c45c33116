/**
 * Anthropic's own endpoints (docs/provider-emulator.md, "Anthropic's own endpoints"): the requests
 * Claude Code makes to api.anthropic.com at every start that are not model requests, asked of the
 * real emulator over HTTP with fetch as Claude Code 2.1.328 sends them (`claude-code/V`,
 * `x-api-key`), then the analysis of the trace it wrote beside a world's spawn records: attributed
 * to the spawn whose key they carry, counted apart from the model requests (never "outside the
 * launchers"), left out of agent_boot.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createAnalyzer } from '../src/analyze/analyzer.ts';
import { type Analysis, analysisSchema } from '../src/analyze/schema.ts';
import { PROVIDER_LIMITS } from '../src/base/limits.ts';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/real.ts';
import { ProviderEmulator, startProviderServer } from '../src/provider/index.ts';
import { reporters, runSummarySections } from '../src/report/index.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { spawned, worldStarted } from './helpers/edges-trace.ts';

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** An emulator that knows the world's key of spawn a1, as a world's `resolveKey` does. */
async function serve() {
  const trace = new MemorySink();
  const emulator = new ProviderEmulator({
    clock: new RealClock(),
    rng: new Rng(7),
    trace,
    resolveKey: (key) => (key === 'fbw-t-15' ? { labels: { spawn: 'a1', agent: 'claude' } } : undefined),
  });
  const server = await startProviderServer({ emulator });
  servers.push(server);
  return { emulator, trace, url: server.url };
}

/** A GET as Claude Code sends it to Anthropic's own endpoints (key optional). */
async function get(url: string, path: string, key?: string) {
  const response = await fetch(`${url}${path}`, {
    headers: {
      accept: 'application/json, text/plain, */*',
      'user-agent': 'claude-code/2.1.328',
      'cache-control': 'no-cache',
      ...(key === undefined ? {} : { 'x-api-key': key }),
    },
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A model request of the same key: one text turn of Claude Code. */
async function message(url: string, key: string) {
  const response = await fetch(`${url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'user-agent': 'claude-cli/2.1.328 (external, sdk-cli)',
      'x-api-key': key,
    },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 1000,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  });
  await response.text();
  return response.status;
}

type Span = BodyRecord & { labels: Record<string, string>; data: Record<string, unknown> };
const requestsOf = (trace: MemorySink) =>
  trace.records.filter((r) => r.kind === 'span' && r.name === 'provider.request') as Span[];

function analyse(records: readonly BodyRecord[]): Analysis {
  const analyzer = createAnalyzer();
  for (const r of [...records].sort((a, b) => a.t - b.t)) analyzer.add(r);
  const analysis = analyzer.finish();
  expect(analysisSchema.parse(analysis)).toEqual(analysis);
  return analysis;
}

/** The end-of-run summary's text, where the edges' attribution lines are. */
const summary = (a: Analysis) =>
  reporters.terminal().render({
    title: 'run',
    document: a,
    sections: () =>
      runSummarySections(a, {
        outcome: { reason: 'completed', sessionsStarted: 0, sessionsDropped: 0, tracePath: 't', wallMs: 1 },
        scorecard: false,
      }),
  });

describe("provider emulator: Anthropic's own endpoints", () => {
  it('answers the policy (no restriction) and the settings (404), recorded as first-party with the key’s spawn', async () => {
    const { url, trace, emulator } = await serve();
    const settings = await get(url, '/api/claude_code/settings', 'fbw-t-15');
    expect(settings.status).toBe(404);
    expect(settings.body).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const policy = await get(url, '/api/claude_code/policy_limits', 'fbw-t-15');
    expect(policy).toEqual({ status: 200, body: { restrictions: {} } });
    // Without a key (a client that sends none), still answered, attributed to no spawn.
    expect((await get(url, '/api/claude_code/policy_limits')).status).toBe(200);
    // Any other path under /api/ is Anthropic's too: a 404, recorded as first-party, its path cut.
    const long = `/api/${'x'.repeat(10_000)}`;
    expect((await get(url, long, 'fbw-t-15')).status).toBe(404);

    const records = requestsOf(trace);
    expect(records.map((r) => [r.labels, r.data.path])).toEqual([
      [
        { spawn: 'a1', agent: 'claude', api: 'first-party', cli: 'claude', status: '404' },
        '/api/claude_code/settings',
      ],
      [
        { spawn: 'a1', agent: 'claude', api: 'first-party', cli: 'claude', status: '200' },
        '/api/claude_code/policy_limits',
      ],
      [{ api: 'first-party', cli: 'claude', status: '200' }, '/api/claude_code/policy_limits'],
      [
        { spawn: 'a1', agent: 'claude', api: 'first-party', cli: 'claude', status: '404' },
        long.slice(0, PROVIDER_LIMITS.maxFirstPartyPathChars),
      ],
    ]);
    // No tokens counted, and the CLI's version read from its claude-code/V user agent.
    expect(records.every((r) => r.data.tokensIn === undefined && r.data.cliVersion === '2.1.328')).toBe(true);
    expect(emulator.snapshot()).toMatchObject({ inputTokens: 0, outputTokens: 0, byCli: { claude: 4 } });
  });

  it('the edges count them apart from the model requests, on the spawn whose key they carry', async () => {
    const { url, trace, emulator } = await serve();
    const spawnAt = emulator.clock.now();
    await get(url, '/api/claude_code/settings', 'fbw-t-15');
    await get(url, '/api/claude_code/policy_limits', 'fbw-t-15');
    await get(url, '/api/claude_code/policy_limits');
    expect(await message(url, 'fbw-t-15')).toBe(200);
    const model = requestsOf(trace).find((r) => r.labels.api === 'messages');
    expect(model?.labels).toMatchObject({ spawn: 'a1', status: '200' });

    const a = analyse([worldStarted(0), spawned(spawnAt, 'a1', 'claude'), ...trace.records]);
    const e = a.edges!;
    // One model request: the spawn's. The three others are no model requests, none outside.
    expect(e.attribution.model).toMatchObject({
      requests: 1,
      controlPlane: { requests: 1 },
      outside: { requests: 0 },
      unidentified: { requests: 0 },
    });
    expect(e.attribution.firstParty).toEqual({
      requests: 3,
      agents: 2,
      outside: 1,
      byPath: { '/api/claude_code/policy_limits': 2, '/api/claude_code/settings': 1 },
    });
    const row = e.spawns.list[0]!;
    expect(row).toMatchObject({ spawn: 'a1', firstParty: 2, model: { requests: 1 } });
    // agent_boot runs to the first model request, not to the settings asked before it.
    expect(row.firstRequestAtMs).toBeCloseTo(model!.t, 3);
    expect(a.speed?.metrics.agent_boot?.samples).toBe(1);

    const text = summary(a);
    expect(text).toMatch(/model requests\.*: 1 · sessions 0 .* outside the launchers 0/);
    expect(text).toMatch(
      /vendor endpoints\.*: 3 \(not model requests\) · agents 2 · outside the launchers 1 · \/api\/claude_code\/policy_limits 2, \/api\/claude_code\/settings 1/,
    );
  });
});

describe("edges: Anthropic's own endpoints, bounds (docs/limits.md)", () => {
  it('names at most 100 paths and counts the rest as (other)', () => {
    const records: BodyRecord[] = [worldStarted(0), spawned(1, 'a1', 'claude')];
    for (let i = 0; i < 150; i++)
      records.push({
        kind: 'span',
        name: 'provider.request',
        t: 10 + i,
        dur: 1,
        outcome: 'error',
        labels: { spawn: 'a1', agent: 'claude', api: 'first-party', cli: 'claude', status: '404' },
        data: {
          requestId: `req_${i}`,
          bytesIn: 0,
          path: `/api/p${String(i).padStart(3, '0')}`,
          outcome: 'complete',
        },
      });
    const a = analyse(records);
    const f = a.edges!.attribution.firstParty!;
    expect(f).toMatchObject({ requests: 150, agents: 150, outside: 0 });
    expect(Object.keys(f.byPath)).toHaveLength(101);
    expect(f.byPath['(other)']).toBe(50);
    expect(f.byPath['/api/p099']).toBe(1);
    expect(f.byPath['/api/p100']).toBeUndefined();
    // The report's line names five of them and counts the rest.
    expect(summary(a)).toMatch(/vendor endpoints\.*: 150 .* \/api\/p003 1 … 96 more paths\n/);
  });
});
