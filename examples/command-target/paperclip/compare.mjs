// The same moments read from a command-target trace and a `--target paperclip` trace with one
// definition each, medians pooled over the sessions of each side (docs/calibration.md, "Paperclip
// through the command target"):
//   node compare.mjs COMMAND_TRACE[,…] PAPERCLIP_TRACE[,…]
// created → agent process → first model request → first streamed output, before the kill; ready →
// the retried agent's process → its first model request, after it. The command trace names an
// agent's process by `agent.spawn` (its session by `agent.session`); the paperclip trace by the
// end of each `agent.launch` span (Paperclip's `processStartedAt`).
import { readFileSync } from 'node:fs';

function moments(path) {
  const records = readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  const kill = Math.min(...records.filter((r) => r.name === 'controlplane.restart').map((r) => r.t));
  const ready = Math.min(
    ...records.filter((r) => r.name === 'controlplane.ready' && r.t > kill).map((r) => r.t),
  );
  const sessionOf = new Map(
    records.filter((r) => r.name === 'agent.session').map((r) => [r.labels.spawn, r.session]),
  );
  const hasLaunch = records.some((r) => r.name === 'agent.launch');
  const created = new Map();
  const spawn = new Map();
  const retry = new Map();
  const earliest = (map, key, t) => map.set(key, Math.min(map.get(key) ?? Infinity, t));
  for (const r of records) {
    if ((r.name === 'work.created' || r.name === 'run.created') && r.session && !created.has(r.session))
      created.set(r.session, r.t);
    if (r.name === 'agent.spawn' && sessionOf.has(r.labels.spawn))
      earliest(r.t < kill ? spawn : retry, sessionOf.get(r.labels.spawn), r.t);
    // The agent's process spawned: the end of Paperclip's `agent.launch` (a trace written before
    // 2026-12-06 has none, and its `provider.boot` ended there instead).
    const launch = r.name === 'agent.launch' || (r.name === 'provider.boot' && !hasLaunch);
    if (launch && r.session) earliest(r.labels.reason === 'start' ? spawn : retry, r.session, r.t + r.dur);
  }
  const request = new Map();
  const output = new Map();
  const retryRequest = new Map();
  for (const r of records) {
    if (r.name !== 'provider.request') continue;
    const session = r.labels?.spawn !== undefined ? sessionOf.get(r.labels.spawn) : r.session;
    if (session === undefined) continue;
    if (r.t < kill) {
      earliest(request, session, r.t);
      if (typeof r.data?.ttftMs === 'number') earliest(output, session, r.t + r.data.ttftMs);
    } else if (retry.has(session) && r.t >= retry.get(session)) earliest(retryRequest, session, r.t);
  }
  const each = (from, to) =>
    [...created.keys()]
      .filter((s) => from(s) !== undefined && to(s) !== undefined)
      .map((s) => to(s) - from(s));
  return {
    'created → agent process started': each(
      (s) => created.get(s),
      (s) => spawn.get(s),
    ),
    'agent process → first model request': each(
      (s) => spawn.get(s),
      (s) => request.get(s),
    ),
    'created → first streamed model output': each(
      (s) => created.get(s),
      (s) => output.get(s),
    ),
    "ready → retried agent's process": each(
      () => ready,
      (s) => retry.get(s),
    ),
    "retried agent's process → first request": each(
      (s) => retry.get(s),
      (s) => retryRequest.get(s),
    ),
  };
}

function pooled(paths) {
  const all = {};
  for (const path of paths.split(','))
    for (const [name, values] of Object.entries(moments(path))) all[name] = [...(all[name] ?? []), ...values];
  return all;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

const [commandTraces, paperclipTraces] = process.argv.slice(2);
if (!commandTraces || !paperclipTraces) {
  console.error('usage: node compare.mjs COMMAND_TRACE[,…] PAPERCLIP_TRACE[,…]');
  process.exit(2);
}
const command = pooled(commandTraces);
const paperclip = pooled(paperclipTraces);
console.log('| from → to | command | paperclip | difference |\n| --- | --- | --- | --- |');
for (const name of Object.keys(command)) {
  const a = median(command[name]) / 1000;
  const b = median(paperclip[name]) / 1000;
  const signed = (x, digits) => (x < 0 ? '−' : '+') + Math.abs(x).toFixed(digits);
  console.log(
    `| ${name} | ${a.toFixed(2)} s (${command[name].length}) | ${b.toFixed(2)} s (${paperclip[name].length}) | ${signed(a - b, 2)} s (${signed(((a - b) / b) * 100, 0)} %) |`,
  );
}
