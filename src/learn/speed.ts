/**
 * A speed profile learned from a trace's native-run records (docs/model.md#speed; the names are
 * those of docs/trace-format.md#native-runs-providers-and-restarts, which any target may write):
 * per adapter, how long a provider takes to boot cold, to start a warm process, to load a saved
 * session (at 1 MB, alone, and how concurrent loads slow it), what a replay after an unclean stop
 * adds, and how long after a turn is submitted its first activity comes; and the control plane's
 * own stages. The reference's native runs replay it in virtual time (`control-plane.model`),
 * which is how a real run's boot, first-activity and recovery distributions are carried to any
 * scale or fault sequence.
 */

import type { ModelSpeed, SpeedLatency } from '../model/format.ts';
import type { EventRecord, SpanRecord } from '../trace/schema.ts';

/** The provider's session-load model (src/reference/providers.ts): size factor at 1 MB is 1. */
const LOAD_REF_BYTES = 1_000_000;
const sizeFactor = (bytes: number) => 0.4 + (0.6 * bytes) / LOAD_REF_BYTES;

/** The first activity a user sees (docs/analysis.md#speed). */
function isFirstActivity(e: EventRecord): boolean {
  const type = e.labels?.type;
  const item = e.labels?.item;
  return (
    (type === 'item.delta' && (item === 'text' || item === 'reasoning')) ||
    (type === 'item.started' && (item === 'tool_call' || item === 'reasoning')) ||
    type === 'tool.execution.started'
  );
}

function latency(values: number[]): SpeedLatency | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  const round = (v: number) => Math.round(v * 10) / 10;
  return { p50: round(at(50)), p95: round(at(95)), samples: values.length };
}

const runOf = (r: { data?: Record<string, unknown> }) =>
  typeof r.data?.run === 'string' ? (r.data.run as string) : undefined;

/** Samples of one or more traces, by adapter; `finish` makes the profile. */
export class SpeedLearner {
  private readonly adapters = new Map<
    string,
    {
      bootCold: number[];
      bootWarmProcess: number[];
      warmBootsWithLoad: number;
      loads: Array<{ dur: number; bytes: number; concurrent: number; replay: boolean }>;
      firstActivity: { cold: number[]; warm: number[] };
    }
  >();
  private readonly stages = {
    claim: [] as number[],
    prepare: [] as number[],
    runtime: [] as number[],
    launch: [] as number[],
    dispatch: [] as number[],
    reattach: [] as number[],
    toBoot: [] as number[],
    toBootCold: [] as number[],
  };

  private adapter(name: string) {
    let a = this.adapters.get(name);
    if (!a) {
      a = {
        bootCold: [],
        bootWarmProcess: [],
        warmBootsWithLoad: 0,
        loads: [],
        firstActivity: { cold: [], warm: [] },
      };
      this.adapters.set(name, a);
    }
    return a;
  }

  /** One trace's spans and events, each list in time order. */
  add(spans: readonly SpanRecord[], events: readonly EventRecord[]): void {
    const loadsByRun = new Map<string, SpanRecord[]>();
    for (const s of spans)
      if (s.name === 'provider.session.load') {
        const run = runOf(s);
        if (run) {
          const list = loadsByRun.get(run);
          if (list) list.push(s);
          else loadsByRun.set(run, [s]);
        }
      }
    // A load after a hard restart or a crash replays an unclean transcript first.
    const restarts = events.filter((e) => e.name === 'controlplane.restart');
    const kindBefore = (t: number) => {
      let kind: unknown;
      for (const r of restarts) if (r.t <= t) kind = r.labels?.kind;
      return kind;
    };
    for (const s of spans) {
      const adapter = typeof s.labels?.adapter === 'string' ? s.labels.adapter : undefined;
      if (!adapter || s.outcome === 'error') continue;
      const a = this.adapter(adapter);
      const reason = s.labels?.reason;
      if (s.name === 'provider.boot' && reason === 'start') {
        if (s.labels?.start === 'cold') a.bootCold.push(s.dur);
        else if (s.labels?.start === 'warm') {
          const load = loadsByRun
            .get(runOf(s) ?? '')
            ?.find((l) => l.t >= s.t && l.t + l.dur <= s.t + s.dur + 1);
          // Without a load span inside it, the warm boot's load is part of the boot: all of it counts.
          a.bootWarmProcess.push(Math.max(0, s.dur - (load?.dur ?? 0)));
          if (load) a.warmBootsWithLoad++;
        }
      } else if (s.name === 'provider.session.load') {
        const bytes = Number(s.data?.sessionBytes ?? 0);
        const concurrent = Math.max(1, Number(s.data?.concurrentLoads ?? 1));
        const replay = reason === 'crash' || (reason === 'recovery' && kindBefore(s.t) === 'hard');
        a.loads.push({ dur: s.dur, bytes, concurrent, replay });
      } else if (reason === 'start' && s.name in this.stagesBySpan) {
        this.stages[this.stagesBySpan[s.name]!].push(s.dur);
      } else if (s.name === 'run.runner.attach') {
        this.stages.reattach.push(s.dur);
      }
    }
    // The start boot's end (or the turn's submission, without a boot) → first activity, each
    // run's first turn; run created → its boot; input received → run created.
    const bootOf = new Map<string, SpanRecord>();
    for (const s of spans)
      if (s.name === 'provider.boot' && s.labels?.reason === 'start') {
        const run = runOf(s);
        if (run && !bootOf.has(run)) bootOf.set(run, s);
      }
    const startOf = new Map<string, string>();
    const submitted = new Map<string, number>();
    const done = new Set<string>();
    const pendingInput = new Map<string, number>();
    for (const e of events) {
      const run = runOf(e);
      if (e.name === 'input.received' && e.session && e.data?.opens === 'run') {
        pendingInput.set(e.session, e.t);
      } else if (e.name === 'run.created' && run) {
        startOf.set(run, String(e.labels?.start ?? ''));
        const boot = bootOf.get(run);
        if (boot && boot.t >= e.t) {
          this.stages.toBoot.push(boot.t - e.t);
          if (e.labels?.start === 'cold') this.stages.toBootCold.push(boot.t - e.t);
        }
        const input = e.session ? pendingInput.get(e.session) : undefined;
        if (input !== undefined) {
          this.stages.dispatch.push(e.t - input);
          pendingInput.delete(e.session!);
        }
      } else if (e.name === 'provider.event' && run && !done.has(run)) {
        // The turn's submission, or its start where the provider reports no submission (Paperclip).
        const type = e.labels?.type;
        if ((type === 'turn.submitted' || type === 'turn.started') && !submitted.has(run))
          submitted.set(run, e.t);
        else if (submitted.has(run) && isFirstActivity(e)) {
          done.add(run);
          const start = startOf.get(run);
          const adapter = typeof e.labels?.adapter === 'string' ? e.labels.adapter : undefined;
          const boot = bootOf.get(run);
          // From the boot's end: what a provider does before its turn starts (Paperclip resumes the
          // session then) is part of its first activity's wait, as the reference's profile has it.
          const from = boot ? boot.t + boot.dur : submitted.get(run)!;
          if (adapter && (start === 'cold' || start === 'warm') && e.t >= from)
            this.adapter(adapter).firstActivity[start].push(e.t - from);
        }
      }
    }
  }

  private readonly stagesBySpan: Record<string, 'claim' | 'prepare' | 'runtime' | 'launch'> = {
    'run.claim': 'claim',
    'run.prepare': 'prepare',
    'run.runtime': 'runtime',
    'run.runner.launch': 'launch',
  };

  finish(): ModelSpeed | null {
    if (this.adapters.size === 0) return null;
    const adapters: ModelSpeed['adapters'] = {};
    for (const [name, a] of [...this.adapters].sort(([x], [y]) => (x < y ? -1 : 1))) {
      // Load at 1 MB alone, with the contention that makes the clean loads most alike.
      const clean = a.loads.filter((l) => !l.replay);
      let contention = 0;
      let best = Number.POSITIVE_INFINITY;
      for (let c = 0; c <= 3; c += 0.02) {
        const logs = clean.map((l) =>
          Math.log(Math.max(1, l.dur / (sizeFactor(l.bytes) * (1 + c * (l.concurrent - 1))))),
        );
        const mean = logs.reduce((x, y) => x + y, 0) / Math.max(1, logs.length);
        const variance = logs.reduce((x, y) => x + (y - mean) ** 2, 0);
        if (variance < best - 1e-9) {
          best = variance;
          contention = Math.round(c * 100) / 100;
        }
      }
      const normal = (l: (typeof a.loads)[number]) =>
        sizeFactor(l.bytes) * (1 + contention * (l.concurrent - 1));
      const base = latency(clean.map((l) => l.dur / normal(l)));
      const replays = a.loads
        .filter((l) => l.replay)
        .map((l) => Math.max(0, l.dur - (base?.p50 ?? 0) * normal(l)));
      adapters[name] = {
        bootCold: latency(a.bootCold),
        bootWarmProcess: latency(a.bootWarmProcess),
        load: base,
        loadContention: clean.length > 1 ? contention : null,
        replay: latency(replays),
        firstActivity: { cold: latency(a.firstActivity.cold), warm: latency(a.firstActivity.warm) },
        warmBootHoldsLoad: a.bootWarmProcess.length > 0 && a.warmBootsWithLoad === 0,
      };
    }
    const s = this.stages;
    return {
      adapters,
      controlPlane: {
        claim: latency(s.claim),
        prepare: latency(s.prepare),
        runtime: latency(s.runtime),
        launch: latency(s.launch),
        dispatch: latency(s.dispatch),
        reattach: latency(s.reattach),
        toBoot: latency(s.toBoot),
        // Apart only where a cold start's way differs (Paperclip prepares an agent's first run).
        ...(s.toBootCold.length > 0 ? { toBootCold: latency(s.toBootCold) } : {}),
      },
    };
  }
}
