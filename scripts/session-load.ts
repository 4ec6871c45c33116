/**
 * `npx tsx scripts/session-load.ts TRACE...`: each restart recovery of a run with real agents
 * (docs/calibration.md#real-agents-under-paperclip), one row per recovered run: which restart,
 * how many sessions resumed at once, how long the saved history was (the input tokens of the
 * recovered agent's first model request: what it resent), and the split of the recovery into
 * the control plane's share (ready → the agent's process started) and the provider's (the
 * real CLI starting and loading its session), then a summary by history size, and per restart
 * every run it cut (recovered, finished, never recovered) beside the split and the recovery
 * measured to the agent's first activity.
 */
import { analyzeFile } from '../src/analyze/index.ts';
import { readTrace } from '../src/trace/index.ts';
import type { EventRecord, SpanRecord } from '../src/trace/schema.ts';

interface Row {
  restart: number;
  kind: string;
  session: string;
  concurrent: number;
  historyTokens: number | undefined;
  controlPlaneMs: number;
  providerMs: number;
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};

for (const file of process.argv.slice(2)) {
  const { records } = await readTrace(file);
  const ready = records.filter(
    (r): r is EventRecord =>
      r.kind === 'event' && r.name === 'controlplane.ready' && r.labels?.reason !== 'start',
  );
  const loads = records.filter(
    (r): r is SpanRecord => r.kind === 'span' && r.name === 'provider.session.load',
  );
  const requests = records.filter((r): r is SpanRecord => r.kind === 'span' && r.name === 'provider.request');
  const rows: Row[] = [];
  for (const load of loads) {
    const restartIndex = ready.findLastIndex((r) => r.t <= load.t);
    const restart = ready[restartIndex];
    if (!restart || load.session === undefined) continue;
    const next = ready[restartIndex + 1]?.t ?? Number.POSITIVE_INFINITY;
    const sameRestart = loads.filter((other) => other.t >= restart.t && other.t < next);
    // Loads overlapping this one: how many agents resumed at once.
    const concurrent = sameRestart.filter(
      (other) => other.t < load.t + load.dur && other.t + other.dur > load.t,
    ).length;
    const first = requests.find((r) => r.session === load.session && r.t >= load.t);
    rows.push({
      restart: restartIndex + 1,
      kind: String(restart.labels?.reason ?? ''),
      session: load.session,
      concurrent,
      historyTokens: first?.data?.tokensIn as number | undefined,
      controlPlaneMs: load.t - restart.t,
      providerMs: load.dur,
    });
  }
  console.log(`\n${file}\n`);
  console.log(
    '| restart | kind | session | resuming at once | history (tokens) | control plane (s) | provider load (s) | provider share |',
  );
  console.log('|---:|---|---|---:|---:|---:|---:|---:|');
  for (const row of rows)
    console.log(
      `| ${row.restart} | ${row.kind} | ${row.session} | ${row.concurrent} | ${row.historyTokens ?? '–'} | ${(row.controlPlaneMs / 1000).toFixed(2)} | ${(row.providerMs / 1000).toFixed(2)} | ${((100 * row.providerMs) / (row.providerMs + row.controlPlaneMs)).toFixed(0)} % |`,
    );
  // Every wake, restart or not: the agent's process spawned → its first event (the CLI starting
  // and, warm, loading its saved session), against the history it then resent.
  const attempts = records.filter(
    (r): r is SpanRecord => r.kind === 'span' && r.name === 'paperclip.attempt',
  );
  const buckets = new Map<number, number[]>();
  for (const attempt of attempts) {
    const data = attempt.data as { processStartedAtMs?: number; firstEventAtMs?: number } | undefined;
    if (data?.processStartedAtMs === undefined || data.firstEventAtMs === undefined) continue;
    const first = requests.find((r) => r.session === attempt.session && r.t >= data.processStartedAtMs!);
    const tokens = first?.data?.tokensIn as number | undefined;
    if (tokens === undefined) continue;
    const bucket = Math.floor(tokens / 20_000) * 20_000;
    buckets.set(bucket, [
      ...(buckets.get(bucket) ?? []),
      (data.firstEventAtMs - data.processStartedAtMs) / 1000,
    ]);
  }
  console.log('\n| history resent (tokens) | wakes | agent spawned → first event p50 / p95 (s) |');
  console.log('|---|---:|---:|');
  for (const [bucket, values] of [...buckets].sort((a, b) => a[0] - b[0]))
    console.log(
      `| ${bucket}-${bucket + 20_000} | ${values.length} | ${quantile(values, 0.5).toFixed(2)} / ${quantile(values, 0.95).toFixed(2)} |`,
    );
  const byRestart = new Map<number, Row[]>();
  for (const row of rows) byRestart.set(row.restart, [...(byRestart.get(row.restart) ?? []), row]);
  // Every run each restart cut, accounted for beside the split (the split is of the recovered
  // ones only), and the recovery measured on to the agent's first activity (its model requests,
  // prefill and retries of a provider fault included), from the analysis.
  const { analysis } = await analyzeFile(file, { threads: 1 });
  const speed = analysis.speed;
  console.log(
    '\n| restart | cut | recovered | finished | never recovered | history p50 (tokens) | provider load p50 / max (s) | control plane p50 (s) | provider share p50 | to first activity p50 (s) | provider to first activity p50 (s) | its share p50 | model requests · retries |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [index, cut] of (speed?.restarts ?? []).entries()) {
    const restart = index + 1;
    const group = byRestart.get(restart) ?? [];
    const runs = cut.runs;
    const history = group.flatMap((row) => (row.historyTokens === undefined ? [] : [row.historyTokens]));
    const provider = group.map((row) => row.providerMs / 1000);
    const control = group.map((row) => row.controlPlaneMs / 1000);
    const share = group.map((row) => row.providerMs / (row.providerMs + row.controlPlaneMs));
    const toActivity = (speed?.recoveries ?? []).filter(
      (r) => r.killAtMs === cut.killAtMs && typeof r.toActivityMs === 'number',
    );
    const full = toActivity.map((r) => r.toActivityMs! / 1000);
    const part = toActivity.map((r) => r.providerToActivityMs! / 1000);
    const partShare = toActivity.map((r) =>
      r.toActivityMs! > 0 ? r.providerToActivityMs! / r.toActivityMs! : 0,
    );
    const requests = toActivity.reduce((n, r) => n + (r.modelRequests?.count ?? 0), 0);
    const retries = toActivity.reduce((n, r) => n + (r.modelRequests?.retries ?? 0), 0);
    const s2 = (xs: number[]) => (xs.length === 0 ? '–' : quantile(xs, 0.5).toFixed(2));
    console.log(
      `| ${restart} | ${runs?.cut ?? '–'} | ${runs?.recovered ?? group.length} | ${runs?.finished ?? '–'} | ${runs?.unrecovered ?? '–'} | ${history.length > 0 ? quantile(history, 0.5) : '–'} | ${provider.length > 0 ? `${s2(provider)} / ${Math.max(...provider).toFixed(2)}` : '–'} | ${s2(control)} | ${share.length > 0 ? `${(100 * quantile(share, 0.5)).toFixed(0)} %` : '–'} | ${s2(full)} | ${s2(part)} | ${partShare.length > 0 ? `${(100 * quantile(partShare, 0.5)).toFixed(0)} %` : '–'} | ${requests} · ${retries} |`,
    );
  }
}
