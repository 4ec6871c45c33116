/**
 * A `module` target: the smallest orchestrator worth measuring, written against fleetbench's
 * public Target interface. Run it with
 *
 *   fleetbench run S2-T1-5 --target module:examples/module-target.ts
 *   fleetbench run S2-T1-5 --target module:examples/module-target.ts --clock real --set duration=1m
 *
 * Each session spawns (a fixed 2 s), then a poll loop asks GitHub, every `polling.interval`,
 * whether the session's branch has an open pull request: one un-cached list call per session
 * per cycle, the naive design the reference control plane's `guarded` strategy improves on.
 * Everything runs on `context.clock` (timers, sleeps), so the same module runs in virtual time
 * (seeded, instant) and in real time; its GitHub calls go through `context.github.transport`
 * with the attribution headers, so the trace attributes every call to a session.
 */
import type { SessionSpec, SessionState, SessionStateListener, Target, TargetContext } from 'fleetbench';
import { ATTRIBUTION_HEADERS } from 'fleetbench';

interface Session {
  spec: SessionSpec;
  state: SessionState;
}

export default function createTarget(context: TargetContext): Target {
  const { clock, trace, github, scenario } = context;
  const sessions = new Map<string, Session>();
  const listeners: SessionStateListener[] = [];
  let running = false;
  let cycle = 0;

  const setState = (session: Session, to: SessionState) => {
    const from = session.state;
    if (from === to) return;
    session.state = to;
    trace.write({
      kind: 'event',
      name: 'session.state',
      t: clock.now(),
      session: session.spec.id,
      labels: { from, to },
    });
    for (const listener of listeners) listener(session.spec.id, from, to);
  };

  const pollOnce = async () => {
    const started = clock.now();
    const id = cycle++;
    const waiting = [...sessions.values()].filter((s) => s.state === 'working');
    for (const session of waiting) {
      const [owner] = session.spec.repo.split('/');
      const res = await github.transport.request({
        method: 'GET',
        path: `/repos/${session.spec.repo}/pulls?state=open&head=${owner}:${encodeURIComponent(session.spec.branch)}`,
        headers: {
          authorization: `token ${github.token}`,
          [ATTRIBUTION_HEADERS.session]: session.spec.id,
          [ATTRIBUTION_HEADERS.source]: 'lifecycle',
          [ATTRIBUTION_HEADERS.op]: 'detect-pr',
          [ATTRIBUTION_HEADERS.cycle]: String(id),
        },
      });
      if (res.status === 200 && (JSON.parse(res.body) as unknown[]).length > 0) setState(session, 'pr_open');
    }
    trace.write({
      kind: 'span',
      name: 'poll.cycle',
      t: started,
      dur: clock.now() - started,
      labels: { strategy: 'module-example' },
      data: { cycle: id, sessions: waiting.length, calls: waiting.length },
    });
  };

  const loop = async () => {
    while (running) {
      await pollOnce();
      await clock.sleep(scenario.polling.intervalMs);
    }
  };

  return {
    name: 'module-example',
    async start() {
      running = true;
      void loop();
    },
    async stop() {
      running = false;
    },
    async createSession(spec) {
      const session: Session = { spec, state: 'spawning' };
      sessions.set(spec.id, session);
      trace.write({
        kind: 'event',
        name: 'session.state',
        t: clock.now(),
        session: spec.id,
        labels: { from: 'none', to: 'spawning' },
      });
      for (const listener of listeners) listener(spec.id, 'none', 'spawning');
      clock.setTimeout(() => setState(session, 'working'), 2_000);
    },
    async sessionCounts() {
      const counts: Partial<Record<SessionState, number>> = {};
      for (const s of sessions.values()) counts[s.state] = (counts[s.state] ?? 0) + 1;
      return counts;
    },
    onSessionState(listener) {
      listeners.push(listener);
    },
  };
}
