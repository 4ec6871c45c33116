/**
 * A trace as an observer outside its control plane would have it (test/model-infer.test.ts): no
 * poll-cycle ids or phases on its calls, no `poll.cycle` spans or skipped ticks, no session states,
 * and (with `unattributed`) a share of its calls with no session. The footer's counts are kept true.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

export function stripTrace(from: string, to: string, options: { unattributed?: number } = {}): void {
  const raw = readFileSync(from);
  const text = (from.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
  const counts = { api: 0, span: 0, event: 0, gauge: 0 };
  const kept: string[] = [];
  let sessionCalls = 0;
  const dropEvery = options.unattributed ? Math.round(1 / options.unattributed) : 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const r = JSON.parse(line) as Record<string, unknown> & { kind: string; name?: string };
    if (r.kind === 'span' && r.name === 'poll.cycle') continue;
    if (r.kind === 'event' && (r.name === 'poll.cycle.skipped' || r.name === 'session.state')) continue;
    if (r.kind === 'api') {
      delete r.cycle;
      delete r.phase;
      if (r.session !== undefined && dropEvery > 0 && sessionCalls++ % dropEvery === 0) delete r.session;
    }
    if (r.kind in counts) counts[r.kind as keyof typeof counts]++;
    kept.push(JSON.stringify(r.kind === 'end' ? { ...r, counts } : r));
  }
  writeFileSync(to, `${kept.join('\n')}\n`);
}

/** A trace's declared poll cycles (start, duration, calls), for comparing inferred ones against. */
export function declaredCycles(file: string): Array<{ t: number; dur: number; calls: number }> {
  const raw = readFileSync(file);
  const text = (file.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
  const cycles: Array<{ t: number; dur: number; calls: number }> = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"poll.cycle"')) continue;
    const r = JSON.parse(line) as {
      kind: string;
      name: string;
      t: number;
      dur: number;
      data?: { calls?: number };
    };
    if (r.kind === 'span' && r.name === 'poll.cycle')
      cycles.push({ t: r.t, dur: r.dur, calls: r.data?.calls ?? -1 });
  }
  return cycles.sort((a, b) => a.t - b.t);
}
